"""`h2lab run --jobs N`: N shards, each its own lab, run at once into one store; every trial
stored once, each trial's counters its own lab's, Ctrl-C stops every shard, a rerun resumes,
and a kill -9 of the driver stops its workers at once."""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

from tests.integration.conftest import H2LAB
from tests.integration.test_interrupt import _assert_nothing_left, _ok_keys, _wait_for_trials

EXPERIMENT = """
name = "jobs"
seed = 12
repetitions = 4
timeout_s = 60
[factors]
protocol = ["h1s", "h2s"]
network = ["rtt=40ms,rate=4Mbps"]
page = ["synthetic:n=8,size=40KB,origins=1", "synthetic:n=2,size=100KB,origins=1"]
client = ["h2load"]
"""
TRIALS = 16


def _rows(out: Path) -> list[tuple[str, str, float, int, int]]:
    db = sqlite3.connect(out / "results.sqlite")
    try:
        return db.execute(
            "SELECT trial_key, started_at, duration_s, body_bytes, bytes_down FROM trials "
            "WHERE status = 'ok'"
        ).fetchall()
    finally:
        db.close()


def test_two_jobs_run_at_once_into_one_store(tmp_path: Path) -> None:
    exp = tmp_path / "exp.toml"
    exp.write_text(EXPERIMENT)
    out = tmp_path / "out"
    done = subprocess.run(
        [H2LAB, "run", str(exp), "--out", str(out), "--jobs", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = _rows(out)
    keys = [r[0] for r in rows]
    assert len(keys) == TRIALS and len(set(keys)) == TRIALS
    # each trial's bytes are its own lab's: the page and its headers, not a neighbour's too
    for key, _, _, body, down in rows:
        assert body <= down <= 1.25 * body + 20_000, (key, body, down)
    # the shards ran at the same time: some trials of one overlap trials of the other
    spans = sorted(
        (dt.datetime.fromisoformat(start).timestamp(), duration)
        for _, start, duration, _, _ in rows
    )
    overlaps = sum(b[0] < a[0] + a[1] for a, b in itertools.pairwise(spans))
    assert overlaps >= TRIALS // 4, spans
    assert (out / "shard-1.log").exists() and (out / "shard-2.log").exists()
    db = sqlite3.connect(out / "results.sqlite")
    marks = [json.loads(c)["shard"] for (c,) in db.execute("SELECT config_json FROM trials")]
    db.close()
    assert sorted(set(marks)) == ["1/2", "2/2"]  # each trial records that it ran sharded
    assert (out / "report.html").stat().st_size > 10_000
    assert f"{TRIALS}/{TRIALS}" in done.stderr  # one progress bar for the whole run
    _assert_nothing_left()


def test_ctrl_c_stops_every_shard_and_a_rerun_resumes(tmp_path: Path) -> None:
    exp = tmp_path / "exp.toml"
    exp.write_text(EXPERIMENT)
    out = tmp_path / "out"
    with Path(f"{out}.stderr").open("wb") as stderr:
        proc = subprocess.Popen(
            [H2LAB, "run", str(exp), "--out", str(out), "--jobs", "2"],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
    _wait_for_trials(out, 3, proc, timeout_s=120)
    os.kill(proc.pid, signal.SIGINT)
    code = proc.wait(timeout=150)
    text = Path(f"{out}.stderr").read_text()
    assert code == 130, text[-2000:]
    assert "interrupted: stored trials are kept" in text
    _assert_nothing_left()
    stored = _ok_keys(out)
    assert 3 <= len(stored) < TRIALS
    again = subprocess.run(
        [H2LAB, "run", str(exp), "--out", str(out), "--jobs", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    keys = _ok_keys(out)
    assert len(keys) == TRIALS and len(set(keys)) == TRIALS
    assert set(stored) <= set(keys)
    _assert_nothing_left()


SLOW = """
name = "jobs-slow"
seed = 13
repetitions = 2
timeout_s = 60
[factors]
protocol = ["h1s"]
network = ["rtt=40ms,rate=1Mbps"]
page = ["synthetic:n=2,size=1MB,origins=1", "synthetic:n=4,size=500KB,origins=1"]
client = ["h2load"]
"""
"""Two blocks (one per page), each trial about 17 s on its link: a worker is mid-trial for
most of its life."""


def test_a_driver_killed_takes_its_workers_down_at_once(tmp_path: Path) -> None:
    exp = tmp_path / "exp.toml"
    exp.write_text(SLOW)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [H2LAB, "run", str(exp), "--out", str(out), "--jobs", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while len(_h2loads()) < 2:  # both workers in a trial
            assert time.monotonic() < deadline and proc.poll() is None, "no two trials running"
            time.sleep(0.1)
        # the driver's children: a worker's own child, between its fork and its exec, has
        # the worker's command line too (a third "worker" in one run beside three lanes)
        workers = _workers(proc.pid)
        assert len(workers) == 2
        os.kill(proc.pid, signal.SIGKILL)
        t0 = time.monotonic()
        while _workers():
            assert time.monotonic() - t0 < 10, _still_running(out)
            time.sleep(0.1)
        print(f"both workers gone {time.monotonic() - t0:.1f} s after kill -9 of the driver")
    finally:  # whatever failed, the driver goes, and its workers tear their labs down
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 30
        while _workers() and time.monotonic() < deadline:
            time.sleep(0.1)
    for k in (1, 2):  # each stopped its trial and tore its lab down (SIGTERM's teardown)
        log = (out / f"shard-{k}.log").read_text()
        assert "interrupted: the lab is torn down" in log, log[-2000:]
    assert _ok_keys(out) == []  # no trial was finished for a driver that was gone
    _assert_nothing_left()


def _pgrep(*args: str) -> list[int]:
    done = subprocess.run(["pgrep", *args], capture_output=True, text=True)
    return [int(p) for p in done.stdout.split()]


def _workers(parent: int | None = None) -> list[int]:
    """Shard workers' pids (the children of ``parent`` only, if given)."""
    under = ["-P", str(parent)] if parent is not None else []
    return _pgrep(*under, "-f", r"python.* -m h2lab\.runner\.worker")


def _h2loads() -> list[int]:
    return _pgrep("-x", "h2load")


def _still_running(out: Path) -> str:
    """What a failure needs: each worker left (its parent, state, what it waits in, its
    children) and the end of each shard's log."""
    lines = []
    for pid in _workers():
        proc = Path("/proc", str(pid))
        with contextlib.suppress(OSError):
            status = dict(
                line.split(":\t", 1) for line in (proc / "status").read_text().splitlines()
            )
            children = subprocess.run(
                ["pgrep", "-a", "-P", str(pid)], capture_output=True, text=True
            ).stdout.splitlines()
            wchan = (proc / "wchan").read_text()
            lines.append(
                f"worker {pid}: ppid {status['PPid'].strip()}, state {status['State'].strip()}, "
                f"in {wchan}, children {children}"
            )
    for log in sorted(out.glob("shard-*.log")):
        lines.append(f"--- {log.name} ---\n{log.read_text()[-1500:]}")
    return "workers still running 10 s after the driver's kill -9:\n" + "\n".join(lines)
