"""h2lab.runner.shards: blocks dealt to idle worker processes, what they stream back, a worker
that dies, and the orderly stop. The workers here are fakes that speak the protocol without a
lab (the real ones run in tests/integration/test_jobs.py)."""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from h2lab.runner.executor import BlockDone, BlockJob, TrialDone, block_jobs
from h2lab.runner.matrix import TrialSpec, expand
from h2lab.runner.shards import LocalShardsExecutor, ShardFailed
from h2lab.spec.experiment import Experiment, Factors
from h2lab.spec.network import parse_network

FAKE_WORKER = """
import json, os, pathlib, signal, sys, time
from h2lab.runner import wire
from h2lab.runner.executor import BlockDone, TrialDone
from h2lab.runner.trial import trial_record

class Page:
    digest = "d"

def send(event):
    sys.stdout.write(json.dumps(wire.encode_message(event)) + "\\n")
    sys.stdout.flush()

if os.environ.get("FAKE_DEAF"):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
pathlib.Path(os.environ["FAKE_PIDS"], str(os.getpid())).touch()
try:
    for line in sys.stdin:
        job = wire.decode_message(json.loads(line))
        for t in job.trials:
            if t.key == os.environ.get("FAKE_DIE"):
                os._exit(3)
            if os.environ.get("FAKE_SLEEP"):
                time.sleep(60)
            record = trial_record(
                t, Page(), attempt=1, error=None, started_at="now", duration_s=0.0,
                versions={"pid": str(os.getpid())}, cpu_busy_pct=None, metrics={},
            )
            send(TrialDone(record, (), True))
        send(BlockDone(job.number))
except KeyboardInterrupt:
    print("interrupted", file=sys.stderr)
    sys.exit(130)
"""


@pytest.fixture
def pids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where each fake worker leaves a file named by its pid."""
    folder = tmp_path / "pids"
    folder.mkdir()
    monkeypatch.setenv("FAKE_PIDS", str(folder))
    return folder


def _executor(tmp_path: Path, jobs: int = 2, stop_s: float = 30.0) -> LocalShardsExecutor:
    return LocalShardsExecutor(
        jobs, tmp_path, argv=(sys.executable, "-c", FAKE_WORKER), stop_s=stop_s
    )


def _jobs(tmp_path: Path) -> list[BlockJob]:
    exp = Experiment(
        name="shards",
        factors=Factors.of(
            protocol=("h1s", "h2s"),
            page=("synthetic:n=2", "synthetic:n=4", "synthetic:n=8"),
            network=(parse_network("cable"),),
        ),
        seed=4,
        repetitions=2,
    )
    trials: list[TrialSpec] = expand(exp)
    return block_jobs(trials, {}, retries=0, timeout_s=5.0, results_dir=tmp_path, origins=("o",))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_every_block_goes_to_an_idle_worker_and_comes_back_once(tmp_path: Path, pids: Path) -> None:
    jobs = _jobs(tmp_path)
    executor = _executor(tmp_path)
    for job in jobs:
        executor.submit(job)
    try:
        events = list(executor.events())
    finally:
        executor.close()
    done = [e for e in events if isinstance(e, TrialDone)]
    assert sorted(e.record.trial_key for e in done) == sorted(
        t.key for job in jobs for t in job.trials
    )
    assert sorted(e.number for e in events if isinstance(e, BlockDone)) == list(range(len(jobs)))
    # both workers ran blocks, each trial marked with its shard (not in its key)
    marks = Counter(e.record.config["shard"] for e in done)
    assert set(marks) == {"1/2", "2/2"}
    assert len({e.record.versions["pid"] for e in done}) == 2
    # a block never spans two workers
    shard_of = {e.record.trial_key: e.record.config["shard"] for e in done}
    for job in jobs:
        assert len({shard_of[t.key] for t in job.trials}) == 1
    assert (tmp_path / "shard-1.log").exists() and (tmp_path / "shard-2.log").exists()
    assert not any(_alive(int(p.name)) for p in pids.iterdir())  # ended with their input


def test_no_more_workers_than_blocks(tmp_path: Path, pids: Path) -> None:
    executor = _executor(tmp_path, jobs=4)
    executor.submit(_jobs(tmp_path)[0])
    try:
        events = list(executor.events())
    finally:
        executor.close()
    assert len(events) == 3  # two trials and the block
    assert len(list(pids.iterdir())) == 1
    assert not (tmp_path / "shard-2.log").exists()


def test_a_worker_dying_mid_block_fails_the_run_after_the_others_finish(
    tmp_path: Path, pids: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs = _jobs(tmp_path)
    dying = jobs[1].trials[1]
    monkeypatch.setenv("FAKE_DIE", dying.key)
    executor = _executor(tmp_path)
    for job in jobs:
        executor.submit(job)
    events: list[object] = []
    try:
        with pytest.raises(ShardFailed) as failed:
            events.extend(executor.events())
    finally:
        executor.close()
    k = failed.value.shard
    assert failed.value.line() == (
        f"shard {k}/2 exited with 3 (see {tmp_path / f'shard-{k}.log'}); rerun the same "
        "command to resume"
    )
    keys = [e.record.trial_key for e in events if isinstance(e, TrialDone)]
    assert jobs[1].trials[0].key in keys and dying.key not in keys  # what ended is kept
    others = [t.key for job in jobs if job is not jobs[1] for t in job.trials]
    assert set(others) <= set(keys)  # the rest ran on the worker left


def _stop_when(calls: int) -> Callable[[], None]:
    """An interrupt check that raises at its ``calls``-th call (workers are up by then)."""
    seen = []

    def check() -> None:
        seen.append(1)
        if len(seen) >= calls:
            raise KeyboardInterrupt

    return check


def test_cancel_stops_every_worker_the_orderly_way(
    tmp_path: Path, pids: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_SLEEP", "1")
    executor = _executor(tmp_path)
    for job in _jobs(tmp_path):
        executor.submit(job)
    try:
        with pytest.raises(KeyboardInterrupt):
            list(executor.events(_stop_when(4)))
        executor.cancel()
        assert list(executor.events()) == []  # no error: the workers were asked to stop
    finally:
        executor.close()
    for k in (1, 2):
        assert "interrupted" in (tmp_path / f"shard-{k}.log").read_text()
    assert not any(_alive(int(p.name)) for p in pids.iterdir())


def test_a_worker_that_does_not_stop_is_killed_after_the_grace(
    tmp_path: Path, pids: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_SLEEP", "1")
    monkeypatch.setenv("FAKE_DEAF", "1")
    executor = _executor(tmp_path, stop_s=1.0)
    for job in _jobs(tmp_path):
        executor.submit(job)
    with pytest.raises(KeyboardInterrupt):
        list(executor.events(_stop_when(4)))
    t0 = time.monotonic()
    executor.close()
    assert time.monotonic() - t0 < 10
    assert len(list(pids.iterdir())) == 2
    assert not any(_alive(int(p.name)) for p in pids.iterdir())


def test_marks_are_the_only_change_to_what_a_worker_is_sent(tmp_path: Path) -> None:
    """A trial's key does not depend on where it runs: the mark is outside the key."""
    t = _jobs(tmp_path)[0].trials[0]
    assert dataclasses.replace(t, shard="2/2").key == t.key
