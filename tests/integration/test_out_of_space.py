"""Out of space: the results folder on a small tmpfs that fills during the run. The run stops
with one line naming the folder and the cause (exit 1); the store opens, intact, with every
trial committed before; once space is freed the same command resumes to the end, each trial
key stored ok once."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

EXPERIMENT = """name = "out-of-space"
repetitions = 20
[factors]
protocol = ["h1s", "h2s"]
network = ["rtt=2ms"]
page = ["synthetic:n=4,size=2KB,origins=1"]
client = ["h2load"]
"""
TRIALS = 40
FREE_AT_START_BYTES = 250 * 1024
"""Room for a few trials (each stores about 35 KB with its artifacts), not for all."""


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(mnt: Path, leave_bytes: int) -> Path:
    st = os.statvfs(mnt)
    filler = mnt / "filler"
    filler.write_bytes(bytes(st.f_bavail * st.f_frsize - leave_bytes))
    return filler


def _run(exp: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "h2lab", "run", str(exp), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _rows(out: Path) -> list[tuple[int, str, str]]:
    db = sqlite3.connect(out / "results.sqlite")
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return db.execute("SELECT id, trial_key, status FROM trials ORDER BY id").fetchall()
    finally:
        db.close()


def test_a_full_disk_stops_the_run_in_one_line_and_the_same_command_resumes(
    tmp_path: Path, small_disk: Path
) -> None:
    exp = tmp_path / "exp.toml"
    exp.write_text(EXPERIMENT)
    out = small_disk / "out"
    filler = _fill(small_disk, FREE_AT_START_BYTES)
    first = _run(exp, out)
    assert first.returncode == 1, first.stderr[-2000:]
    assert "Traceback" not in first.stderr
    errors = [ln for ln in first.stderr.splitlines() if ln.startswith("h2lab:")]
    assert len(errors) == 1
    assert errors[0].startswith(f"h2lab: {out}: no space left on device (")
    assert "run the same command to resume" in errors[0]
    before = _rows(out)
    assert 0 < len(before) < TRIALS
    assert {status for _, _, status in before} == {"ok"}
    assert len({key for _, key, _ in before}) == len(before)

    filler.unlink()
    second = _run(exp, out)
    assert second.returncode == 0, second.stderr[-2000:]
    after = _rows(out)
    assert after[: len(before)] == before  # what was committed is untouched
    assert len(after) == TRIALS and {s for _, _, s in after} == {"ok"}
    assert len({key for _, key, _ in after}) == TRIALS  # every key once
    assert (out / "report.html").is_file()
