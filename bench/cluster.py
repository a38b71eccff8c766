"""Benchmark: how long would the recorded experiments take on a cluster of N nodes?

Run: ``.venv/bin/python bench/cluster.py simulate [--csv FILE ...]`` (no root, no lab; default:
every ``reproduction/*/trials.csv``); ``sudo .venv/bin/python bench/cluster.py live`` runs
``bench/cluster-link-bound.toml`` (seed 001's 1 Mbit/s cells) on a local Ray cluster of one lab
node, then of two (:class:`h2lab.cluster.local.LocalCluster`), and prints ``trials_per_hour``
of each and ``speedup_2_over_1`` against the target (>= 1.6).

``simulate`` replays recorded blocks: a block (every protocol of one factor cell and one
repetition, run back to back in one lab) lasts the sum of ``duration_s`` over its rows, every
attempt and failed ones too; blocks are handed out in run order (by their first
``started_at``), one lab per node, each to the node that becomes idle first (greedy list
scheduling, :mod:`h2lab.analysis.makespan`). Times leave out what the trials' durations do not
hold: lab set-up, the gaps between trials, and moving results back.

Printed per experiment (each csv) and for all of them as one queue (``total``): ``blocks``,
``total_h`` (the sum of block durations: one node), ``longest_h`` (the longest block), and for
N in 8, 32, 128 nodes ``makespan_h`` (simulated), ``bound_h`` = max(``ideal_h`` = total_h / N,
longest_h), which no schedule beats, and ``ratio`` = makespan_h / bound_h. Then the target:
on 32 nodes, makespan within 10% of the bound (ratio <= 1.10), per experiment and for the total.
Exit status 0 when the target holds for the total, 1 when not.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from h2lab.analysis.makespan import block_durations, lower_bound, simulate_makespan

REPRODUCTION = Path(__file__).resolve().parents[1] / "reproduction"
NODES = (8, 32, 128)
TARGET_NODES = 32
TARGET_RATIO = 1.10
"""The target: on 32 nodes the simulated makespan is within 10% of the lower bound."""
TOTAL = "total"


@dataclass(frozen=True)
class Experiment:
    """One experiment's blocks (durations in s, run order) and its simulated makespans."""

    name: str
    durations: tuple[float, ...]

    @property
    def total_h(self) -> float:
        return sum(self.durations) / 3600

    @property
    def longest_h(self) -> float:
        return max(self.durations, default=0.0) / 3600

    def makespan_h(self, nodes: int) -> float:
        return simulate_makespan(self.durations, nodes) / 3600

    def bound_h(self, nodes: int) -> float:
        return lower_bound(self.durations, nodes) / 3600

    def ratio(self, nodes: int) -> float:
        bound_h = self.bound_h(nodes)
        return self.makespan_h(nodes) / bound_h if bound_h > 0 else 1.0

    def meets_target(self) -> bool:
        return self.ratio(TARGET_NODES) <= TARGET_RATIO


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def experiments(paths: Sequence[Path]) -> list[Experiment]:
    """One :class:`Experiment` per csv (named by its folder), then the total: all csvs' blocks
    as one queue in run order."""
    found = []
    every_row: list[dict[str, str]] = []
    for path in paths:
        rows = read_rows(path)
        every_row += rows
        found.append(Experiment(path.parent.name, tuple(block_durations(rows))))
    if len(paths) > 1:
        found.append(Experiment(TOTAL, tuple(block_durations(every_row))))
    return found


def format_table(found: Sequence[Experiment]) -> str:
    width = max(len("experiment"), *(len(e.name) for e in found))
    head = (
        f"{'experiment':<{width}} {'blocks':>6} {'total_h':>8} {'longest_h':>9} "
        f"{'nodes':>5} {'makespan_h':>10} {'ideal_h':>8} {'bound_h':>8} {'ratio':>6}"
    )
    lines = [head, "-" * len(head)]
    for e in found:
        if e.name == TOTAL:
            lines.append("-" * len(head))
        for i, nodes in enumerate(NODES):
            left = (
                f"{e.name:<{width}} {len(e.durations):>6} {e.total_h:>8.2f} {e.longest_h:>9.3f}"
                if i == 0
                else " " * (width + 26)
            )
            lines.append(
                f"{left} {nodes:>5} {e.makespan_h(nodes):>10.3f} {e.total_h / nodes:>8.3f} "
                f"{e.bound_h(nodes):>8.3f} {e.ratio(nodes):>6.3f}"
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


def target_lines(found: Sequence[Experiment]) -> list[str]:
    lines = []
    for e in found:
        verdict = "holds" if e.meets_target() else "MISSED"
        bound_by = "longest block" if e.longest_h * TARGET_NODES >= e.total_h else "ideal"
        lines.append(
            f"  {e.name}: {verdict}, makespan {clock(e.makespan_h(TARGET_NODES))} against "
            f"bound {clock(e.bound_h(TARGET_NODES))} (the {bound_by}), "
            f"ratio {e.ratio(TARGET_NODES):.3f}"
        )
    return lines


def simulate(args: argparse.Namespace) -> int:
    paths = [Path(p) for p in args.csv] if args.csv else sorted(REPRODUCTION.glob("*/trials.csv"))
    if not paths:
        print(f"no trials.csv under {REPRODUCTION}", file=sys.stderr)
        return 2
    found = experiments(paths)
    print(
        "recorded blocks replayed on N nodes, greedy in run order; hours; "
        "bound = max(ideal = total / N, longest block)\n"
    )
    print(format_table(found))
    print()
    print(f"target: on {TARGET_NODES} nodes makespan <= {TARGET_RATIO:g} x bound")
    print("\n".join(target_lines(found)))
    overall = found[-1]
    missed = [e.name for e in found if not e.meets_target()]
    print(
        f"{'PASS' if overall.meets_target() else 'FAIL'}: {overall.name} ratio "
        f"{overall.ratio(TARGET_NODES):.3f}; {len(found) - len(missed)} of {len(found)} "
        f"rows within {TARGET_RATIO:g} x bound"
        + (f" (missed: {', '.join(missed)})" if missed else "")
    )
    return 0 if overall.meets_target() else 1


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
