"""h2lab.runner.start: what every run writes before any lab (experiment.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from h2lab.artifacts import EXPERIMENT_FILE
from h2lab.results import TrialRecord
from h2lab.runner.matrix import TrialSpec, expand
from h2lab.runner.start import listed_levels, rekey_paths, write_meta
from h2lab.spec import options
from h2lab.spec.experiment import Experiment, Factors, load_experiment
from h2lab.spec.factors import NO_CHECKS
from h2lab.spec.network import parse_network
from h2lab.store import Store
from tests.unit.test_store_sqlite import record


def _experiment(**settings: object) -> Experiment:
    factors = Factors.of(
        protocol=("h2s",), page=("synthetic:n=2",), network=(parse_network("cable"),)
    )
    return Experiment(name="meta", factors=factors, **settings)  # type: ignore[arg-type]


def test_experiment_json_says_what_every_trial_captured(tmp_path: Path) -> None:
    write_meta(tmp_path, _experiment(capture=("pcap",)), None, 2)
    meta = json.loads((tmp_path / EXPERIMENT_FILE).read_text())
    assert (meta["capture"], meta["trials"]) == (["pcap"], 2)
    write_meta(tmp_path, _experiment(), None, 2)
    assert json.loads((tmp_path / EXPERIMENT_FILE).read_text())["capture"] == []


def test_experiment_json_lists_each_varied_factors_levels_in_the_files_order() -> None:
    factors = Factors.of(
        protocol=("h3",),
        page=("synthetic:n=2",),
        network=(parse_network("cable"),),
        server=("origin", "caddy", "nginx@1.26"),
    )
    exp = Experiment(name="servers", factors=factors)
    assert listed_levels(exp) == {"server": ["origin", "caddy", "nginx@1.26"]}


def _conf_experiment(folder: Path) -> Experiment:
    if not (folder / "frag.conf").exists():
        (folder / "frag.conf").write_text("add_header X-A a;\n")
    if not (folder / "site.har").exists():
        (folder / "site.har").write_text('{"log": {"entries": []}}\n')
    exp = folder / "exp.toml"
    exp.write_text(
        'name = "moved"\n[factors]\nprotocol = ["h2s"]\nnetwork = ["cable"]\n'
        'page = ["har:site.har"]\nserver = ["nginx:conf=frag.conf"]\n'
    )
    return load_experiment(exp, checks=NO_CHECKS)


def _stored(t: TrialSpec, key: str, server: str, page: str, attempt: int = 1) -> TrialRecord:
    cell = t.cell.replace("server", server).replace("page", page)
    return record(
        "b|h2s",
        trial_key=key,
        experiment=t.experiment,
        cell=cell,
        attempt=attempt,
        config={"server": server, "page": page, "protocol": "h2s"},
    )


def test_a_store_keyed_by_file_paths_is_rekeyed_by_content(tmp_path: Path) -> None:
    """h2lab 0.8 keyed a ``conf=`` and a page's file by their absolute paths, 0.9.0 the page's
    alone: both kinds of key move to the one by content, their rows and artifacts with them."""
    (t,) = expand(_conf_experiment(tmp_path))
    absolute, har = f"nginx:conf={tmp_path / 'frag.conf'}", f"har:{tmp_path / 'site.har'}"
    assert (t.factors.server, t.factors.page) == (absolute, har)  # what the run reads
    assert re.fullmatch(r"nginx:conf=frag\.conf@sha256:[0-9a-f]{12}", str(t.cell["server"]))
    assert re.fullmatch(r"har:site\.har@sha256:[0-9a-f]{12}", str(t.cell["page"]))
    assert str(tmp_path) not in t.key
    old_08, old_09 = t.keys_by_path
    assert str(tmp_path / "frag.conf") in old_08 and str(tmp_path / "site.har") in old_09
    out = tmp_path / "out"
    store = Store(out)
    try:  # as 0.8 stored it: two attempts, the first failed, with their artifacts; and 0.9.0
        store.add_trial(_stored(t, old_08, absolute, har))
        store.add_trial(_stored(t, old_08, absolute, har, attempt=2))
        store.add_trial(_stored(t, old_09, str(t.cell["server"]), har, attempt=3))
        store.add_trial(_stored(t, "other|h2s", "nginx", "synthetic:n=2"))
        store.artifacts_dir(old_08, 2).mkdir(parents=True)
        (store.artifacts_dir(old_08, 2) / "page.har").write_text("{}")
        assert rekey_paths(store, t.experiment, [t]) == 3
        assert store.done_keys(t.experiment) == {t.key, "other|h2s"}
        rows = [r for r in store.trials() if r.trial_key == t.key]
        assert {(r.cell["server"], r.cell["page"]) for r in rows} == {
            (t.cell["server"], t.cell["page"])}  # fmt: skip
        assert [r.config["page"] for r in rows] == [t.cell["page"]] * 3
        assert (store.artifacts_dir(t.key, 2) / "page.har").read_text() == "{}"
        assert not store.artifacts_dir(old_08, 2).exists()
        assert rekey_paths(store, t.experiment, [t]) == 0  # done once
    finally:
        store.close()


def test_a_page_is_keyed_by_its_files_content_wherever_it_lies(tmp_path: Path) -> None:
    """The same HAR in two folders: one stored level; edited: another; a folder page by its
    files (a link not followed), its entry kept; other levels as written."""
    from h2lab.spec.factors import portable_page

    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "x.har").write_text("{}")
    a, b = (portable_page(f"har:{tmp_path / n / 'x.har'}") for n in ("a", "b"))
    assert a == b and a.startswith("har:x.har@sha256:")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "x.har").write_text("{} ")
    assert portable_page(f"har:{tmp_path / 'c' / 'x.har'}") != a
    site = tmp_path / "site"
    (site / "css").mkdir(parents=True)
    (site / "index.html").write_text("<p>")
    (site / "css" / "a.css").write_text("p{}")
    (site / "elsewhere").symlink_to(tmp_path / "a")
    level = portable_page(f"dir:{site}#/index.html")
    assert re.fullmatch(r"dir:site@sha256:[0-9a-f]{12}#/index\.html", level)
    for kept in ("synthetic:n=2", "warc:relative.warc", f"warc:{tmp_path / 'none.warc'}", "abc123"):
        assert portable_page(kept) == kept


def test_an_edited_fragment_is_another_configuration(tmp_path: Path) -> None:
    before = expand(_conf_experiment(tmp_path))[0].key
    (tmp_path / "frag.conf").write_text("add_header X-B b;\n")
    options.content_digest.cache_clear()  # a new process reads the file anew
    (after,) = expand(_conf_experiment(tmp_path))
    assert before != after.key
