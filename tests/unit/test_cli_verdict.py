"""``h2lab verdict``: the experiment file it writes, and bad input refused in one line with
nothing written (the run itself: tests/integration/test_readme_recipe.py)."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from h2lab import cli
from h2lab.cli.verdict import (
    CLIENTS,
    FIRST_VISIT,
    FIRST_VISIT_DNS,
    NETWORKS,
    REPEAT_VISIT,
    UPPER_BOUND,
    experiment_text,
    visit,
)
from h2lab.spec.factors import Cell


def test_the_experiment_names_the_page_absolutely_and_every_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    text = experiment_text(
        "warc:site.warc.gz", list(NETWORKS), list(CLIENTS), ["h1s", "h2s", "h3"], "origin", 5, 0
    )
    exp = tomllib.loads(text)
    assert exp["repetitions"] == 5 and exp["name"] == "verdict"
    common = {
        "network": ["cable", "lte", "3g"],
        "page": [f"warc:{tmp_path / 'site.warc.gz'}"],
        "server": ["origin"],
    }
    # what a visitor gets: h3 learnt from Alt-Svc, the page starting over h2
    first = {"protocol": ["h1s", "h2s", "h3"], **common, "client": ["chromium", "firefox"]}
    assert exp["factors"] == [{**first, "discovery": ["alt-svc"]}]
    odd = experiment_text('dir:a "b"#x.html', ["rtt=20ms"], ["chromium"], ["h2s"], "o", 2, 1)
    quoted = tmp_path / 'a "b"#x.html'
    (only,) = tomllib.loads(odd)["factors"]
    assert only["page"] == [f"dir:{quoted}"] and "discovery" not in only  # no h3: nothing to find


def test_https_rr_forced_and_repeat_add_a_table_each(tmp_path: Path) -> None:
    text = experiment_text(
        "synthetic:n=2", ["cable"], ["chromium", "firefox"], ["h1s", "h2s", "h3"], "origin", 3,
        0, forced=True, repeat=["chromium"], https_rr=True,
    )  # fmt: skip
    first, dns, forced, repeat = tomllib.loads(text)["factors"]
    assert first["discovery"] == ["alt-svc"] and first["protocol"] == ["h1s", "h2s", "h3"]
    assert dns["discovery"] == ["https-rr"] and dns["protocol"] == ["h2s", "h3"]
    assert forced["protocol"] == ["h2s", "h3"] and "discovery" not in forced
    assert forced["client"] == ["chromium", "firefox"]
    assert repeat["view"] == ["repeat"] and repeat["client"] == ["chromium"]
    assert repeat["protocol"] == ["h2s", "h3"] and "discovery" not in repeat


def test_each_row_says_which_visit_it_is() -> None:
    alt = Cell.of(page="p", network="cable", discovery="alt-svc")
    assert visit(alt, ("h3", "h2s")) == visit(alt, ("h2s", "h1s")) == FIRST_VISIT
    forced = alt.replace("discovery", "forced")
    assert visit(forced, ("h3", "h2s")) == UPPER_BOUND
    assert visit(forced, ("h2s", "h1s")) == FIRST_VISIT  # no h3: nothing forced
    assert visit(forced.replace("view", "repeat"), ("h3", "h2s")) == REPEAT_VISIT
    assert visit(alt.replace("discovery", "https-rr"), ("h3", "h2s")) == FIRST_VISIT_DNS


@pytest.mark.parametrize(
    ("args", "start"),
    [
        (["--network", "nowhere"], "h2lab: command line: --network: unknown profile 'nowhere'"),
        (["--client", "h2load"], "h2lab: command line: --client: h2load cannot run protocol h3"),
        (["--server", "nginx"], "h2lab: command line: --server: nginx cannot serve protocol h3"),
        (["--protocol", "h4"], "h2lab: command line: --protocol: "),
        (
            ["--server", "jetty"],
            "h2lab: command line: --server: alt-svc needs a server that runs it; jetty does not",
        ),
        (
            ["--client", "firefox", "--repeat"],
            "h2lab: command line: --repeat: no --client has a repeat view (firefox; chromium has)",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(
    args: list[str],
    start: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "v"
    argv = ["h2lab", "verdict", "synthetic:n=2,size=1KB,origins=1", "--out", str(out), *args]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exited:
        cli.main()
    err = capsys.readouterr().err
    assert exited.value.code == 2
    (line,) = err.splitlines()
    assert line.startswith(start), line
    assert not out.exists()
