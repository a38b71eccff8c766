"""Run trials for real: the driver.

The driver (:func:`run_trials`) decides what runs (resume, give-up, retries, blocks), hands
blocks to an executor (:mod:`h2lab.runner.executor`) and alone writes the store, committing
every attempt as it arrives. One trial in a lab, and the executor that runs every block in
this process (:class:`~h2lab.runner.session.SerialExecutor`), are :mod:`h2lab.runner.session`'s.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import CodeType, FrameType

from h2lab.errors import NO_SPACE, OutOfSpace, is_out_of_space
from h2lab.pages import Page, resolve_page
from h2lab.results import TrialRecord
from h2lab.runner.executor import BlockJob, Event, Executor, TrialDone, block_jobs, longest_first
from h2lab.runner.matrix import TrialSpec
from h2lab.runner.session import SerialExecutor
from h2lab.spec.experiment import Capture, FailOn
from h2lab.store import Store

__all__ = [
    "RUNS_BEFORE_GIVING_UP",
    "BlockCosts",
    "SerialExecutor",
    "run_trials",
    "signals_as_interrupt",
]


class _Terminated(KeyboardInterrupt):
    """SIGTERM, turned into the same orderly teardown as Ctrl-C."""


REDELIVER_S = 0.05
"""How soon an interrupt that CPython dropped is delivered again (:func:`signals_as_interrupt`)."""


@contextmanager
def signals_as_interrupt() -> Iterator[Callable[[], None]]:
    """SIGINT and SIGTERM raise KeyboardInterrupt, delivered again when CPython drops it;
    yields a check that raises it again if a signal came but its exception was lost.

    CPython runs a signal's handler at the next bytecode, and when the signal arrives while
    ``subprocess`` forks, that bytecode is in an at-fork hook (logging's ``_releaseLock``),
    where exceptions go to ``sys.unraisablehook`` and are ignored. A run went on to the end and
    exited 0, and a worker of ``--jobs`` whose driver died finished its trial (up to its
    timeout) for nobody. So the hook sends the signal again :data:`REDELIVER_S` later, when
    the fork is done, unless the check raised it meanwhile; the check, called between trials,
    is the backstop (and the traceback of the lost exception is not printed). A signal
    handled inside that hook (while it starts its timer) would be dropped as well, so there
    the handler does not raise but keeps the delivery due.
    """
    received: list[int] = []
    lost = threading.Event()
    owner = os.getpid()

    def handler(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        if _runs_in(frame, hook.__code__):
            # raised here it would be dropped too, and the hook may already have started the
            # timer that delivers it again: keep that delivery due (CI: a worker ran on for
            # its whole trial after the driver's kill -9)
            lost.set()
            return
        lost.clear()
        raise _Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()

    def check() -> None:
        if received:
            lost.clear()
            raise _Terminated() if received[0] == signal.SIGTERM else KeyboardInterrupt()

    def redeliver(signum: int) -> None:
        if lost.is_set():
            os.kill(owner, signum)

    unraisable_hook = sys.unraisablehook

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        dropped = bool(received) and isinstance(unraisable.exc_value, KeyboardInterrupt)
        if not dropped:
            unraisable_hook(unraisable)  # a signal handled in here sets ``lost``
        if (dropped or lost.is_set()) and os.getpid() == owner:  # not a child about to exec
            lost.set()
            timer = threading.Timer(REDELIVER_S, redeliver, (received[-1],))
            timer.daemon = True
            timer.start()

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    sys.unraisablehook = hook
    try:
        yield check
    finally:
        lost.clear()
        sys.unraisablehook = unraisable_hook
        for s, h in old.items():
            signal.signal(s, h)


def _runs_in(frame: FrameType | None, code: CodeType) -> bool:
    """Whether ``frame`` or one of its callers runs ``code``."""
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False


ProgressFn = Callable[[TrialSpec, TrialRecord | None], None]
GiveUpFn = Callable[[TrialSpec, int], None]
BlockCosts = Callable[[Sequence[BlockJob], Mapping[str, Page]], Sequence[float]]
"""The estimated seconds of each job, given the run's pages by spec
(:meth:`h2lab.analysis.estimate.BlockEstimator.jobs_s`)."""

RUNS_BEFORE_GIVING_UP = 2
"""A resumed run does not attempt again a trial that failed every attempt of this many
earlier runs (``retry_failed`` overrides): h2c at 1000 ms / 5% loss in seed 002 failed 10 of
10 attempts over five runs, 90 s each, every one a certain loss."""


def run_trials(
    trials: Sequence[TrialSpec],
    store: Store,
    *,
    timeout_s: float,
    retries: int = 0,
    retry_failed: bool = False,
    on_progress: ProgressFn | None = None,
    on_give_up: GiveUpFn | None = None,
    executor: Executor | None = None,
    fail_on: FailOn = "document",
    capture: tuple[Capture, ...] = (),
    block_costs: BlockCosts | None = None,
) -> list[TrialRecord]:
    """Run ``trials`` not yet stored ok on ``executor`` (default: in this process, one lab);
    return the records written now, each committed as it arrives. A failed trial is attempted
    again at once, up to ``retries`` more times; every attempt is stored. A trial with
    ``RUNS_BEFORE_GIVING_UP * (1 + retries)`` failed attempts stored is given up (reported to
    ``on_give_up`` with that count) unless ``retry_failed``. ``on_progress`` hears of every
    trial once: stored before (record None) or ended now (its last attempt). ``fail_on``: when
    a browser's trial fails (the experiment's); ``capture``: what every trial records besides
    its measurements (the experiment's, see :func:`h2lab.runner.trial.run_one`).
    Blocks are submitted in run order, or with ``block_costs`` longest estimated first
    (:func:`h2lab.runner.executor.longest_first`: for executors that run several at once).
    Ctrl-C/SIGTERM stops the executor the orderly way and raises KeyboardInterrupt; the
    executor is closed when this returns."""
    if executor is None:
        executor = SerialExecutor()
    with signals_as_interrupt() as interrupted:
        try:
            todo, attempts = _resume(trials, store, retries, retry_failed, on_progress, on_give_up)
            if not todo:
                return []
            pages = _pages(todo)
            jobs = block_jobs(
                todo,
                attempts,
                retries=retries,
                timeout_s=timeout_s,
                results_dir=store.dir,
                origins=tuple(dict.fromkeys(o for p in pages.values() for o in p.origins)),
                pages={spec: page.digest for spec, page in pages.items()},
                fail_on=fail_on,
                capture=capture,
            )
            if block_costs is not None:
                jobs = longest_first(jobs, block_costs(jobs, pages))
            for job in jobs:
                executor.submit(job)
            return _drive(executor, store, todo, on_progress, interrupted)
        finally:
            executor.close()


def _resume(
    trials: Sequence[TrialSpec],
    store: Store,
    retries: int,
    retry_failed: bool,
    on_progress: ProgressFn | None,
    on_give_up: GiveUpFn | None,
) -> tuple[list[TrialSpec], dict[str, int]]:
    """The trials to run (not stored ok, not given up) and the attempts stored per key; the
    others are reported."""
    if not trials:
        return [], {}
    experiment = trials[0].experiment
    done = store.done_keys(experiment)
    attempts = store.failed_attempts(experiment)  # every attempt of a key not done failed
    give_up_at = RUNS_BEFORE_GIVING_UP * (1 + retries)
    given_up = set() if retry_failed else {k for k, n in attempts.items() if n >= give_up_at}
    for t in trials:
        if t.key in done and on_progress:
            on_progress(t, None)
        elif t.key in given_up and on_give_up:
            on_give_up(t, attempts[t.key])
    return [t for t in trials if t.key not in done and t.key not in given_up], attempts


def _pages(trials: Sequence[TrialSpec]) -> dict[str, Page]:
    """The trials' pages by spec, in order of first use. Resolving a page here materializes it
    once, before any worker reads it."""
    pages: dict[str, Page] = {}
    for t in trials:
        if t.page not in pages:
            pages[t.page] = resolve_page(t.page)
    return pages


def _drive(
    executor: Executor,
    store: Store,
    todo: Sequence[TrialSpec],
    on_progress: ProgressFn | None,
    interrupted: Callable[[], None],
) -> list[TrialRecord]:
    """Store every attempt the executor streams back, as it arrives. On an interrupt, the
    executor is stopped and what ended meanwhile is still stored."""
    specs = {t.key: t for t in todo}
    written: list[TrialRecord] = []

    def keep(event: Event) -> None:
        if isinstance(event, TrialDone):
            if NO_SPACE in (event.record.error or ""):  # not the trial's fault: not stored
                raise OutOfSpace(store.dir, f"trial {event.record.trial_key} could not write")
            try:
                trial_id = store.add_trial(event.record, event.resources, event.steps)
                store.seal_if_due()  # a large store's resource rows into Parquet, now and then
            except Exception as exc:
                if not is_out_of_space(exc):
                    raise
                raise OutOfSpace(store.dir, f"storing trial {event.record.trial_key}") from exc
            record = dataclasses.replace(event.record, id=trial_id)
            written.append(record)
            if event.last and on_progress:
                on_progress(specs[record.trial_key], record)

    try:
        for event in executor.events(interrupted):
            keep(event)
            interrupted()  # a signal lost in an at-fork hook during that trial
        interrupted()
    except KeyboardInterrupt:
        executor.cancel()
        for event in executor.events():
            keep(event)
        raise
    except OutOfSpace:
        executor.cancel()
        for _ in executor.events():
            pass  # what ends now cannot be stored either: the same command runs it again
        raise
    return written
