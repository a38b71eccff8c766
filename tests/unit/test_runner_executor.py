"""h2lab.runner.executor: a run's trials as block jobs, one per run of trials with one seed."""

from __future__ import annotations

from pathlib import Path

from h2lab.runner.executor import block_jobs
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
