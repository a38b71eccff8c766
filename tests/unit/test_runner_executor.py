"""h2lab.runner.executor: a run's trials as block jobs, one per run of trials with one seed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from h2lab.runner.executor import BlockJob, block_jobs, longest_first
from h2lab.runner.matrix import TrialSpec, expand
from h2lab.spec.experiment import Experiment, Factors
from h2lab.spec.network import parse_network


def _trials(warmup: int = 0) -> list[TrialSpec]:
    exp = Experiment(
        name="jobs",
        factors=Factors.of(
            protocol=("h1s", "h2s", "h2c"),
            page=("synthetic:n=2", "synthetic:n=4"),
            network=(parse_network("cable"),),
        ),
        seed=9,
        repetitions=2,
        warmup=warmup,
    )
    return expand(exp)


def _jobs(trials: list[TrialSpec], attempts: dict[str, int] | None = None) -> list[list[str]]:
    jobs = block_jobs(
        trials, attempts or {}, retries=1, timeout_s=9.0, results_dir=Path("/out"), origins=("o",)
    )
    assert [job.number for job in jobs] == list(range(len(jobs)))
    return [[t.key for t in job.trials] for job in jobs]


def test_one_job_per_block_in_run_order() -> None:
    trials = _trials()
    keys = _jobs(trials)
    assert len(keys) == 4  # 2 pages x 2 repetitions
    assert [k for job in keys for k in job] == [t.key for t in trials]
    by_key = {t.key: t for t in trials}
    for job in keys:
        assert len({by_key[k].seed for k in job}) == 1 and len(job) == 3


def test_warm_up_trials_run_with_the_first_block_they_copy() -> None:
    trials = _trials(warmup=2)
    keys = _jobs(trials)
    assert len(keys) == 4
    assert keys[0][:2] == [t.key for t in trials[:2]] and keys[0][0].startswith("warmup1|")


def test_a_resumed_block_is_what_is_left_of_it() -> None:
    trials = _trials()
    left = [t for i, t in enumerate(trials) if i not in (0, 1, 4)]  # block 0 has one trial left
    keys = _jobs(left)
    assert [len(job) for job in keys] == [1, 2, 3, 3]


def test_a_job_carries_the_stored_attempts_of_its_trials_only() -> None:
    trials = _trials()
    attempts = {trials[0].key: 2, trials[5].key: 1, "other|key": 4}
    jobs = block_jobs(
        trials, attempts, retries=1, timeout_s=9.0, results_dir=Path("/out"), origins=("o",)
    )
    assert jobs[0].attempts == {trials[0].key: 2}
    assert jobs[1].attempts == {trials[5].key: 1}
    assert all(job.attempts == {} for job in jobs[2:])
    assert {(job.retries, job.timeout_s, job.results_dir, job.origins) for job in jobs} == {
        (1, 9.0, Path("/out"), ("o",))
    }


def test_a_job_names_the_page_id_of_its_trials_pages_only() -> None:
    trials = _trials()
    ids = {spec: f"{i:016x}" for i, spec in enumerate(dict.fromkeys(t.page for t in trials))}
    jobs = block_jobs(
        trials, {}, retries=0, timeout_s=9.0, results_dir=Path("/out"), origins=("o",), pages=ids
    )
    for job in jobs:
        assert job.pages == {job.trials[0].page: ids[job.trials[0].page]}
    assert len({p for job in jobs for p in job.pages.values()}) == 2


def _blocks(trials: list[TrialSpec]) -> list[BlockJob]:
    return block_jobs(trials, {}, retries=0, timeout_s=9.0, results_dir=Path("/out"), origins=())


def _reps(jobs: list[BlockJob]) -> list[int]:
    return [job.trials[-1].repetition for job in jobs]


def test_longest_first_hands_out_the_first_round_then_the_rest_longest_first() -> None:
    jobs = _blocks(_trials())  # 4 blocks: 2 pages x 2 repetitions, in rounds
    assert _reps(jobs) == [0, 0, 1, 1]
    seconds = [1.0, 5.0, 9.0, 3.0]
    ordered = longest_first(jobs, seconds)
    # round 0 first (5 s, then 1 s), then the rest (9 s, then 3 s)
    assert [job.number for job in ordered] == [1, 0, 2, 3]
    assert {job.number: job for job in ordered} == {job.number: job for job in jobs}


def test_longest_first_moves_whole_blocks_and_keeps_their_numbers() -> None:
    trials = _trials(warmup=0)
    jobs = _blocks(trials)
    ordered = longest_first(jobs, [1.0, 2.0, 4.0, 8.0])
    assert [job.number for job in ordered] == [1, 0, 3, 2]
    for job in ordered:
        assert len({t.seed for t in job.trials}) == 1  # a pair never splits
        assert job is jobs[job.number]


def test_the_warm_up_block_stays_first_however_short() -> None:
    jobs = _blocks(_trials(warmup=2))
    assert jobs[0].trials[0].warmup == 1
    ordered = longest_first(jobs, [0.5, 5.0, 9.0, 3.0])
    assert [job.number for job in ordered] == [0, 1, 2, 3]


def test_ties_keep_run_order() -> None:
    jobs = _blocks(_trials())
    assert [job.number for job in longest_first(jobs, [2.0] * 4)] == [0, 1, 2, 3]


def test_a_resumed_run_hands_out_its_first_round_still_to_run_first() -> None:
    trials = [t for t in _trials() if t.repetition == 1] + [
        dataclasses.replace(t, repetition=2) for t in _trials() if t.repetition == 1
    ]
    jobs = _blocks(trials)
    assert _reps(jobs) == [1, 1, 2, 2]
    assert _reps(longest_first(jobs, [1.0, 1.0, 7.0, 7.0])) == [1, 1, 2, 2]


def test_longest_first_wants_one_duration_per_job() -> None:
    with pytest.raises(ValueError, match="one duration per job"):
        longest_first(_blocks(_trials()), [1.0])
