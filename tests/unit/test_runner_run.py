"""h2lab.runner.run's driver (run_trials) against a fake executor: what it submits (resume,
give-up, stored attempts), and that it alone writes the store, every attempt as it arrives."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from h2lab.errors import H2LabError
from h2lab.results import TrialRecord
from h2lab.runner import run
from h2lab.runner.captures import trial_keylog
from h2lab.runner.executor import BlockDone, BlockJob, Event, TrialDone
from h2lab.runner.matrix import TrialSpec, expand
from h2lab.runner.run import RUNS_BEFORE_GIVING_UP, run_trials
from h2lab.runner.trial import trial_record
from h2lab.spec.experiment import Experiment, Factors
from h2lab.spec.network import parse_network
from h2lab.store import Store


@dataclass(frozen=True)
class FakePage:
    digest: str = "feedfacefeedface"
    origins: tuple[str, ...] = ("o1.h2lab.test", "o2.h2lab.test")


@pytest.fixture(autouse=True)
def _no_page_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver resolves each page for its origins: a fake page, no page store."""
    monkeypatch.setattr(run, "resolve_page", lambda spec: FakePage())


def trials(repetitions: int = 2) -> list[TrialSpec]:
    exp = Experiment(
        name="drive",
        factors=Factors.of(
            protocol=("h1s", "h2s"),
            page=("synthetic:n=2",),
            network=(parse_network("cable"),),
        ),
        seed=3,
        repetitions=repetitions,
    )
    return expand(exp)


def attempt(t: TrialSpec, number: int, ok: bool) -> TrialRecord:
    return trial_record(
        t, FakePage(), attempt=number, error=None if ok else "boom",  # type: ignore[arg-type]
        started_at="2026-11-01T00:00:00.000+00:00", duration_s=1.0, versions={"h2lab": "x"},
        cpu_busy_pct=5.0, metrics={"pdt_ms": 100.0} if ok else {},
    )  # fmt: skip


@dataclass
class FakeExecutor:
    """Runs nothing: every attempt of a trial whose key is in ``fails`` fails."""

    fails: set[str] = field(default_factory=set)
    interrupt_after: int | None = None
    """raise KeyboardInterrupt after this many events, as Ctrl-C would"""
    jobs: list[BlockJob] = field(default_factory=list)
    pending: list[BlockJob] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)

    def submit(self, job: BlockJob) -> None:
        self.jobs.append(job)
        self.pending.append(job)

    def events(self, check: Callable[[], None] = lambda: None) -> Iterator[Event]:
        sent = 0
        while self.pending:
            job = self.pending.pop(0)
            for t in job.trials:
                stored = job.attempts.get(t.key, 0)
                for retry in range(1 + job.retries):
                    if self.interrupt_after is not None and sent == self.interrupt_after:
                        raise KeyboardInterrupt
                    ok = t.key not in self.fails
                    last = ok or retry == job.retries
                    yield TrialDone(attempt(t, stored + 1 + retry, ok), (), last)
                    sent += 1
                    if last:
                        break
            yield BlockDone(job.number)

    def cancel(self) -> None:
        self.calls.append("cancel")
        self.pending.clear()

    def close(self) -> None:
        self.calls.append("close")


def _rows(out: Path) -> list[tuple[str, int, str]]:
    store = Store(out)
    try:
        return [(r.trial_key, r.attempt, r.status) for r in store.trials()]
    finally:
        store.close()


def test_every_record_streamed_back_is_stored_by_the_driver(tmp_path: Path) -> None:
    todo = trials()
    executor = FakeExecutor()
    heard: list[tuple[str, int | None]] = []
    store = Store(tmp_path)
    try:
        written = run_trials(
            todo, store, timeout_s=30, executor=executor,
            on_progress=lambda t, r: heard.append((t.key, None if r is None else r.id)),
        )  # fmt: skip
    finally:
        store.close()
    assert [r.trial_key for r in written] == [t.key for t in todo]
    assert all(r.id is not None for r in written)
    assert _rows(tmp_path) == [(t.key, 1, "ok") for t in todo]
    assert heard == [(r.trial_key, r.id) for r in written]
    assert executor.calls == ["close"]
    # one job per block: the trials that share a seed, with the run's folder and origins
    assert [[t.key for t in job.trials] for job in executor.jobs] == [
        [t.key for t in todo[i : i + 2]] for i in range(0, len(todo), 2)
    ]
    assert {job.results_dir for job in executor.jobs} == {tmp_path}
    assert {job.origins for job in executor.jobs} == {FakePage().origins}
    assert {job.timeout_s for job in executor.jobs} == {30}


def test_a_resumed_run_submits_only_what_is_not_stored_ok(tmp_path: Path) -> None:
    todo = trials()
    store = Store(tmp_path)
    try:
        store.add_trial(attempt(todo[0], 1, ok=True))
        store.add_trial(attempt(todo[1], 1, ok=False))
        executor = FakeExecutor()
        resumed: list[str] = []
        run_trials(
            todo, store, timeout_s=30, executor=executor,
            on_progress=lambda t, r: resumed.append(t.key) if r is None else None,
        )  # fmt: skip
    finally:
        store.close()
    submitted = [t.key for job in executor.jobs for t in job.trials]
    assert submitted == [t.key for t in todo[1:]]
    assert resumed == [todo[0].key]
    # the failed attempt stored before is counted: this one is attempt 2
    assert executor.jobs[0].attempts == {todo[1].key: 1}
    assert (todo[1].key, 2, "ok") in _rows(tmp_path)


def test_failed_attempts_are_retried_at_once_and_every_one_is_stored(tmp_path: Path) -> None:
    todo = trials(repetitions=1)
    executor = FakeExecutor(fails={todo[0].key})
    final: list[TrialRecord | None] = []
    store = Store(tmp_path)
    try:
        run_trials(
            todo, store, timeout_s=30, retries=2, executor=executor,
            on_progress=lambda t, r: final.append(r) if t.key == todo[0].key else None,
        )  # fmt: skip
    finally:
        store.close()
    rows = _rows(tmp_path)
    assert [r for r in rows if r[0] == todo[0].key] == [
        (todo[0].key, n, "failed") for n in (1, 2, 3)
    ]
    assert [r for r in rows if r[0] == todo[1].key] == [(todo[1].key, 1, "ok")]
    [last] = final  # heard of once, with its last attempt
    assert last is not None and last.attempt == 3
    assert executor.jobs[0].retries == 2


@pytest.mark.parametrize("retries", [0, 1])
def test_a_trial_failed_in_enough_runs_is_given_up(tmp_path: Path, retries: int) -> None:
    todo = trials(repetitions=1)
    failing = todo[0]
    give_up_at = RUNS_BEFORE_GIVING_UP * (1 + retries)
    given_up: list[tuple[str, int]] = []
    store = Store(tmp_path)
    try:
        for n in range(1, give_up_at):
            store.add_trial(attempt(failing, n, ok=False))
        executor = FakeExecutor(fails={failing.key})
        run_trials(todo, store, timeout_s=30, retries=retries, executor=executor)
        assert executor.jobs[0].trials[0].key == failing.key  # one attempt short: run again
        executor = FakeExecutor()
        run_trials(
            todo, store, timeout_s=30, retries=retries, executor=executor,
            on_give_up=lambda t, n: given_up.append((t.key, n)),
        )  # fmt: skip
        assert executor.jobs == []  # nothing left: the other is done, this one given up
        assert given_up == [(failing.key, give_up_at + retries)]
        executor = FakeExecutor()
        run_trials(todo, store, timeout_s=30, retries=retries, retry_failed=True, executor=executor)
        assert [t.key for job in executor.jobs for t in job.trials] == [failing.key]
    finally:
        store.close()


def test_an_interrupt_cancels_stores_what_ended_and_closes(tmp_path: Path) -> None:
    todo = trials()
    executor = FakeExecutor(interrupt_after=3)
    store = Store(tmp_path)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_trials(todo, store, timeout_s=30, executor=executor)
    finally:
        store.close()
    assert executor.calls == ["cancel", "close"]
    assert _rows(tmp_path) == [(t.key, 1, "ok") for t in todo[:3]]


def test_an_executor_error_still_closes_it_and_keeps_what_was_stored(tmp_path: Path) -> None:
    todo = trials()

    class Failing(FakeExecutor):
        def events(self, check: Callable[[], None] = lambda: None) -> Iterator[Event]:
            yield from list(super().events(check))[:2]
            raise H2LabError("shard 2/2 exited with 1")

    executor = Failing()
    store = Store(tmp_path)
    try:
        with pytest.raises(H2LabError, match="shard 2/2"):
            run_trials(todo, store, timeout_s=30, executor=executor)
    finally:
        store.close()
    assert executor.calls == ["close"]
    assert len(_rows(tmp_path)) == 2


def test_nothing_to_run_submits_nothing_and_closes(tmp_path: Path) -> None:
    executor = FakeExecutor()
    store = Store(tmp_path)
    try:
        assert run_trials([], store, timeout_s=30, executor=executor) == []
    finally:
        store.close()
    assert executor.jobs == [] and executor.calls == ["close"]


def test_the_record_of_an_attempt_says_what_ran() -> None:
    t = trials()[0]
    ok, failed = attempt(t, 1, ok=True), attempt(t, 2, ok=False)
    assert (ok.trial_key, ok.block, ok.cell, ok.seed) == (t.key, t.block, t.cell, t.seed)
    assert (ok.status, ok.error, ok.pdt_ms, ok.id) == ("ok", None, 100.0, None)
    assert (failed.status, failed.error, failed.pdt_ms) == ("failed", "boom", None)
    assert failed.attempt == 2
    assert ok.page_digest == FakePage().digest
    assert ok.config == t.config()
    assert (ok.cpu_busy_pct, ok.cpu_saturated, ok.warmup) == (5.0, False, False)


def test_the_capture_reaches_every_block_and_keys_are_asked_for_tls_only(tmp_path: Path) -> None:
    executor = FakeExecutor()
    store = Store(tmp_path)
    try:
        run_trials(trials(), store, timeout_s=30, executor=executor, capture=("pcap",))
    finally:
        store.close()
    assert {job.capture for job in executor.jobs} == {("pcap",)}
    folder = tmp_path / "a"
    assert {p: trial_keylog(folder, p, ("pcap",)) for p in ("h1c", "h1p", "h2c")} == dict.fromkeys(
        ("h1c", "h1p", "h2c")
    )
    for protocol in ("h1s", "h2s", "h3"):
        assert trial_keylog(folder, protocol, ("pcap",)) == folder / "keylog.txt"
        assert trial_keylog(folder, protocol, ()) is None


def test_with_block_costs_blocks_go_out_longest_first_and_every_trial_is_stored(
    tmp_path: Path,
) -> None:
    todo = trials(repetitions=3)
    executor = FakeExecutor()
    asked: list[tuple[list[int], set[str]]] = []

    def costs(jobs: Sequence[BlockJob], pages: Mapping[str, object]) -> list[float]:
        asked.append(([job.number for job in jobs], set(pages)))
        return [float(job.number) for job in jobs]  # the later a block, the longer

    store = Store(tmp_path)
    try:
        run_trials(todo, store, timeout_s=30, executor=executor, block_costs=costs)
    finally:
        store.close()
    assert asked == [([0, 1, 2], {"synthetic:n=2"})]  # once, with every job and the run's pages
    assert [job.trials[0].repetition for job in executor.jobs] == [0, 2, 1]
    assert [job.number for job in executor.jobs] == [0, 2, 1]  # numbers stay the blocks'
    assert sorted(r[0] for r in _rows(tmp_path)) == sorted(t.key for t in todo)


def test_a_full_disk_stops_the_run_and_stores_nothing_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's SQLITE_FULL on the third trial: OutOfSpace names the folder and the trial,
    the executor is cancelled, the two trials before stay stored."""
    import sqlite3

    from h2lab.errors import OutOfSpace

    todo = trials(repetitions=3)
    executor = FakeExecutor()
    store = Store(tmp_path)
    real_add = store.add_trial
    added: list[str] = []

    def add_trial(
        record: TrialRecord, resources: tuple[object, ...] = (), steps: tuple[object, ...] = ()
    ) -> int:
        if len(added) == 2:
            raise sqlite3.OperationalError("database or disk is full")
        added.append(record.trial_key)
        return real_add(record, resources, steps)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "add_trial", add_trial)
    try:
        with pytest.raises(OutOfSpace, match=rf"^{tmp_path}: no space left on device \(storing"):
            run_trials(todo, store, timeout_s=30, executor=executor)
    finally:
        store.close()
    assert "cancel" in executor.calls
    assert [k for k, _, _ in _rows(tmp_path)] == [t.key for t in todo[:2]]


def test_a_trial_that_could_not_write_is_not_stored_as_failed(tmp_path: Path) -> None:
    """ENOSPC inside a trial is the disk's fault, not the trial's: no failed attempt counts
    against it; the run stops."""
    from h2lab.errors import OutOfSpace

    todo = trials()
    executor = FakeExecutor(fails={todo[1].key})
    store = Store(tmp_path)
    original = attempt

    def full(t: TrialSpec, number: int, ok: bool) -> TrialRecord:
        record = original(t, number, ok)
        if not ok:
            return dataclasses.replace(record, error="[Errno 28] No space left on device")
        return record

    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(__import__(__name__, fromlist=["attempt"]), "attempt", full)
            with pytest.raises(OutOfSpace, match="could not write"):
                run_trials(todo, store, timeout_s=30, executor=executor)
    finally:
        store.close()
    assert _rows(tmp_path) == [(todo[0].key, 1, "ok")]
