"""The fuzz harnesses (fuzz/): every seed of every target passes its harness, and a short
coverage-guided run of every target under atheris finds nothing (``make fuzz`` runs longer)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz.run import Outcome, table
from fuzz.seeds import SEEDS
from fuzz.targets import TARGETS

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_every_seed_passes_its_harness(name: str) -> None:
    seeds = list(SEEDS[name]())
    assert seeds, name
    for seed in seeds:
        TARGETS[name].run(seed)  # a Finding or any other exception fails the test


def test_a_short_run_of_every_target_finds_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "H2LAB_CACHE": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "fuzz.run", "--seconds", "1"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines()[1:-1]}
    assert set(rows) == set(TARGETS)
    for name, row in rows.items():
        assert int(row[2]) > 0, name  # executions
        assert row[-1] == "0", name  # findings
    assert sorted(p.name for p in (tmp_path / "fuzz" / "corpus").iterdir()) == sorted(TARGETS)
    kept = [p.name for p in (tmp_path / "fuzz" / "findings").iterdir()]
    assert [name for name in kept if "-slow-unit-" not in name] == []  # slow: 1 s, not 5


def test_an_unknown_target_is_refused_in_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "fuzz.run", "--only", "warc,nope"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout.strip().startswith("command line: --only: unknown target 'nope'")


def test_libfuzzer_lines_become_figures() -> None:
    o = Outcome("warc")
    o.read("#5120\tpulse  cov: 574 ft: 1997 corp: 112/30Kb exec/s: 640 rss: 99Mb\n")
    o.read("Slowest unit: 2 s:\n")
    o.read("stat::number_of_executed_units: 5141\n")
    o.read("stat::peak_rss_mb: 101\n")
    o.read("artifact_prefix='x'; Test unit written to /c/warc-slow-unit-cd\n")
    o.read("==1== ERROR: libFuzzer: deadly signal\n")
    o.read("artifact_prefix='x'; Test unit written to /c/warc-crash-ab\n")
    assert (o.executions, o.cov, o.ft, o.peak_rss_mb, o.slowest_s) == (5141, 574, 1997, 101, 2)
    assert o.findings == ["/c/warc-crash-ab"]  # a slow unit (1 s to 5 s) is not one
    assert o.slow_units == ["/c/warc-slow-unit-cd"]
    o.seconds = 10.0
    text = table([o])
    assert "warc" in text and "5141" in text and "/c/warc-crash-ab" in text
    assert text.splitlines()[0].split()[:3] == ["target", "seconds", "executions"]
