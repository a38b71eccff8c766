"""Command wiring only: parse flags, call into the package, print. (typer + rich)"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from h2lab.errors import H2LabError, SpecError
from h2lab.spec.experiment import DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S

if TYPE_CHECKING:
    from collections.abc import Mapping

    from h2lab.runner.matrix import TrialSpec

app = typer.Typer(
    name="h2lab",
    help="A web-performance lab in one command: h1 vs h2 on real servers, real clients and "
    "an emulated network (Rattan).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True)

DEMO_EXPERIMENT = Path(__file__).resolve().parents[2] / "experiments" / "demo.toml"


def _require_root() -> None:
    import os

    if os.geteuid() != 0:
        raise H2LabError("h2lab needs root for network namespaces (run it with sudo)")


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=err,
    )


def _write_meta(exp_path: Path | None, exp: object, out: Path, n_trials: int) -> None:
    from h2lab.spec.experiment import Experiment

    assert isinstance(exp, Experiment)
    (out / "experiment.json").write_text(
        json.dumps(
            {
                "name": exp.name,
                "source": str(exp_path or exp.source),
                "seed": exp.seed,
                "repetitions": exp.repetitions,
                "retries": exp.retries,
                "warmup": exp.warmup,
                "outlier_rule": exp.outlier_rule,
                "compare": dataclasses.asdict(exp.compare) if exp.compare else None,
                "trials": n_trials,
                "text": exp_path.read_text() if exp_path else None,
            },
            indent=1,
        )
    )


def _note_strangers(out: Path, name: str, stored: set[str], keys: set[str]) -> None:
    strangers = sorted(stored - keys)
    if strangers:
        # the key holds the page spec with a file path resolved from the current folder, so a
        # run of the same file from another folder (or an edited file) does not resume
        err.print(
            f"[yellow]note[/] {out / 'results.sqlite'} holds {len(strangers)} trials of "
            f"{name} that this file does not have (first: {strangers[0]}); they are kept "
            "and reported beside this run's (changed file, or page paths resolved from another "
            "folder)",
            soft_wrap=True,
        )


def _start_run(
    exp_path: Path | None, exp: object, out: Path, only: Mapping[str, frozenset[str]]
) -> list[TrialSpec]:
    """The run's trials (those ``only`` selects), after the checks and records every run starts
    with: root, the store's schema, ``experiment.json``, and a note on stored trials this file
    does not have."""
    from h2lab.runner.matrix import expand, select
    from h2lab.spec.experiment import Experiment
    from h2lab.store import Store

    assert isinstance(exp, Experiment)
    trials = expand(exp)
    _require_root()
    store = Store(out)
    try:
        _write_meta(exp_path, exp, out, len(trials))
        _note_strangers(out, exp.name, store.done_keys(exp.name), {t.key for t in trials})
    finally:
        store.close()
    return select(trials, only)


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


def _run_experiment(
    exp_path: Path | None,
    exp: object,
    out: Path,
    *,
    retry_failed: bool = False,
    only: Mapping[str, frozenset[str]] | None = None,
    shard_of: tuple[int, int] | None = None,
    claims: str = "",
) -> None:
    """Run ``exp`` (the trials ``only`` selects) into ``out`` with a progress bar; with
    ``shard_of`` (index, count) as that shard of the sharded run ``claims``: it takes blocks
    from the store one at a time as it is ready for them, and reports each trial as one JSON
    line on stdout (``--jobs`` reads them; trials stored before, only the first shard)."""
    from h2lab.runner.matrix import expand, for_shard, select
    from h2lab.runner.run import run_trials
    from h2lab.spec.experiment import Experiment
    from h2lab.store import Store, TrialRecord

    assert isinstance(exp, Experiment)
    if shard_of is None:
        trials = _start_run(exp_path, exp, out, only or {})
    else:
        _require_root()
        trials = for_shard(select(expand(exp), only or {}), *shard_of)
    store = Store(out)
    claim = None
    if shard_of is not None:
        mark = f"{shard_of[0] + 1}/{shard_of[1]}"

        def claim(t: TrialSpec) -> bool:
            return store.claim_block(claims, str(t.seed), mark)

    def line(status: str, key: str, detail: str = "") -> None:
        print(json.dumps({"status": status, "key": key, "detail": detail}), flush=True)

    try:
        with contextlib.ExitStack() as stack:
            if shard_of is None:
                tally = _Tally(stack.enter_context(_progress()), exp.name, len(trials))
                report = tally.add
            else:
                report = line

            # every shard sees the trials stored before; the first one reports them
            reports_stored = shard_of is None or shard_of[0] == 0

            def on_progress(t: TrialSpec, record: TrialRecord | None) -> None:
                if record is None:
                    if reports_stored:
                        report("resumed", t.key)
                else:
                    report(record.status, t.key, record.error or "")

            def on_give_up(t: TrialSpec, attempts: int) -> None:
                if reports_stored:
                    report("given-up", t.key, str(attempts))

            run_trials(
                trials,
                store,
                timeout_s=exp.timeout_s,
                retries=exp.retries,
                retry_failed=retry_failed,
                on_progress=on_progress,
                on_give_up=on_give_up,
                claim=claim,
            )
    finally:
        store.close()


MAX_JOBS = 8
"""Most concurrent shards of ``h2lab run --jobs``."""
SHARD_STOP_S = 120.0
"""How long ``--jobs`` waits for an interrupted shard to tear its lab down before killing it."""


def _run_jobs(
    exp_path: Path,
    exp: object,
    out: Path,
    jobs: int,
    *,
    quick: bool,
    retry_failed: bool,
    only: list[str],
    selected: Mapping[str, frozenset[str]],
) -> None:
    """Run ``exp`` (the trials ``selected`` keeps, from the ``--only`` texts ``only``) as
    ``jobs`` concurrent shards, each its own ``h2lab run --shard`` process with its own lab,
    taking blocks from one run-wide pool (``--claims``), all writing to one store; one progress
    bar. Ctrl-C/SIGTERM stops every shard the orderly way. A shard's own output goes to
    ``out/shard-K.log``."""
    import os
    import queue
    import signal
    import subprocess
    import threading
    import uuid

    from h2lab.pages import resolve_page
    from h2lab.runner.run import signals_as_interrupt
    from h2lab.spec.experiment import Experiment

    assert isinstance(exp, Experiment)
    trials = _start_run(exp_path, exp, out, selected)  # the schema before the shards open it
    for page in dict.fromkeys(t.page for t in trials):
        resolve_page(page)  # written once here, not raced by the shards
    argv = [sys.executable, "-m", "h2lab", "run", str(exp_path), "--out", str(out)]
    argv += ["--quick"] * quick + ["--retry-failed"] * retry_failed
    argv += [arg for text in only for arg in ("--only", text)]
    argv += ["--claims", uuid.uuid4().hex]  # this run's blocks, taken one at a time
    lines: queue.Queue[tuple[int, str | None]] = queue.Queue()
    procs: list[subprocess.Popen[str]] = []

    def pump(k: int, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for text in proc.stdout:
            lines.put((k, text))
        lines.put((k, None))

    with signals_as_interrupt() as interrupted, _progress() as progress:
        tally = _Tally(progress, exp.name, len(trials))
        try:
            for k in range(jobs):
                with (out / f"shard-{k + 1}.log").open("w") as log:
                    # own session: a Ctrl-C reaches h2lab only, which stops each shard once
                    proc = subprocess.Popen(
                        [*argv, "--shard", f"{k + 1}/{jobs}"],
                        stdout=subprocess.PIPE,
                        stderr=log,
                        text=True,
                        start_new_session=True,
                    )
                procs.append(proc)
                threading.Thread(target=pump, args=(k, proc), daemon=True).start()
            running = jobs
            while running:
                interrupted()
                try:
                    k, text = lines.get(timeout=0.5)
                except queue.Empty:
                    continue
                if text is None:
                    running -= 1
                    continue
                try:
                    msg = json.loads(text)
                    tally.add(msg["status"], msg["key"], msg["detail"])
                except (ValueError, KeyError):
                    err.print(f"shard {k + 1}: {text.rstrip()}", soft_wrap=True)
        except KeyboardInterrupt:
            for proc in procs:
                if proc.poll() is None:
                    os.kill(proc.pid, signal.SIGINT)
            for proc in procs:
                try:
                    proc.wait(timeout=SHARD_STOP_S)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            raise
    codes = [p.wait() for p in procs]
    bad = [(k + 1, c) for k, c in enumerate(codes) if c != 0]
    if bad:
        k, code = bad[0]
        raise H2LabError(
            f"shard {k}/{jobs} exited with {code} (see {out / f'shard-{k}.log'}); rerun the "
            "same command to resume"
        )


SUMMARY_METRICS = ("pdt_ms", "plt_ms", "speed_index_ms")
"""The table's metrics, each shown when some trial has it (plt/SpeedIndex: browsers only)."""


def _summary_tables(out: Path) -> list[Table]:
    """One table per metric that some trial has: median per protocol and the paired ratios."""
    from h2lab.analysis.summary import summarize
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
        for col in ("page", "network", "server", "client"):
            table.add_column(col)
        for p in protocols:
            table.add_column(f"{p} {metric}", justify="right")
        for r in pairs:
            table.add_column(f"{r} (paired)", justify="right")
        table.add_column("n", justify="right")
        for c in cells:
            n = min(c.n_ok.values()) if c.n_ok else 0
            fails = sum(c.n_failed.values())
            table.add_row(
                *c.cell[:4],
                *(f"{c.medians[p]:.0f}" if p in c.medians else "-" for p in protocols),
                *(f"{c.ratios[r][0]:.2f}" if r in c.ratios else "-" for r in pairs),
                f"{n}" + (f" ({fails} failed)" if fails else ""),
            )
        tables.append(table)
    return tables


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
    shard_of: Annotated[
        str | None, typer.Option("--shard", hidden=True, help="K/N: shard K of N (--jobs)")
    ] = None,
    claims: Annotated[
        str, typer.Option("--claims", hidden=True, help="the sharded run's id (--jobs)")
    ] = "",
) -> None:
    """Run an experiment and write OUT/report.html.

    Every trial is stored in OUT/results.sqlite as it ends; a rerun into the same OUT skips
    trials already stored ok, attempts failed ones again, and gives up a trial that failed
    every attempt of two earlier runs (unless --retry-failed)."""
    from h2lab.report import write_report
    from h2lab.spec.experiment import load_experiment, parse_only

    exp = load_experiment(experiment, quick=quick)
    selected = parse_only(exp, only or [])
    if shard_of is not None:
        _run_experiment(
            experiment,
            exp,
            out,
            retry_failed=retry_failed,
            only=selected,
            shard_of=_parse_shard(shard_of),
            claims=claims,
        )
        return
    if jobs > 1:
        _run_jobs(
            experiment,
            exp,
            out,
            jobs,
            quick=quick,
            retry_failed=retry_failed,
            only=only or [],
            selected=selected,
        )
    else:
        _run_experiment(experiment, exp, out, retry_failed=retry_failed, only=selected)
    for table in _summary_tables(out):
        console.print(table)
    print(f"report: {write_report(out)}")


def _parse_shard(text: str) -> tuple[int, int]:
    k, sep, n = text.partition("/")
    if not (sep and k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n) <= MAX_JOBS):
        raise SpecError("--shard", text, f"must be K/N with 1 <= K <= N <= {MAX_JOBS}")
    return int(k) - 1, int(n)


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
        "loadEventEnd; speed_index_ms: WebPageTest's SpeedIndex (browsers only). Paired ratio: "
        "median over blocks of metric(h2)/metric(h1); below 1 means h2 was faster."
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
        str, typer.Option(help="nginx, h2o, apache, origin:scheduler=fcfs, haproxy:backend=nginx")
    ] = "nginx",
    client: Annotated[
        str, typer.Option(help="h2load, nghttp, or chromium:device=mobile,cpu=4,filmstrip=1")
    ] = "h2load",
    repeat: Annotated[int, typer.Option(help="trials per protocol", min=1, max=1000)] = 1,
    cc: Annotated[str, typer.Option(help="TCP congestion control")] = "cubic",
    initcwnd: Annotated[int, typer.Option(help="initial congestion window, packets")] = 10,
    seed: Annotated[int, typer.Option(help="seed of loss pattern and order", min=0)] = 0,
    timeout: Annotated[
        float,
        typer.Option(
            help="seconds a trial may take (an experiment's timeout_s)", min=1, max=MAX_TIMEOUT_S
        ),
    ] = DEFAULT_TIMEOUT_S,
    out: Annotated[Path, typer.Option(help="results folder")] = Path("h2lab-out/load"),
    as_json: Annotated[bool, typer.Option("--json", help="print trial records as JSON")] = False,
) -> None:
    """Run K trials of one cell without an experiment file and print the metrics."""
    from h2lab.spec.experiment import Experiment, validate_factors
    from h2lab.store import Store

    raw = {
        "protocol": [p.strip() for p in protocol.split(",") if p.strip()],
        "network": [network],
        "page": [page],
        "server": [server],
        "client": [client],
        "congestion_control": [cc],
        "initcwnd": [initcwnd],
    }
    try:
        factors = validate_factors("command line", raw)
    except SpecError as exc:
        # name the flag, not the factor: "factors.network[0].rate" -> "--network"
        factor = ".".join(re.sub(r"\[\d+\]", "", exc.field).split(".")[:2])
        raise SpecError("command line", _FLAG_FOR.get(factor, exc.field), exc.reason) from exc
    # each `load` is a fresh question: its own experiment name keeps earlier rows apart
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S.%f")
    exp = Experiment(
        name=f"load-{stamp}", factors=factors, seed=seed, repetitions=repeat, timeout_s=timeout
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
    table = Table(title=f"{page} over {network}")
    cols = [
        "protocol",
        "repetition",
        "status",
        "pdt_ms",
        "bytes_down",
        "bytes_up",
        "tcp_connections",
        "retransmits",
        "response_header_bytes",
    ]
    # the page-level metrics only a browser measures, when some trial has them
    cols[3:3] = [m for m in ("plt_ms", "speed_index_ms", "fcp_ms") if any(
        getattr(r, m) is not None for r in rows)]  # fmt: skip
    for c in cols:
        table.add_column(c, justify="right")
    for r in rows:
        d = r.as_dict()
        table.add_row(*(f"{d[c]:.1f}" if isinstance(d[c], float) else str(d[c]) for c in cols))
    console.print(table)
    for r in rows:
        if r.error:
            err.print(f"[yellow]{r.protocol} r{r.repetition}:[/] {r.error}")


@app.command()
def export(
    out: Annotated[Path, typer.Argument(help="results folder")],
    csv: Annotated[bool, typer.Option("--csv", help="write trials.csv and resources.csv")] = True,
) -> None:
    """Export the store of OUT as CSV files beside it."""
    from h2lab.store import Store

    if not (out / "results.sqlite").exists():
        raise SpecError(str(out), "results.sqlite", "no results store in this folder")
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


def _parse_compare(texts: list[str] | None) -> tuple[str, tuple[str, ...]] | None:
    from h2lab.spec.experiment import COMPARE_FACTORS

    if not texts:
        return None
    factors, baselines = set(), []
    for text in texts:
        factor, sep, baseline = text.partition("=")
        if not sep or factor not in COMPARE_FACTORS or not baseline:
            raise SpecError(
                "--compare",
                text,
                f"must be FACTOR=BASELINE with FACTOR one of {', '.join(COMPARE_FACTORS)}",
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

    _require_root()
    removed = clean_stale(include_live=all_instances)
    console.print(
        f"removed {len(removed)} instance(s)" + (f": {' '.join(removed)}" if removed else "")
    )


net_app = typer.Typer(help="The emulated network: list profiles, check a link, open a shell.")
app.add_typer(net_app, name="net")


@net_app.command("profiles")
def net_profiles() -> None:
    """List the named network profiles with their values and sources."""
    from h2lab.net.profiles import PRESETS
    from h2lab.spec.network import parse_network

    table = Table(title="network profiles")
    for col in ("name", "values", "source"):
        table.add_column(col)
    for name, preset in PRESETS.items():
        table.add_row(name, parse_network(name).describe(), preset.source)
    console.print(table)


@net_app.command("check")
def net_check(
    profile: Annotated[str, typer.Argument(help="profile name or rtt=..,down=..,loss=..")],
    as_json: Annotated[bool, typer.Option("--json", help="print rows as JSON")] = False,
    quick: Annotated[bool, typer.Option(help="fewer samples, shorter flows")] = False,
    seed: Annotated[int, typer.Option(help="loss seed", min=0)] = 1,
    cc: Annotated[str, typer.Option(help="TCP congestion control")] = "cubic",
) -> None:
    """Measure the link for PROFILE and compare with what was asked (exit 1 if a row fails)."""
    from h2lab.net.check import check
    from h2lab.net.lab import Lab
    from h2lab.spec.experiment import CONGESTION_CONTROLS
    from h2lab.spec.network import parse_network
    from h2lab.spec.tcp import TcpSettings

    network = parse_network(profile, "command line", field="PROFILE")
    if cc not in CONGESTION_CONTROLS:
        raise SpecError(
            "command line", "--cc", f"unknown {cc!r} ({', '.join(CONGESTION_CONTROLS)})"
        )
    _require_root()
    with Lab(("check.h2lab.test",)) as lab:
        rows = check(lab, network, seed, TcpSettings(cc), quick=quick)
    if as_json:
        print(json.dumps([r.as_dict() for r in rows], indent=1))
    else:
        table = Table(title=f"net check {network.describe()}")
        for col in ("metric", "direction", "asked", "measured", "unit", "tolerance", "pass"):
            table.add_column(col)
        for r in rows:
            verdict = (
                "-" if r.passed is None else ("[green]pass[/]" if r.passed else "[red]FAIL[/]")
            )
            table.add_row(r.metric, r.direction, f"{r.asked:g}" if r.asked is not None else "-",
                          f"{r.measured:g}" if r.measured is not None else "-", r.unit,
                          r.tolerance, verdict)  # fmt: skip
        console.print(table)
    if any(r.passed is False for r in rows):
        raise typer.Exit(1)


@net_app.command("shell")
def net_shell(
    profile: Annotated[str, typer.Argument(help="profile name or rtt=..,down=..,loss=..")],
    seed: Annotated[int, typer.Option(help="loss seed", min=0)] = 1,
) -> None:
    """Open a shell in the client namespace with the link up (like mm-shell); exit to tear down.

    The servers side answers at 10.2.0.1 (name server.h2lab.test); run a server there with
    `ip netns exec <servers namespace> ...` from another terminal.
    """
    import os
    import subprocess

    from h2lab.net.lab import Lab
    from h2lab.net.netns import exec_argv
    from h2lab.spec.network import parse_network
    from h2lab.spec.tcp import TcpSettings

    network = parse_network(profile, "command line", field="PROFILE")
    _require_root()
    with Lab(("server.h2lab.test",)) as lab, lab.link(network, seed, TcpSettings()) as link:
        err.print(
            f"client namespace {link.client_ns}, servers namespace {lab.servers_ns} "
            f"(server.h2lab.test = {lab.origin_ips['server.h2lab.test']}); link: "
            f"{network.describe()}. Exit the shell to tear down."
        )
        shell = os.environ.get("SHELL", "/bin/bash")
        env = {**os.environ, "H2LAB_NETWORK": network.describe(), "PS1": "[h2lab] \\w$ "}
        subprocess.run(exec_argv(link.client_ns, [shell]), env=env, check=False)


pages_app = typer.Typer(help="Pages: list, show, generate, import and check stored pages.")
app.add_typer(pages_app, name="pages")


def _page_row(page: object) -> tuple[str, ...]:
    from h2lab.pages import Page

    assert isinstance(page, Page)
    return (
        page.digest,
        page.name,
        str(len(page.origins)),
        str(len(page.resources)),
        f"{page.total_body_bytes / 1000:.1f}",
        page.entry.url(page.schemes.get(page.entry.origin, "https")),
    )


def _pages_table(title: str, pages: list[object]) -> Table:
    table = Table(title=title)
    for col in ("id", "name", "origins", "resources", "body_kB", "entry"):
        table.add_column(col)
    for p in pages:
        table.add_row(*_page_row(p))
    return table


@pages_app.command("list")
def pages_list() -> None:
    """List the stored pages (imported and generated) with their ids."""
    from h2lab.pages.manifest import load_page, pages_root

    pages = []
    for mf in sorted(pages_root().glob("*/manifest.json")):
        try:
            pages.append(load_page(mf.parent))
        except H2LabError as exc:
            err.print(f"skipped {mf.parent.name}: {exc.line()}")
    console.print(_pages_table(f"pages in {pages_root()}", pages))  # type: ignore[arg-type]


@pages_app.command("show")
def pages_show(
    page: Annotated[str, typer.Argument(help="page id, name, spec or folder")],
    limit: Annotated[int, typer.Option(help="resources to list (0: all)", min=0)] = 40,
) -> None:
    """Show a page: origins, and its resources with status, type and size."""
    from h2lab.pages import resolve_page

    p = resolve_page(page, "command line")
    console.print(_pages_table(p.source or p.name, [p]))
    table = Table(title="resources")
    for col in ("#", "method", "status", "url", "content_type", "body_B"):
        table.add_column(col)
    shown = p.resources if limit == 0 else p.resources[:limit]
    for i, r in enumerate(shown):
        table.add_row(str(i), r.method, str(r.status), r.url(), r.content_type, str(r.size_bytes))
    console.print(table)
    if len(shown) < len(p.resources):
        console.print(f"... {len(p.resources) - len(shown)} more (--limit 0 lists all)")


@pages_app.command("synth")
def pages_synth(
    spec: Annotated[str, typer.Argument(help="generator spec, e.g. synthetic:n=64,size=10KB")],
) -> None:
    """Generate a synthetic page (once; the same spec gives the same page id)."""
    from h2lab.pages import resolve_page

    if not spec.startswith("synthetic:"):
        raise SpecError("command line", "SPEC", f"expected synthetic:..., got {spec!r}")
    p = resolve_page(spec, "command line")
    console.print(_pages_table("generated", [p]))


@pages_app.command("import")
def pages_import(
    source: Annotated[str, typer.Argument(help="FILE.warc\\[.gz], FILE.har, or FOLDER#ENTRY")],
    name: Annotated[str | None, typer.Option(help="page name (default: from the file)")] = None,
    host: Annotated[str | None, typer.Option(help="folder import: the origin's host name")] = None,
    follow_symlinks: Annotated[
        bool, typer.Option(help="folder import: follow symlinks that leave the folder")
    ] = False,
) -> None:
    """Import a real page (WARC, HAR with bodies, or a folder) into the page store.

    Prints its id, and a note for each response skipped or dropped."""
    from h2lab.pages.importers import read_capture, read_folder, store

    spec = source
    kind = source.split(":", 1)[0]
    if kind not in ("warc", "har", "dir"):
        path = source.split("#", 1)[0]
        if Path(path).is_dir():
            kind = "dir"
        elif path.endswith((".warc", ".warc.gz")):
            kind = "warc"
        elif path.endswith(".har"):
            kind = "har"
        else:
            raise SpecError(
                "command line", "SOURCE", f"{source!r}: expected a .warc(.gz), a .har or a folder"
            )
        spec = f"{kind}:{source}"
    if kind == "dir":
        folder, _, entry = spec.removeprefix("dir:").partition("#")
        capture = read_folder(
            Path(folder), entry or None, host=host, follow_symlinks=follow_symlinks
        )
    else:
        capture = read_capture(spec, "command line")
    for note in capture.notes:
        err.print(f"note: {note}")
    page = store(capture, name)
    console.print(_pages_table("imported", [page]))


@pages_app.command("check")
def pages_check(page: Annotated[str, typer.Argument(help="page id, name, spec or folder")]) -> None:
    """Check a stored page: valid manifest, every body present with its size and hash."""
    from h2lab.pages import resolve_page
    from h2lab.pages.manifest import check_bodies

    p = resolve_page(page, "command line")
    problems = check_bodies(p)
    for line in problems:
        console.print(f"[red]{line}[/]")
    console.print(
        f"{p.name} ({p.digest}): {len(p.resources)} resources, {len(p.origins)} origins, "
        f"{len(problems)} problem(s)"
    )
    if problems:
        raise typer.Exit(1)


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
