"""``h2lab verdict``: the experiment file it writes, and bad input refused in one line with
nothing written (the run itself: tests/integration/test_readme_recipe.py)."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from h2lab import cli
from h2lab.cli.verdict import CLIENTS, NETWORKS, experiment_text


def test_the_experiment_names_the_page_absolutely_and_every_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    text = experiment_text(
        "warc:site.warc.gz", list(NETWORKS), list(CLIENTS), ["h1s", "h2s", "h3"], "origin", 5, 0
    )
    exp = tomllib.loads(text)
    assert exp["repetitions"] == 5 and exp["name"] == "verdict"
    assert exp["factors"] == {
        "protocol": ["h1s", "h2s", "h3"],
        "network": ["cable", "lte", "3g"],
        "page": [f"warc:{tmp_path / 'site.warc.gz'}"],
        "server": ["origin"],
        "client": ["chromium", "firefox"],
    }
    odd = experiment_text('dir:a "b"#x.html', ["rtt=20ms"], ["chromium"], ["h2s"], "o", 2, 1)
    quoted = tmp_path / 'a "b"#x.html'
    assert tomllib.loads(odd)["factors"]["page"] == [f"dir:{quoted}"]


@pytest.mark.parametrize(
    ("args", "start"),
    [
        (["--network", "nowhere"], "h2lab: command line: --network: unknown profile 'nowhere'"),
        (["--client", "h2load"], "h2lab: command line: --client: h2load cannot run protocol h3"),
        (["--server", "nginx"], "h2lab: command line: --server: nginx cannot serve protocol h3"),
        (["--protocol", "h4"], "h2lab: command line: --protocol: "),
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
