"""``h2lab run``, ``validate`` and ``demo``: an experiment file's trials, run with a progress bar
(here, in shards or on a cluster), and the summary tables printed after."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.progress import Progress
from rich.table import Table

from h2lab.cli.cluster import secrets_folder
from h2lab.cli.common import CAPTURE_HELP, console, enter_lab_mode, err, progress
from h2lab.errors import SpecError
from h2lab.results import METRICS, Status, TrialRecord

if TYPE_CHECKING:
    from collections.abc import Mapping

    from h2lab.runner.executor import Executor
    from h2lab.runner.matrix import TrialSpec
    from h2lab.runner.run import BlockCosts
    from h2lab.spec.experiment import Experiment
    from h2lab.store import Store

DEMO_EXPERIMENT = Path(__file__).resolve().parents[3] / "experiments" / "demo.toml"


def _note_strangers(out: Path, name: str, strangers: list[str]) -> None:
    if strangers:
        err.print(
            f"[yellow]note[/] {out / 'results.sqlite'} holds {len(strangers)} trials of "
            f"{name} that this file does not have (first: {strangers[0]}); they are kept "
            "and reported beside this run's (changed file, or page paths resolved from another "
            "folder)",
            soft_wrap=True,
        )


def _start_run(
    exp_path: Path | None,
    exp: Experiment,
    out: Path,
    only: Mapping[str, frozenset[str]],
) -> list[TrialSpec]:
    """The run's trials (those ``only`` selects), after the checks and records every run starts
    with: the store's schema, ``experiment.json``, and a note on stored trials this file does
    not have."""
    from h2lab.runner.start import start_run

    started = start_run(exp, exp_path, out, only)
    _note_strangers(out, exp.name, started.strangers)
    return started.trials


Outcome = Status | Literal["resumed", "given-up"]
"""What the progress bar counts of a trial: how its attempt ended, or that it was stored
before (resumed) or failed every attempt of earlier runs (given up)."""


class _Tally:
    """The progress bar of a run, fed one finished (or skipped) trial at a time. Its ETA is
    the trials left times the run's time per trial so far, counted from when it stopped
    skipping stored ones (trials of one run take 4-40 s by cell; a mean over the run holds
    where rich's 30-second window swings)."""

    def __init__(
        self, progress: Progress, name: str, total: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.progress = progress
        self.task = progress.add_task(name, total=total, status="", eta="-:--:--")
        self.failed = 0
        self.total, self.done, self.ran = total, 0, 0
        self.clock = clock
        self.started = clock()

    def add(self, status: Outcome, key: str, detail: str = "") -> None:
        if status == "failed":
            self.failed += 1
            err.print(f"[yellow]trial failed[/] {key}: {detail}")
        elif status == "given-up":
            self.failed += 1
            err.print(
                f"[yellow]trial given up[/] {key}: failed all {detail} attempts of "
                "earlier runs (--retry-failed attempts it again)",
                soft_wrap=True,
            )
        shown = (
            f"failed {self.failed}" if self.failed else ("resumed" if status == "resumed" else "")
        )
        self.done += 1
        if status in ("resumed", "given-up"):
            if not self.ran:  # the clock starts at the first trial run
                self.started = self.clock()
        else:
            self.ran += 1
        self.progress.update(self.task, advance=1, status=shown, eta=self.eta())

    def eta(self) -> str:
        """H:MM:SS left at the run's pace so far; ``-:--:--`` before a trial has run."""
        if not self.ran:
            return "-:--:--"
        left_s = round((self.total - self.done) * (self.clock() - self.started) / self.ran)
        return f"{left_s // 3600}:{left_s // 60 % 60:02d}:{left_s % 60:02d}"


MAX_JOBS = 8
"""Most concurrent shards of ``h2lab run --jobs``."""


def run_experiment(
    exp_path: Path | None,
    exp: Experiment,
    out: Path,
    *,
    retry_failed: bool = False,
    only: Mapping[str, frozenset[str]] | None = None,
    jobs: int = 1,
    cluster: tuple[str, Path] | None = None,
) -> None:
    """Run ``exp`` (the trials ``only`` selects) into ``out`` with a progress bar: in this
    process, with ``jobs`` > 1 as that many shards, each its own worker process and lab
    (``h2lab run --jobs``; a shard's own output goes to ``out/shard-K.log``), or on the lab
    nodes of the Ray cluster ``cluster`` (address, secrets folder), joined before anything is
    written. Several labs (``jobs`` > 1, a cluster) are handed the blocks longest estimated
    first (:func:`_block_costs`). One run at a time into ``out``: while this one runs, another
    is refused before it writes anything (:func:`h2lab.store.lock.run_lock`)."""
    from h2lab.runner.session import SerialExecutor
    from h2lab.runner.shards import LocalShardsExecutor
    from h2lab.store.lock import run_lock

    if cluster is None:  # the labs are this machine's: root or rootless mode, before any thread
        enter_lab_mode()
    executor: Executor
    if cluster is not None:
        from h2lab.cluster.executor import RayExecutor, connect

        connect(*cluster)
        executor = RayExecutor(cluster[0], say=lambda line: err.print(line, soft_wrap=True))
    else:
        executor = SerialExecutor() if jobs == 1 else LocalShardsExecutor(jobs, out)
    with contextlib.ExitStack() as held:
        try:  # one run at a time into a folder: a second is refused here, nothing written
            held.enter_context(run_lock(out))
            trials = _start_run(exp_path, exp, out, only or {})
        except BaseException:
            executor.close()
            raise
        _run_started(
            exp,
            out,
            trials,
            executor,
            retry_failed=retry_failed,
            costs=cluster is not None or jobs > 1,
        )


def _run_started(
    exp: Experiment,
    out: Path,
    trials: list[TrialSpec],
    executor: Executor,
    *,
    retry_failed: bool,
    costs: bool,
) -> None:
    """:func:`run_experiment`'s trials on ``executor``, the store open, the bar showing;
    ``costs``: several labs, handed the blocks longest estimated first."""
    from h2lab.runner.run import run_trials
    from h2lab.store import Store

    store = Store(out)
    try:
        block_costs = _block_costs(store, exp.name) if costs else None
        with progress(eta_field=True) as bar:
            tally = _Tally(bar, exp.name, len(trials))

            def on_progress(t: TrialSpec, record: TrialRecord | None) -> None:
                if record is None:
                    tally.add("resumed", t.key)
                else:
                    tally.add(record.status, t.key, record.error or "")

            def on_give_up(t: TrialSpec, attempts: int) -> None:
                tally.add("given-up", t.key, str(attempts))

            run_trials(
                trials,
                store,
                timeout_s=exp.timeout_s,
                retries=exp.retries,
                retry_failed=retry_failed,
                on_progress=on_progress,
                on_give_up=on_give_up,
                executor=executor,
                fail_on=exp.fail_on,
                capture=exp.capture,
                block_costs=block_costs,
            )
    finally:
        store.close()


def _block_costs(store: Store, experiment: str) -> BlockCosts:
    """How a run on several labs ranks its blocks: the estimate of
    :mod:`h2lab.analysis.estimate`, from the blocks' factors and what the store already holds
    of their cells. One lab runs them in run order instead: there the order cannot shorten
    the run, and rounds keep a stopped run balanced (docs/cluster.md, "Hand-out order")."""
    from h2lab.analysis.estimate import BlockEstimator, recorded_costs

    return BlockEstimator(recorded_costs(store.trials(experiment=experiment))).jobs_s


SUMMARY_METRICS = tuple(m.name for m in METRICS if m.judges)
"""The table's metrics, each shown when some trial has it (plt/SpeedIndex: browsers only)."""


def _summary_tables(out: Path) -> list[Table]:
    """One table per metric that some trial has: median per protocol and the paired ratios."""
    from h2lab.analysis.summary import summarize
    from h2lab.report.model import factor_texts
    from h2lab.spec.factors import report_columns
    from h2lab.store import Store

    store = Store(out)
    try:
        trials = store.trials()
    finally:
        store.close()
    tables = []
    for metric in SUMMARY_METRICS:
        cells = [c for c in summarize(trials, metric) if c.medians]
        if not cells:
            continue
        protocols = sorted({p for c in cells for p in c.medians})
        pairs = sorted({r for c in cells for r in c.ratios})
        table = Table(title=f"median {metric} per cell ({out})")
        levels = {c.cell: factor_texts(c.cell) for c in cells}
        shown = _shown_factors(list(levels.values()))
        for i in shown:
            table.add_column(list(report_columns())[i])
        for p in protocols:
            table.add_column(f"{p} {metric}", justify="right")
        for r in pairs:
            table.add_column(f"{r} (paired)", justify="right")
        table.add_column("n", justify="right")
        for c in cells:
            n = min(c.n_ok.values()) if c.n_ok else 0
            fails = sum(c.n_failed.values())
            table.add_row(
                *(levels[c.cell][i] for i in shown),
                *(f"{c.medians[p]:.0f}" if p in c.medians else "-" for p in protocols),
                *(f"{c.ratios[r][0]:.2f}" if r in c.ratios else "-" for r in pairs),
                f"{n}" + (f" ({fails} failed)" if fails else ""),
            )
        tables.append(table)
    return tables


ALWAYS_SHOWN = ("page", "network", "server", "client")
"""The factor columns the summary always shows; the others when their level varies."""


def _shown_factors(rows: list[tuple[str, ...]]) -> list[int]:
    from h2lab.spec.factors import report_columns

    return [
        i
        for i, heading in enumerate(report_columns())
        if heading in ALWAYS_SHOWN or len({r[i] for r in rows}) > 1
    ]


def _with_capture(exp: Experiment, capture: list[str]) -> Experiment:
    """The experiment with the command line's ``--capture`` values added to its own."""
    from h2lab.runner.levels import check_capture
    from h2lab.spec.experiment import parse_capture

    if not capture:
        return exp
    added = tuple(v for c in capture for v in parse_capture(c, "command line", "--capture"))
    exp = dataclasses.replace(exp, capture=tuple(dict.fromkeys(exp.capture + added)))
    check_capture(exp, "command line", "--capture")
    return exp


def run(
    experiment: Annotated[Path, typer.Argument(help="experiment file (TOML)")],
    out: Annotated[Path, typer.Option("--out", help="results folder (resumes if it exists)")],
    quick: Annotated[
        bool, typer.Option("--quick", help="the file's \\[quick] variant: fewer repetitions/levels")
    ] = False,
    retry_failed: Annotated[
        bool,
        typer.Option("--retry-failed", help="attempt again trials that failed in two earlier runs"),
    ] = False,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs",
            min=1,
            max=MAX_JOBS,
            help="run this many trials at once, each shard in its own lab (for slow links "
            "and light clients: see the trials' cpu_busy_pct)",
        ),
    ] = 1,
    only: Annotated[
        list[str] | None,
        typer.Option(
            "--only",
            metavar="FACTOR=LEVEL",
            help="run only the trials at this level (repeat: levels of one factor are "
            "alternatives, factors all apply), e.g. --only network=cell-poor; LEVEL may be a "
            "pattern (--only 'network=s002-250ms-*'); not the protocol or the \\[compare] "
            "factor, so blocks stay whole",
        ),
    ] = None,
    cluster: Annotated[
        str | None,
        typer.Option(
            "--cluster",
            metavar="ADDRESS",
            help="run the blocks on the lab nodes of this Ray cluster (HOST:PORT of its head, "
            "or auto for the one running here); the store stays here (docs/cluster.md)",
        ),
    ] = None,
    cluster_secrets: Annotated[
        Path | None,
        typer.Option(
            "--cluster-secrets",
            help="the cluster's secrets folder (h2lab cluster secrets); default "
            "$H2LAB_CLUSTER_SECRETS",
        ),
    ] = None,
    capture: Annotated[
        list[str] | None,
        typer.Option(
            "--capture",
            metavar="pcap|qlog",
            help=CAPTURE_HELP + " (added to the file's capture list)",
        ),
    ] = None,
) -> None:
    """Run an experiment and write OUT/report.html.

    Every trial is stored in OUT/results.sqlite as it ends; a rerun into the same OUT skips
    trials already stored ok, attempts failed ones again, and gives up a trial that failed
    every attempt of two earlier runs (unless --retry-failed)."""
    from h2lab.report import write_report
    from h2lab.runner.levels import load_experiment
    from h2lab.spec.experiment import parse_only

    exp = load_experiment(experiment, quick=quick)
    exp = _with_capture(exp, capture or [])
    selected = parse_only(exp, only or [])
    on = None
    if cluster is not None:
        if jobs != 1:
            raise SpecError("command line", "--jobs", "not with --cluster (one lab per node)")
        on = (cluster, secrets_folder(cluster_secrets, "--cluster-secrets"))
    run_experiment(
        experiment, exp, out, retry_failed=retry_failed, only=selected, jobs=jobs, cluster=on
    )
    for table in _summary_tables(out):
        console.print(table)
    print(f"report: {write_report(out)}")


def validate(experiment: Annotated[Path, typer.Argument(help="experiment file (TOML)")]) -> None:
    """Check an experiment file without running it; print how many trials it expands to.

    The file's quick variant (its \\[quick] table) is checked too."""
    from h2lab.runner.levels import load_experiment
    from h2lab.runner.matrix import expand

    exp = load_experiment(experiment)
    quick = load_experiment(experiment, quick=True)
    extra = f" ({len(expand(quick))} with --quick)" if exp.has_quick else ""
    # plain print: one line however long the path (rich would wrap it)
    print(f"{experiment}: ok, {len(expand(exp))} trials{extra}")


def demo(
    out: Annotated[Path, typer.Option("--out", help="results folder")] = Path("h2lab-out/demo"),
) -> None:
    """Run the demo experiment (experiments/demo.toml), print its table, write its report."""
    from h2lab.runner.levels import load_experiment

    exp = load_experiment(DEMO_EXPERIMENT)
    run_experiment(DEMO_EXPERIMENT, exp, out)
    for table in _summary_tables(out):
        console.print(table)
    console.print(
        "pdt_ms: first request -> last byte of the page (seed 002); plt_ms: navigation start -> "
        "loadEventEnd; speed_index_ms: SpeedIndex by WebPageTest's histogram method (browsers "
        "only; chromium:speed_index=wpt for its exact rules). Paired ratio: median over blocks "
        "of metric(h2)/metric(h1); below 1 means h2 was faster. The report also lists every "
        "browser metric under browsertime's names (first/last visual change, visual complete "
        "85/95/99, cls, tbt_ms, fully_loaded_ms)."
    )
    from h2lab.report import write_report

    print(f"report: {write_report(out)}")
