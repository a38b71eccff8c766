"""Ctrl-C, SIGTERM and kill -9 of `h2lab run`: nothing is left behind and a rerun resumes."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tests.integration.conftest import H2LAB, h2lab_netns, lab_processes

EXPERIMENT = """
name = "interrupt"
seed = 11
repetitions = 8
timeout_s = 60
[factors]
protocol = ["h1s", "h2s"]
network = ["rtt=100ms,down=5Mbps,up=1Mbps"]
page = ["synthetic:n=24,size=20KB,origins=2"]
"""
TOTAL_TRIALS = 16


def _ok_keys(out: Path) -> list[str]:
    if not (out / "results.sqlite").exists():
        return []
    db = sqlite3.connect(out / "results.sqlite")
    try:
        return [r[0] for r in db.execute("SELECT trial_key FROM trials WHERE status = 'ok'")]
    except sqlite3.OperationalError:
        return []
    finally:
        db.close()


def _start(exp: Path, out: Path) -> subprocess.Popen[bytes]:
    # own session, like a shell job: the signal goes to h2lab only; stderr to OUT.stderr
    with Path(f"{out}.stderr").open("wb") as stderr:
        return subprocess.Popen(
            [H2LAB, "run", str(exp), "--out", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )


def _wait_for_trials(out: Path, n: int, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if (out / "results.sqlite").exists() and len(_ok_keys(out)) >= n:
            return
        assert proc.poll() is None, f"h2lab run exited early with {proc.returncode}"
        time.sleep(0.1)
    raise AssertionError(f"fewer than {n} trials stored within {timeout_s} s")


def _assert_nothing_left() -> None:
    assert h2lab_netns() == []
    assert lab_processes() == []
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert "h2lab" not in links and "vL1" not in links and "vR1" not in links
    state = Path("/run/h2lab")
    assert not state.exists() or list(state.iterdir()) == []


def _rerun_finishes(exp: Path, out: Path, stored_before: list[str]) -> None:
    done = subprocess.run(
        [H2LAB, "run", str(exp), "--out", str(out)], capture_output=True, timeout=300
    )
    assert done.returncode == 0, done.stderr.decode()
    keys = _ok_keys(out)
    assert len(keys) == TOTAL_TRIALS and len(set(keys)) == TOTAL_TRIALS
    assert set(stored_before) <= set(keys)
    # stored trials were not repeated: one ok row per key
    _assert_nothing_left()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_tears_down_and_resumes(tmp_path: Path, sig: signal.Signals) -> None:
    exp = tmp_path / "exp.toml"
    exp.write_text(EXPERIMENT)
    out = tmp_path / "out"
    proc = _start(exp, out)
    _wait_for_trials(out, 1, proc, timeout_s=60)
    # right after a trial is stored the runner forks the next one's processes: a signal then
    # used to be lost in an at-fork hook and the run went on to exit 0
    os.kill(proc.pid, sig)
    code = proc.wait(timeout=30)
    stderr = Path(f"{out}.stderr").read_text()
    assert code == 130, stderr[-2000:]
    assert "interrupted: stored trials are kept" in stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    _assert_nothing_left()
    stored = _ok_keys(out)
    assert 1 <= len(stored) < TOTAL_TRIALS
    _rerun_finishes(exp, out, stored)


def test_kill9_then_clean_then_resume(tmp_path: Path) -> None:
    exp = tmp_path / "exp.toml"
    exp.write_text(EXPERIMENT)
    out = tmp_path / "out"
    proc = _start(exp, out)
    _wait_for_trials(out, 1, proc, timeout_s=60)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    cleaned = subprocess.run([H2LAB, "clean"], capture_output=True, text=True, timeout=60)
    assert cleaned.returncode == 0, cleaned.stderr
    assert "removed 1 instance" in cleaned.stdout
    _assert_nothing_left()
    stored = _ok_keys(out)
    assert 1 <= len(stored) < TOTAL_TRIALS
    _rerun_finishes(exp, out, stored)


SIXTY = """
name = "kill9-five-times"
seed = 5
repetitions = 15
timeout_s = 30
retries = 1
[factors]
protocol = ["h1c", "h1s", "h2c", "h2s"]
network = ["rtt=2ms,rate=100Mbps"]
page = ["synthetic:n=2,size=1KB,origins=1"]
"""


def test_kill9_five_times_at_random_points_loses_and_repeats_nothing(tmp_path: Path) -> None:
    """Issue #7: kill -9 a 60-trial run at random points five times, then resume: every trial
    is stored exactly once (one ok row per key), none lost."""
    import random

    exp = tmp_path / "exp.toml"
    exp.write_text(SIXTY)
    out = tmp_path / "out"
    rng = random.Random(2026)
    stored_counts = []
    for _ in range(5):
        proc = _start(exp, out)
        # a random point: after the lab is up and a few more trials are stored, plus a random
        # fraction of a trial (so the kill lands before, inside or after a trial)
        target = len(_ok_keys(out)) + rng.randint(1, 6)
        _wait_for_trials(out, min(target, 59), proc, timeout_s=120)
        time.sleep(rng.uniform(0, 0.4))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        stored_counts.append(len(_ok_keys(out)))
    done = subprocess.run(
        [H2LAB, "run", str(exp), "--out", str(out)], capture_output=True, timeout=600
    )
    assert done.returncode == 0, done.stderr.decode()
    keys = _ok_keys(out)
    print(f"ok trials stored after each kill -9: {stored_counts}; after resume: {len(keys)}")
    db = sqlite3.connect(out / "results.sqlite")
    failed = db.execute("SELECT trial_key, error FROM trials WHERE status = 'failed'").fetchall()
    assert len(keys) == 60 and len(set(keys)) == 60, failed
    assert stored_counts == sorted(stored_counts)  # nothing stored was lost
    _assert_nothing_left()


EIGHT = """
name = "restore-then-resume"
seed = 8
repetitions = 4
timeout_s = 30
[factors]
protocol = ["h1s", "h2s"]
network = ["rtt=2ms,rate=100Mbps"]
page = ["synthetic:n=2,size=1KB,origins=1"]
"""


def test_interrupted_run_resumes_from_its_trials_csv_alone(tmp_path: Path) -> None:
    """reproduction/ keeps only trials.csv: `h2lab restore` on a folder holding just that file,
    then the same `h2lab run`, stores the missing trials and repeats none of the kept ones."""
    exp = tmp_path / "exp.toml"
    exp.write_text(EIGHT)
    out = tmp_path / "out"
    proc = _start(exp, out)
    _wait_for_trials(out, 2, proc, timeout_s=60)
    os.kill(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=30) == 130
    reported = subprocess.run(
        [H2LAB, "report", str(out)], capture_output=True, text=True, timeout=120
    )
    assert reported.returncode == 0, reported.stderr
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "trials.csv").write_bytes((out / "trials.csv").read_bytes())
    db = sqlite3.connect(out / "results.sqlite")
    before = db.execute("SELECT trial_key, started_at, seed FROM trials ORDER BY id").fetchall()
    db.close()
    assert 2 <= sum(1 for _ in before) < 8

    restored = subprocess.run(
        [H2LAB, "restore", str(kept)], capture_output=True, text=True, timeout=60
    )
    assert restored.returncode == 0, restored.stderr
    assert restored.stdout.startswith(f"restored {len(before)} trial rows into ")
    done = subprocess.run(
        [H2LAB, "run", str(exp), "--out", str(kept)], capture_output=True, timeout=300
    )
    assert done.returncode == 0, done.stderr.decode()

    db = sqlite3.connect(kept / "results.sqlite")
    after = db.execute("SELECT trial_key, started_at, seed FROM trials ORDER BY id").fetchall()
    db.close()
    assert after[: len(before)] == before  # the kept rows, unchanged, first
    keys = [k for k, _, _ in after]
    assert len(after) == 8 and len(set(keys)) == 8  # the rest stored once each

    # the file changed since (h1s dropped): its stored trials are kept, and the run says so
    exp.write_text(EIGHT.replace('["h1s", "h2s"]', '["h2s"]'))
    again = subprocess.run(
        [H2LAB, "run", str(exp), "--out", str(kept)], capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0, again.stderr
    assert "holds 4 trials of restore-then-resume that this file does not have" in again.stderr
    db = sqlite3.connect(kept / "results.sqlite")
    assert db.execute("SELECT COUNT(*) FROM trials").fetchone()[0] == 8
    db.close()
    _assert_nothing_left()
