"""Benchmark: how long would the recorded experiments take on a cluster of N nodes?

Run: ``.venv/bin/python bench/cluster.py simulate [--csv FILE ...]`` (no root, no lab; default:
every ``reproduction/*/trials.csv``); ``sudo .venv/bin/python bench/cluster.py live`` runs
``bench/cluster-link-bound.toml`` (seed 001's 1 Mbit/s cells) on a local Ray cluster of one lab
node, then of two (:class:`h2lab.cluster.local.LocalCluster`), and prints ``trials_per_hour``
of each and ``speedup_2_over_1`` against the target (>= 1.6).

``simulate`` replays recorded blocks: a block (every protocol of one factor cell and one
repetition, run back to back in one lab) lasts the sum of ``duration_s`` over its rows, every
attempt and failed ones too. Blocks are handed out as ``h2lab run --cluster`` (and ``--jobs``)
hands them out, one lab per node, each to the node that becomes idle first (greedy list
scheduling, :mod:`h2lab.analysis.makespan`), in the dispatcher's order
(:func:`h2lab.runner.executor.longest_first`): the first round, then the rest, each longest
*estimated* first. The estimate (:mod:`h2lab.analysis.estimate`) is what the dispatcher knows
before the run: each block's factors as its rows record them (page, network, server, client,
TCP settings, TLS version, protocols), the page's shape (a synthetic spec's layout, an imported
capture's responses, read here), the experiment file's ``timeout_s`` and ``retries``; never a
recorded duration. Times leave out what the trials' durations do not hold: lab set-up, the gaps
between trials, and moving results back.

Printed per experiment (each csv) and for all of them as one queue (``total``): ``blocks``,
``total_h`` (the sum of block durations: one node), ``longest_h`` (the longest block), ``rho``
(Spearman's rank correlation of the estimate and the recorded duration over the blocks: how
well the estimate ranks them), and for N in 8, 32, 128 nodes ``makespan_h`` (simulated),
``bound_h``, which no schedule of the blocks beats: the most of ``ideal_h`` = total_h / N, the
longest block and the pigeonhole bound (:func:`h2lab.analysis.makespan.pigeonhole_bound`: of
the k × N + 1 longest blocks some node runs k + 1; a block is never split, since its trials are
one trial or the protocols of one pair), ``ratio`` =
makespan_h / bound_h, and ``run_order``, the ratio when blocks are handed out in run order (by
their first ``started_at``: the dispatcher before #43). Then the target: on 32 nodes, makespan
within 10% of the bound (ratio <= 1.10) for every row; a row that misses says, in hindsight,
what longest first would give knowing every duration (when that misses too, the order is not
the estimate's fault alone). Exit status 0 when every row meets the
target, 1 when one does not.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from h2lab.analysis.estimate import UNKNOWN_PAGE, BlockEstimator, PageShape, rank_correlation
from h2lab.analysis.makespan import (
    RecordedBlock,
    pigeonhole_bound,
    recorded_blocks,
    simulate_makespan,
)
from h2lab.errors import H2LabError
from h2lab.runner.executor import BlockJob, longest_first
from h2lab.runner.matrix import TrialSpec
from h2lab.spec.factors import FACTORS, TrialFactors, trial_factors
from h2lab.spec.protocols import PROTOCOLS
from h2lab.spec.vocab import one_of

ROOT = Path(__file__).resolve().parents[1]
REPRODUCTION = ROOT / "reproduction"
EXPERIMENTS = ROOT / "experiments"
NODES = (8, 32, 128)
TARGET_NODES = 32
TARGET_RATIO = 1.10
"""The target: on 32 nodes the simulated makespan is within 10% of the lower bound."""
TOTAL = "total"


@dataclass(frozen=True)
class Experiment:
    """One experiment's blocks: recorded durations (s) in run order, the dispatcher's estimate
    of each, and the recorded durations in the order the dispatcher hands the blocks out."""

    name: str
    durations: tuple[float, ...]
    estimates: tuple[float, ...]
    dispatched: tuple[float, ...]

    @property
    def total_h(self) -> float:
        return sum(self.durations) / 3600

    @property
    def longest_h(self) -> float:
        return max(self.durations, default=0.0) / 3600

    @property
    def rho(self) -> float:
        return rank_correlation(self.estimates, self.durations)

    def makespan_h(self, nodes: int, order: Sequence[float] | None = None) -> float:
        return simulate_makespan(self.dispatched if order is None else order, nodes) / 3600

    def bound_h(self, nodes: int) -> float:
        return pigeonhole_bound(self.durations, nodes) / 3600

    def ratio(self, nodes: int, order: Sequence[float] | None = None) -> float:
        bound_h = self.bound_h(nodes)
        return self.makespan_h(nodes, order) / bound_h if bound_h > 0 else 1.0

    def meets_target(self) -> bool:
        return self.ratio(TARGET_NODES) <= TARGET_RATIO


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def run_settings(root: Path = EXPERIMENTS) -> dict[str, tuple[float | None, int]]:
    """(``timeout_s``, ``retries``) of every experiment file under ``root``, by its name: what
    the dispatcher reads from the file (the trials.csv does not hold them)."""
    found: dict[str, tuple[float | None, int]] = {}
    for path in sorted(root.rglob("*.toml")):
        try:
            data = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError):
            continue
        if isinstance(data.get("name"), str):
            found[data["name"]] = (data.get("timeout_s"), int(data.get("retries", 0)))
    return found


def page_shape(spec: str) -> PageShape:
    """What the dispatcher knows of a page before the run: a synthetic spec's layout, or the
    responses of the capture an import spec names (a path relative to the repository); the
    HTTP Archive median page when neither can be read here."""
    from h2lab.pages.importers import read_capture
    from h2lab.pages.synthetic import layout, parse
    from h2lab.spec.factors import IMPORT_KINDS

    try:
        if spec.startswith("synthetic:"):
            origins, resources, _ = layout(parse(spec))
            return PageShape(
                len(resources), sum(r.size_bytes for r in resources), len(origins),
                max((r.delay_ms for r in resources), default=0.0),
            )  # fmt: skip
        kind, _, rest = spec.partition(":")
        if kind in IMPORT_KINDS:
            capture = read_capture(f"{kind}:{ROOT / rest}")
            return PageShape(len(capture.responses), capture.body_bytes, len(capture.hosts))
    except (H2LabError, OSError, ValueError):
        pass
    return UNKNOWN_PAGE


def factors_of(row: Mapping[str, str], source: str) -> TrialFactors:
    """A row's factor levels, parsed as an experiment file's are: its column, else its
    ``config_json`` (older exports keep ``tls`` and ``view`` only there), else the default."""
    config = json.loads(row.get("config_json") or "{}")
    levels = {}
    for f in FACTORS:
        value = row.get(f.column) or config.get(f.column, config.get(f.name))
        if value in (None, "") or isinstance(value, dict):
            continue
        levels[f.name] = f.parse(f.kind(value), source, f.column)
    return trial_factors(levels)


def block_jobs_of(
    blocks: Sequence[RecordedBlock], settings: Mapping[str, tuple[float | None, int]], source: str
) -> list[BlockJob]:
    """The jobs the dispatcher would have had: one per block, its trials as the rows name them
    (each trial once, however many attempts), with its experiment's timeout and retries."""
    jobs = []
    parsed: dict[tuple[str, ...], TrialFactors] = {}
    for number, block in enumerate(blocks):
        trials: dict[str, TrialSpec] = {}
        for row in sorted(block.rows, key=lambda r: datetime.fromisoformat(r["started_at"])):
            if row["trial_key"] in trials:
                continue
            levels = (*(row.get(f.column, "") for f in FACTORS), row.get("config_json", ""))
            if levels not in parsed:
                parsed[levels] = factors_of(row, source)
            trials[row["trial_key"]] = TrialSpec(
                row.get("experiment", ""), parsed[levels], int(row["repetition"]),
                one_of(PROTOCOLS, row["protocol"], "protocol"), int(row["seed"]), len(trials),
                int(row.get("warmup") or 0),
            )  # fmt: skip
        timeout_s, retries = settings.get(block.key[0], (None, 0))
        jobs.append(
            BlockJob(
                number=number, trials=tuple(trials.values()), attempts={}, retries=retries,
                timeout_s=math.inf if timeout_s is None else float(timeout_s),
                results_dir=ROOT, origins=(),
            )
        )  # fmt: skip
    return jobs


def experiment_of(
    name: str,
    blocks: Sequence[RecordedBlock],
    estimator: BlockEstimator,
    settings: Mapping[str, tuple[float | None, int]],
) -> Experiment:
    jobs = block_jobs_of(blocks, settings, name)
    estimates = estimator.jobs_s(jobs, {})
    order = longest_first(jobs, estimates)
    return Experiment(
        name,
        durations=tuple(b.duration_s for b in blocks),
        estimates=tuple(estimates),
        dispatched=tuple(blocks[job.number].duration_s for job in order),
    )


def experiments(paths: Sequence[Path]) -> list[Experiment]:
    """One :class:`Experiment` per csv (named by its folder), then the total: all csvs' blocks
    as one queue, in run order and as the dispatcher orders them."""
    settings = run_settings()
    estimator = BlockEstimator()
    found = []
    every_row: list[dict[str, str]] = []
    for path in paths:
        rows = read_rows(path)
        every_row += rows
        for spec in {r["page"] for r in rows} - set(estimator.shapes):
            estimator.shapes[spec] = page_shape(spec)
        found.append(experiment_of(path.parent.name, recorded_blocks(rows), estimator, settings))
    if len(paths) > 1:
        found.append(experiment_of(TOTAL, recorded_blocks(every_row), estimator, settings))
    return found


def format_table(found: Sequence[Experiment]) -> str:
    width = max(len("experiment"), *(len(e.name) for e in found))
    head = (
        f"{'experiment':<{width}} {'blocks':>6} {'total_h':>8} {'longest_h':>9} {'rho':>5} "
        f"{'nodes':>5} {'makespan_h':>10} {'ideal_h':>8} {'bound_h':>8} {'ratio':>6} "
        f"{'run_order':>9}"
    )
    lines = [head, "-" * len(head)]
    for e in found:
        if e.name == TOTAL:
            lines.append("-" * len(head))
        for i, nodes in enumerate(NODES):
            left = (
                f"{e.name:<{width}} {len(e.durations):>6} {e.total_h:>8.2f} {e.longest_h:>9.3f} "
                f"{e.rho:>5.2f}"
                if i == 0
                else " " * (width + 32)
            )
            lines.append(
                f"{left} {nodes:>5} {e.makespan_h(nodes):>10.3f} {e.total_h / nodes:>8.3f} "
                f"{e.bound_h(nodes):>8.3f} {e.ratio(nodes):>6.3f} "
                f"{e.ratio(nodes, e.durations):>9.3f}"
            )
    return "\n".join(lines)


def clock(hours: float) -> str:
    """Hours as REPRODUCTION.md writes wall times: "1 h 18 min", "37 min 01 s", "4 s"."""
    seconds = round(hours * 3600)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    if h:
        return f"{h} h {m:02d} min"
    return f"{m} min {s:02d} s" if m else f"{s} s"


def why_missed(e: Experiment) -> str:
    """What longest first would give in hindsight (knowing every duration, which the
    dispatcher cannot)."""
    hindsight = simulate_makespan(sorted(e.durations, reverse=True), TARGET_NODES)
    return (
        "longest first knowing every duration: ratio "
        f"{hindsight / (e.bound_h(TARGET_NODES) * 3600):.3f}"
    )


def bound_by(e: Experiment, nodes: int) -> str:
    """Which of the bounds ``bound_h`` is: "the ideal", "the longest block" or "the pigeonhole
    bound"."""
    bound_s = e.bound_h(nodes) * 3600
    if bound_s <= e.total_h * 3600 / nodes:
        return "the ideal"
    return "the longest block" if bound_s <= max(e.durations) else "the pigeonhole bound"


def target_lines(found: Sequence[Experiment]) -> list[str]:
    lines = []
    for e in found:
        verdict = "holds" if e.meets_target() else "MISSED"
        line = (
            f"  {e.name}: {verdict}, makespan {clock(e.makespan_h(TARGET_NODES))} against "
            f"bound {clock(e.bound_h(TARGET_NODES))} ({bound_by(e, TARGET_NODES)}), "
            f"ratio {e.ratio(TARGET_NODES):.3f} "
            f"(run order {e.ratio(TARGET_NODES, e.durations):.3f})"
        )
        lines.append(line if e.meets_target() else f"{line}; {why_missed(e)}")
    return lines


def simulate(args: argparse.Namespace) -> int:
    paths = [Path(p) for p in args.csv] if args.csv else sorted(REPRODUCTION.glob("*/trials.csv"))
    if not paths:
        print(f"no trials.csv under {REPRODUCTION}", file=sys.stderr)
        return 2
    found = experiments(paths)
    print(
        "recorded blocks replayed on N nodes, handed out as the dispatcher does (first round, "
        "then the rest, each longest estimated first; run_order: by first started_at); hours; "
        "bound = max(ideal = total / N, longest block, pigeonhole bound); rho: estimate "
        "against recorded duration, Spearman\n"
    )
    print(format_table(found))
    print()
    print(f"target: on {TARGET_NODES} nodes makespan <= {TARGET_RATIO:g} x bound, every row")
    print("\n".join(target_lines(found)))
    missed = [e.name for e in found if not e.meets_target()]
    print(
        f"{'FAIL' if missed else 'PASS'}: {len(found) - len(missed)} of {len(found)} rows "
        f"within {TARGET_RATIO:g} x bound" + (f" (missed: {', '.join(missed)})" if missed else "")
    )
    return 1 if missed else 0


LIVE_EXPERIMENT = Path(__file__).resolve().parent / "cluster-link-bound.toml"
LIVE_TARGET = 1.6
"""The target: 2 local lab nodes run at least 1.6 times the trials per hour of one."""


def _live_run(nodes: int, folder: Path, experiment: Path) -> tuple[int, float]:
    """Run ``experiment`` on a local cluster of ``nodes`` lab nodes; (ok trials, wall s)."""
    from h2lab.cluster.local import LocalCluster

    out = folder / f"out-{nodes}"
    with LocalCluster(folder / f"cluster-{nodes}", workers=nodes, port=6396) as c:
        argv = [sys.executable, "-m", "h2lab", "run", str(experiment), "--out", str(out)]
        argv += ["--cluster", c.address, "--cluster-secrets", str(c.secrets)]
        t0 = time.monotonic()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        wall_s = time.monotonic() - t0
    db = sqlite3.connect(out / "results.sqlite")
    try:
        (ok,) = db.execute("SELECT COUNT(*) FROM trials WHERE status = 'ok'").fetchone()
    finally:
        db.close()
    return int(ok), wall_s


def live(args: argparse.Namespace) -> int:
    """Trials per hour of one and of two local lab nodes on a link-bound experiment."""
    folder = Path(tempfile.mkdtemp(prefix="h2lab-bench-cluster-"))
    try:
        rates = {}
        for nodes in (1, 2):
            ok, wall_s = _live_run(nodes, folder, args.experiment)
            rates[nodes] = ok / wall_s * 3600
            print(f"nodes={nodes} trials_ok={ok} wall_s={wall_s:.1f} "
                  f"trials_per_hour={rates[nodes]:.0f}")  # fmt: skip
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    speedup = rates[2] / rates[1]
    holds = speedup >= LIVE_TARGET
    print(f"speedup_2_over_1={speedup:.2f} target>={LIVE_TARGET} {'PASS' if holds else 'FAIL'}")
    return 0 if holds else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    sim = sub.add_parser("simulate", help="replay recorded blocks on 8, 32 and 128 nodes")
    sim.add_argument(
        "--csv",
        nargs="+",
        metavar="FILE",
        help="trials.csv files (default: every reproduction/*/trials.csv)",
    )
    sim.set_defaults(run=simulate)
    run = sub.add_parser("live", help="trials per hour on 1 and 2 local lab nodes (root)")
    run.add_argument("--experiment", type=Path, default=LIVE_EXPERIMENT)
    run.set_defaults(run=live)
    args = parser.parse_args(argv)
    result: int = args.run(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
