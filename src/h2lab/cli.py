"""Command wiring only: parse flags, call into the package, print. (typer + rich)"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import (
    Progress,
)
from rich.table import Table

from h2lab.cli_cluster import cluster_app, secrets_folder
from h2lab.cli_common import console, enter_lab_mode, err, progress
from h2lab.cli_compare import compare as compare_command
from h2lab.cli_net import net_app
from h2lab.cli_pages import pages_app
from h2lab.cli_record import record
from h2lab.errors import H2LabError, SpecError
from h2lab.results import METRICS
from h2lab.spec.limits import DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S

if TYPE_CHECKING:
    from collections.abc import Mapping

    from h2lab.runner.matrix import TrialSpec
    from h2lab.spec.experiment import Experiment
    from h2lab.store import TrialRecord

app = typer.Typer(
    name="h2lab",
    help="A web-performance lab in one command: h1 vs h2 on real servers, real clients and "
    "an emulated network (Rattan).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(net_app, name="net")
app.add_typer(pages_app, name="pages")
app.add_typer(cluster_app, name="cluster")
DEMO_EXPERIMENT = Path(__file__).resolve().parents[2] / "experiments" / "demo.toml"
CAPTURE_HELP = (
    "record this of every trial besides its measurements: pcap = a packet capture of the "
    "client's side (capture.pcap, at most 64 MiB) with the TLS keys beside it (keylog.txt), "
    "any client (docs/capture.md)"
)


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


class _Tally:
    """The progress bar of a run, fed one finished (or skipped) trial at a time."""

    def __init__(self, progress: Progress, name: str, total: int) -> None:
        self.progress = progress
        self.task = progress.add_task(name, total=total, status="")
        self.failed = 0

    def add(self, status: str, key: str, detail: str = "") -> None:
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
        self.progress.update(self.task, advance=1, status=shown)


MAX_JOBS = 8
"""Most concurrent shards of ``h2lab run --jobs``."""


def _run_experiment(
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
    written."""
    from h2lab.runner.executor import Executor
    from h2lab.runner.run import SerialExecutor, run_trials
    from h2lab.runner.shards import LocalShardsExecutor
    from h2lab.store import Store

    if cluster is None:  # the labs are this machine's: root or rootless mode, before any thread
        enter_lab_mode()
    executor: Executor
    if cluster is not None:
        from h2lab.cluster.executor import RayExecutor, connect

        connect(*cluster)
        executor = RayExecutor(cluster[0], say=lambda line: err.print(line, soft_wrap=True))
    else:
        executor = SerialExecutor() if jobs == 1 else LocalShardsExecutor(jobs, out)
    try:
        trials = _start_run(exp_path, exp, out, only or {})
    except BaseException:
        executor.close()
        raise
    store = Store(out)
    try:
        with progress() as bar:
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
            )
    finally:
        store.close()


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


@app.command()
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
            "--capture", metavar="pcap", help=CAPTURE_HELP + " (added to the file's capture list)"
        ),
    ] = None,
) -> None:
    """Run an experiment and write OUT/report.html.

    Every trial is stored in OUT/results.sqlite as it ends; a rerun into the same OUT skips
    trials already stored ok, attempts failed ones again, and gives up a trial that failed
    every attempt of two earlier runs (unless --retry-failed)."""
    from h2lab.report import write_report
    from h2lab.spec.experiment import load_experiment, parse_capture, parse_only

    exp = load_experiment(experiment, quick=quick)
    if capture:
        added = tuple(v for c in capture for v in parse_capture(c, "command line", "--capture"))
        exp = dataclasses.replace(exp, capture=tuple(dict.fromkeys(exp.capture + added)))
    selected = parse_only(exp, only or [])
    on = None
    if cluster is not None:
        if jobs != 1:
            raise SpecError("command line", "--jobs", "not with --cluster (one lab per node)")
        on = (cluster, secrets_folder(cluster_secrets, "--cluster-secrets"))
    _run_experiment(
        experiment, exp, out, retry_failed=retry_failed, only=selected, jobs=jobs, cluster=on
    )
    for table in _summary_tables(out):
        console.print(table)
    print(f"report: {write_report(out)}")


@app.command()
def validate(experiment: Annotated[Path, typer.Argument(help="experiment file (TOML)")]) -> None:
    """Check an experiment file without running it; print how many trials it expands to.

    The file's quick variant (its \\[quick] table) is checked too."""
    from h2lab.runner.matrix import expand
    from h2lab.spec.experiment import load_experiment

    exp = load_experiment(experiment)
    quick = load_experiment(experiment, quick=True)
    extra = f" ({len(expand(quick))} with --quick)" if "quick" in experiment.read_text() else ""
    # plain print: one line however long the path (rich would wrap it)
    print(f"{experiment}: ok, {len(expand(exp))} trials{extra}")


@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", help="results folder")] = Path("h2lab-out/demo"),
) -> None:
    """Run the demo experiment (experiments/demo.toml), print its table, write its report."""
    from h2lab.spec.experiment import load_experiment

    exp = load_experiment(DEMO_EXPERIMENT)
    _run_experiment(DEMO_EXPERIMENT, exp, out)
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


_FLAG_FOR = {
    "factors.protocol": "--protocol",
    "factors.network": "--network",
    "factors.page": "PAGE",
    "factors.server": "--server",
    "factors.client": "--client",
    "factors.congestion_control": "--cc",
    "factors.initcwnd": "--initcwnd",
    "factors.tls": "--tls",
}


@app.command()
def load(
    page: Annotated[
        str,
        typer.Argument(help="synthetic:n=64,size=10KB,origins=1, warc:FILE, har:FILE, a page id"),
    ],
    protocol: Annotated[str, typer.Option(help="h1c, h1p, h1s, h2c, h2s or h3 (comma list ok)")],
    network: Annotated[str, typer.Option(help="profile name or rtt=..,down=..,up=..,loss=..")],
    server: Annotated[
        str,
        typer.Option(
            help="nginx, h2o, apache, origin:scheduler=fcfs, haproxy:backend=nginx,buffer=1MB; "
            "nginx:conf=FILE adds your config fragment (h2o:, apache: too)"
        ),
    ] = "nginx",
    client: Annotated[
        str, typer.Option(help="h2load, nghttp, or chromium:device=mobile,cpu=4,filmstrip=1")
    ] = "h2load",
    repeat: Annotated[int, typer.Option(help="trials per protocol", min=1, max=1000)] = 1,
    cc: Annotated[str, typer.Option(help="TCP congestion control")] = "cubic",
    initcwnd: Annotated[int, typer.Option(help="initial congestion window, packets")] = 10,
    tls: Annotated[str, typer.Option(help="TLS version servers offer for h1s/h2s")] = "1.3",
    seed: Annotated[int, typer.Option(help="seed of loss pattern and order", min=0)] = 0,
    timeout: Annotated[
        float,
        typer.Option(
            help="seconds a trial may take (an experiment's timeout_s)", min=1, max=MAX_TIMEOUT_S
        ),
    ] = DEFAULT_TIMEOUT_S,
    out: Annotated[Path, typer.Option(help="results folder")] = Path("h2lab-out/load"),
    as_json: Annotated[bool, typer.Option("--json", help="print trial records as JSON")] = False,
    capture: Annotated[
        list[str] | None, typer.Option("--capture", metavar="pcap", help=CAPTURE_HELP)
    ] = None,
) -> None:
    """Run K trials of one cell without an experiment file and print the metrics."""
    from h2lab.spec.experiment import Experiment, parse_capture, validate_factors
    from h2lab.store import Store

    raw = {
        "protocol": [p.strip() for p in protocol.split(",") if p.strip()],
        "network": [network],
        "page": [page],
        "server": [server],
        "client": [client],
        "congestion_control": [cc],
        "initcwnd": [initcwnd],
        "tls": [tls],
    }
    try:
        factors = validate_factors("command line", raw)
    except SpecError as exc:
        if exc.source != "command line":  # a file's own error (a server's conf= fragment)
            raise
        # name the flag, not the factor: "factors.network[0].rate" -> "--network"
        factor = ".".join(re.sub(r"\[\d+\]", "", exc.field).split(".")[:2])
        raise SpecError("command line", _FLAG_FOR.get(factor, exc.field), exc.reason) from exc
    # each `load` is a fresh question: its own experiment name keeps earlier rows apart
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S.%f")
    exp = Experiment(
        name=f"load-{stamp}",
        factors=factors,
        seed=seed,
        repetitions=repeat,
        timeout_s=timeout,
        capture=tuple(
            v for c in capture or [] for v in parse_capture(c, "command line", "--capture")
        ),
    )
    _run_experiment(None, exp, out)
    store = Store(out)
    try:
        rows = store.trials(experiment=exp.name)
    finally:
        store.close()
    if as_json:
        print(json.dumps([r.as_dict() for r in rows], indent=1))
        return
    console.print(_load_table(f"{page} over {network}", rows))
    for r in rows:
        if r.error:
            err.print(f"[yellow]{r.protocol} r{r.repetition}:[/] {r.error}")


LOAD_COLUMNS = (
    "protocol",
    "repetition",
    "status",
    "pdt_ms",
    "bytes_down",
    "bytes_up",
    "tcp_connections",
    "retransmits",
    "response_header_bytes",
)
"""`h2lab load`'s table; the browser metrics join it when some trial has them."""


def _load_table(title: str, rows: list[TrialRecord]) -> Table:
    table = Table(title=title)
    cols = list(LOAD_COLUMNS)
    # the page-level metrics only a browser measures, when some trial has them
    cols[3:3] = [m for m in ("plt_ms", "speed_index_ms", "fcp_ms") if any(
        getattr(r, m) is not None for r in rows)]  # fmt: skip
    for c in cols:
        table.add_column(c, justify="right")
    for r in rows:
        d = r.as_dict()
        table.add_row(*(f"{d[c]:.1f}" if isinstance(d[c], float) else str(d[c]) for c in cols))
    return table


EXPORT_FORMATS = ("csv", "browsertime")


@app.command()
def export(
    out: Annotated[Path, typer.Argument(help="results folder")],
    csv: Annotated[bool, typer.Option("--csv", help="write trials.csv and resources.csv")] = True,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="csv: trials.csv and resources.csv; browsertime: OUT/browsertime/<cell>/"
            "browsertime.json per browser cell and protocol, browsertime's field names",
        ),
    ] = "csv",
) -> None:
    """Export the store of OUT as CSV files beside it, or as browsertime JSON."""
    from h2lab.store import Store

    if fmt not in EXPORT_FORMATS:
        raise SpecError("command line", "--format", f"must be csv or browsertime, got {fmt!r}")
    if not (out / "results.sqlite").exists():
        raise SpecError(str(out), "results.sqlite", "no results store in this folder")
    if fmt == "browsertime":
        from h2lab.report.browsertime import export_browsertime

        for path in export_browsertime(out):
            console.print(str(path))
        return
    store = Store(out)
    try:
        for path in store.export_csv(out):
            console.print(str(path))
    finally:
        store.close()


@app.command()
def restore(out: Annotated[Path, typer.Argument(help="results folder")]) -> None:
    """Rebuild OUT/results.sqlite from OUT/trials.csv (and resources.csv when there).

    For a results folder kept without its store (reproduction/ keeps only the CSV): after a
    restore, `h2lab run` with the same experiment resumes and skips every trial stored ok."""
    from h2lab.store.restore import restore_store

    done = restore_store(out)
    resources = (
        f"{done.resources} resource rows"
        if done.resources_csv
        else "no resources.csv: restored trials have no per-resource rows"
    )
    console.print(f"restored {done.trials} trial rows into {out / 'results.sqlite'} ({resources})")


@app.command()
def report(
    out: Annotated[Path, typer.Argument(help="results folder")],
    compare: Annotated[
        list[str] | None,
        typer.Option(
            "--compare",
            metavar="FACTOR=BASELINE",
            help="compare every other level of a factor with BASELINE, paired per repetition "
            "(e.g. server=origin:push=none; repeat for more baselines of the same factor); "
            "default: the experiment's [compare]",
        ),
    ] = None,
) -> None:
    """Write OUT/report.html and CSV + Parquet of trials and resources.

    One self-contained file: verdicts with CIs, figures, decision tree, waterfalls,
    filmstrips."""
    from h2lab.report import write_report

    compared = _parse_compare(compare)
    if not (out / "results.sqlite").exists():
        raise SpecError(str(out), "results.sqlite", "no results store in this folder")
    print(f"report: {write_report(out, compare=compared)}")


app.command("compare")(compare_command)  # after `report` in --help


def _parse_compare(texts: list[str] | None) -> tuple[str, tuple[str, ...]] | None:
    from h2lab.spec.factors import COMPARABLE

    if not texts:
        return None
    factors, baselines = set(), []
    for text in texts:
        factor, sep, baseline = text.partition("=")
        if not sep or factor not in COMPARABLE or not baseline:
            raise SpecError(
                "--compare",
                text,
                f"must be FACTOR=BASELINE with FACTOR one of {', '.join(COMPARABLE)}",
            )
        factors.add(factor)
        baselines.append(baseline)
    if len(factors) > 1:
        raise SpecError("--compare", " ".join(texts), "every --compare must name the same factor")
    return factors.pop(), tuple(baselines)


@app.command()
def clean(
    all_instances: Annotated[
        bool, typer.Option("--all", help="also remove instances whose h2lab is still running")
    ] = False,
) -> None:
    """Remove namespaces, processes and state left by killed h2lab instances."""
    from h2lab.net.clean import clean_stale

    enter_lab_mode()
    removed = clean_stale(include_live=all_instances)
    console.print(
        f"removed {len(removed)} instance(s)" + (f": {' '.join(removed)}" if removed else "")
    )


@app.command()
def doctor() -> None:
    """Report what is installed and what is missing, with versions, and Rattan's delay
    overhead measured on this machine."""
    from h2lab.doctor import checks

    table = Table(title="h2lab doctor")
    for col in ("component", "status", "version / detail"):
        table.add_column(col)
    missing = 0
    for c in checks():
        table.add_row(c.name, "[green]ok[/]" if c.ok else "[red]missing[/]", c.detail)
        missing += not c.ok
    console.print(table)
    if missing:
        raise typer.Exit(1)


app.command("record")(record)  # after the others: listed after `doctor` in --help


def _error_line(message: str) -> None:
    """Exactly one line on stderr: rich would wrap it at the console width (80 columns when
    stderr is not a terminal) and replace ``:name:`` emoji codes found in paths."""
    print("h2lab: " + " ".join(message.splitlines()), file=sys.stderr, flush=True)


def main() -> None:
    import signal

    # A shell starts background jobs with SIGINT ignored, and Python keeps an inherited
    # SIG_IGN; h2lab always wants Ctrl-C/SIGINT to mean "tear down and stop".
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        # non-standalone typer returns an exit code instead of exiting (130 for Ctrl-C)
        rc = app(standalone_mode=False)
        if rc == 130:
            err.print("interrupted: stored trials are kept; rerun the same command to resume")
        sys.exit(rc if isinstance(rc, int) else 0)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        err.print("aborted")
        sys.exit(130)
    except typer.TyperException as exc:  # usage errors: unknown flag, bad value, missing argument
        _error_line(exc.format_message())
        sys.exit(2)
    except KeyboardInterrupt:
        err.print("interrupted: stored trials are kept; rerun the same command to resume")
        sys.exit(130)
    except H2LabError as exc:
        _error_line(exc.line())
        sys.exit(exc.exit_code)
