"""Where blocks run: the seam between the driver and its executors (pure: no I/O).

The driver (:func:`h2lab.runner.run.run_trials`) decides blocks, rounds, seeds, retries and
resume, and alone writes the store. An executor decides where a block runs: in this process
(:class:`h2lab.runner.session.SerialExecutor`), in worker processes on this machine
(:class:`h2lab.runner.shards.LocalShardsExecutor`), or on the lab nodes of a Ray cluster
(:class:`h2lab.cluster.executor.RayExecutor`). It is handed
:class:`BlockJob`\\ s and streams back one :class:`TrialDone` per attempt and a
:class:`BlockDone` per block; a trial's artifacts go straight to the results folder the job
names. Trial keys do not depend on the executor, so a run can move between executors and resume.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from h2lab.results import ResourceTiming, StepTiming, TrialRecord
from h2lab.runner.matrix import TrialSpec
from h2lab.spec.experiment import Capture, FailOn


@dataclass(frozen=True)
class BlockJob:
    """One block to run: trials that share a seed and run back to back, in one lab."""

    number: int
    """the block's place among the run's jobs (its :class:`BlockDone` names it)"""
    trials: tuple[TrialSpec, ...]
    """the block's trials not yet stored ok, in run order"""
    attempts: Mapping[str, int]
    """attempts already stored per trial key (none: 0); the next attempt is one more, and so
    is the number of its artifact folder (:func:`h2lab.store.sqlite.artifacts_dir`)"""
    retries: int
    """a failed trial is attempted again at once, up to this many more times"""
    timeout_s: float
    """how long one trial may take"""
    results_dir: Path
    """the run's results folder: every attempt's artifacts go below it"""
    origins: tuple[str, ...]
    """every origin of the run's pages, in order: a lab gives each its address once, so an
    origin has the same address in every lab of the run"""
    fail_on: FailOn = "document"
    """when a browser's trial fails (:attr:`h2lab.spec.experiment.Experiment.fail_on`)"""
    capture: tuple[Capture, ...] = ()
    """what every trial records besides its measurements
    (:attr:`h2lab.spec.experiment.Experiment.capture`)"""
    pages: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """the page id of each page spec of the trials: a lab on another machine loads the page
    by its id (fetched from the driver once), never by resolving the spec there"""


@dataclass(frozen=True)
class TrialDone:
    """One attempt of a trial ended (ok or failed)."""

    record: TrialRecord
    """what it measured (``id`` is None: the driver stores it)"""
    resources: tuple[ResourceTiming, ...]
    """one row per resource the client reported"""
    last: bool
    """no further attempt of this trial follows in this block: it is ok, it is out of retries,
    or its server did not start"""
    steps: tuple[StepTiming, ...] = ()
    """a journey's steps after its first (issue #57)"""


@dataclass(frozen=True)
class BlockDone:
    """Every trial of a block has ended; the executor is ready for another block there."""

    number: int
    """the :attr:`BlockJob.number` of the block"""


Event = TrialDone | BlockDone


def _never() -> None:
    """The default interrupt check: nothing to raise."""


class Executor(Protocol):
    """Runs blocks somewhere and streams back what each trial measured."""

    def submit(self, job: BlockJob) -> None:
        """Queue ``job``; it runs when a place for it is free, in the order submitted."""

    def events(self, check: Callable[[], None] = _never) -> Iterator[Event]:
        """The events of the submitted jobs as they happen; ends when every job has ended
        (after :meth:`cancel`: when everything running has stopped). ``check`` is called
        while waiting and raises to stop (:func:`h2lab.runner.run.signals_as_interrupt`)."""
        ...

    def cancel(self) -> None:
        """Stop the orderly way: no queued job starts, a running trial ends or is interrupted,
        every lab is torn down. :meth:`events` then yields what still ended, and ends."""

    def close(self) -> None:
        """Release everything (cancelling what still runs); the executor is not used again."""


def block_jobs(
    trials: Sequence[TrialSpec],
    attempts: Mapping[str, int],
    *,
    retries: int,
    timeout_s: float,
    results_dir: Path,
    origins: tuple[str, ...],
    pages: Mapping[str, str] | None = None,
    fail_on: FailOn = "document",
    capture: tuple[Capture, ...] = (),
) -> list[BlockJob]:
    """``trials`` (in run order) as one job per block: each run of consecutive trials with
    one seed (:func:`h2lab.runner.matrix.block_seed`; the warm-up trials share the first
    block's), with the stored attempts of its trials and the ids of its pages."""
    groups: list[list[TrialSpec]] = []
    for t in trials:
        if groups and groups[-1][0].seed == t.seed:
            groups[-1].append(t)
        else:
            groups.append([t])
    return [
        BlockJob(
            number=i,
            trials=tuple(group),
            attempts={t.key: attempts[t.key] for t in group if attempts.get(t.key)},
            retries=retries,
            timeout_s=timeout_s,
            results_dir=results_dir,
            origins=origins,
            pages={t.page: pages[t.page] for t in group} if pages else {},
            fail_on=fail_on,
            capture=capture,
        )
        for i, group in enumerate(groups)
    ]


def longest_first(jobs: Sequence[BlockJob], seconds: Sequence[float]) -> list[BlockJob]:
    """``jobs`` in the order a run on several labs hands them out, ``seconds`` being each
    job's estimated duration (:mod:`h2lab.analysis.estimate`): longest first (LPT, Graham
    1969), so that no long block starts last, in two groups. First the job holding the warm-up
    trials and the first round still to run (the lowest repetition among ``jobs``), so that
    every cell has a repetition early and a run stopped there covers the whole design; then
    every other job. Ties keep run order. Whole jobs move, so pairs stay together, and each
    keeps its :attr:`BlockJob.number`."""
    if len(seconds) != len(jobs):
        raise ValueError(f"need one duration per job: {len(jobs)} jobs, {len(seconds)} durations")
    first_round = min((job.trials[0].repetition for job in jobs if job.trials), default=0)

    def key(i: int) -> tuple[bool, bool, float, int]:
        trials = jobs[i].trials
        warm = any(t.warmup for t in trials)
        later = bool(trials) and trials[0].repetition != first_round
        return (not warm, later, -seconds[i], i)

    return [jobs[i] for i in sorted(range(len(jobs)), key=key)]
