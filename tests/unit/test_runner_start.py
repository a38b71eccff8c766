"""h2lab.runner.start: what every run writes before any lab (experiment.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from h2lab.artifacts import EXPERIMENT_FILE
from h2lab.results import TrialRecord
from h2lab.runner.matrix import TrialSpec, expand
from h2lab.runner.start import listed_levels, rekey_conf_paths, write_meta
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
    exp = folder / "exp.toml"
    exp.write_text(
        'name = "moved"\n[factors]\nprotocol = ["h2s"]\nnetwork = ["cable"]\n'
        'page = ["synthetic:n=2"]\nserver = ["nginx:conf=frag.conf"]\n'
    )
    return load_experiment(exp, checks=NO_CHECKS)


def _stored(t: TrialSpec, key: str, server: str, attempt: int = 1) -> TrialRecord:
    return record(
        "b|h2s",
        trial_key=key,
        experiment=t.experiment,
        cell=t.cell.replace("server", server),
        attempt=attempt,
        config={"server": server, "protocol": "h2s"},
    )


def test_a_store_keyed_by_the_conf_files_path_is_rekeyed_by_content(tmp_path: Path) -> None:
    (t,) = expand(_conf_experiment(tmp_path))
    absolute = f"nginx:conf={tmp_path / 'frag.conf'}"
    assert t.factors.server == absolute  # what the server reads
    assert re.fullmatch(r"nginx:conf=frag\.conf@sha256:[0-9a-f]{12}", str(t.cell["server"]))
    assert str(tmp_path) not in t.key and t.key_by_conf_path != t.key
    out = tmp_path / "out"
    store = Store(out)
    try:  # as h2lab 0.8 stored it: two attempts, the first failed, with their artifacts
        store.add_trial(_stored(t, t.key_by_conf_path, absolute))
        store.add_trial(_stored(t, t.key_by_conf_path, absolute, attempt=2))
        store.add_trial(_stored(t, "other|h2s", "nginx"))
        store.artifacts_dir(t.key_by_conf_path, 2).mkdir(parents=True)
        (store.artifacts_dir(t.key_by_conf_path, 2) / "page.har").write_text("{}")
        assert rekey_conf_paths(store, t.experiment, [t]) == 2
        assert store.done_keys(t.experiment) == {t.key, "other|h2s"}
        rows = store.trials()
        assert {r.cell["server"] for r in rows} == {t.cell["server"], "nginx"}
        assert [r.config["server"] for r in rows if r.trial_key == t.key] == [t.cell["server"]] * 2
        assert (store.artifacts_dir(t.key, 2) / "page.har").read_text() == "{}"
        assert not store.artifacts_dir(t.key_by_conf_path, 2).exists()
        assert rekey_conf_paths(store, t.experiment, [t]) == 0  # done once
    finally:
        store.close()


def test_an_edited_fragment_is_another_configuration(tmp_path: Path) -> None:
    before = expand(_conf_experiment(tmp_path))[0].key
    (tmp_path / "frag.conf").write_text("add_header X-B b;\n")
    options._digest.cache_clear()  # a new process reads the file anew
    (after,) = expand(_conf_experiment(tmp_path))
    assert before != after.key
