"""Does `h2lab run --jobs N` measure what a serial run measures? (prints a table; not a test)

    .venv/bin/python bench/jobs.py [--jobs 3] [--experiment bench/jobs-fidelity.toml] [--keep DIR]

Runs the experiment twice into a temporary folder, serially and as N concurrent shards (each
its own lab), with the same seeds, and prints per cell and protocol the median of each metric
(pdt_ms for h2load; plt_ms and speed_index_ms for browsers) in each arm and their ratio, the
paired h2/h1 ratio of each arm, each arm's wall time, median cpu_busy_pct and the number of
cpu_saturated trials. Target: every cell's jobs/serial
median within 5%, and the same h2-vs-h1 outcome in every cell. Needs root.

Where a cell's trials scatter more than 5% (lossy links), the target cannot tell shards from
noise; each cell's 95% bootstrap CI of jobs/serial (the two arms resampled independently) then
says whether the arms differ: ``ci_has_1`` counts the cells whose CI contains 1. The lossy
10 Mbit/s cells, n = 12: ``--experiment bench/jobs-lossy.toml``. Chromium (Fig. 1's 380 images on
cellular good and poor, n = 6): ``--experiment bench/jobs-chromium.toml``. Seed 002's long
delays (h2load with 40 clients, h1p against h2c, n = 6): ``--experiment bench/jobs-awp.toml``;
its 75-150 ms cells (they stay serial): ``--experiment bench/jobs-awp-short.toml``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from h2lab.report.model import metric_views
from h2lab.results import TrialRecord
from h2lab.store import Store

ROOT = Path(__file__).resolve().parents[1]
H2LAB = str(ROOT / ".venv" / "bin" / "h2lab")
TARGET = 0.05
# a cell's h1 and h2 arms for the h2-vs-h1 outcome: the first of each present in it
H1_PROTOCOLS = ("h1s", "h1p", "h1c")
H2_PROTOCOLS = ("h2s", "h2c")
RESAMPLES = 4000


def ratio_ci(
    serial: list[float], jobs: list[float], rng: np.random.Generator
) -> tuple[float, float]:
    """95% percentile-bootstrap CI of median(jobs) / median(serial), independent samples."""
    a, b = np.asarray(serial), np.asarray(jobs)
    ma = np.median(a[rng.integers(0, len(a), size=(RESAMPLES, len(a)))], axis=1)
    mb = np.median(b[rng.integers(0, len(b), size=(RESAMPLES, len(b)))], axis=1)
    low, high = np.quantile(mb / ma, [0.025, 0.975])
    return float(low), float(high)


def run_arm(exp: Path, out: Path, jobs: int) -> tuple[float, list[TrialRecord]]:
    t0 = time.monotonic()
    subprocess.run(
        [H2LAB, "run", str(exp), "--out", str(out), "--jobs", str(jobs)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    wall_s = time.monotonic() - t0
    store = Store(out)
    try:
        return wall_s, store.trials(status="ok")
    finally:
        store.close()


def values_of(records: list[TrialRecord], metric: str) -> dict[tuple[str, str, str], list[float]]:
    values: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for r in records:
        v = getattr(r, metric)
        if v is not None:
            values[(r.cell.page, r.cell.network, r.protocol)].append(v)
    return values


def first_measured(
    page: str, net: str, protocols: tuple[str, ...], *arms: dict[tuple[str, str, str], float]
) -> tuple[str, str, str] | None:
    """The cell's key for the first of ``protocols`` that every arm measured, if any."""
    for protocol in protocols:
        if all((page, net, protocol) in arm for arm in arms):
            return page, net, protocol
    return None


def outcome(s: float) -> str:
    return "h2 faster" if s <= 0.95 else "h1 faster" if s >= 1.05 else "tie"


def compare(
    metric: str, serial: list[TrialRecord], sharded: list[TrialRecord]
) -> tuple[float, int, int, int]:
    """Prints one metric's tables; returns (worst |jobs/serial - 1|, cells with the same
    outcome, cells, cells whose CI of jobs/serial contains 1)."""
    va, vb = values_of(serial, metric), values_of(sharded, metric)
    a = {k: statistics.median(v) for k, v in va.items()}
    b = {k: statistics.median(v) for k, v in vb.items()}
    rng = np.random.default_rng(1)
    print(f"\n{metric}")
    print(f"{'page':<36} {'network':<24} {'proto':<5} {'serial_ms':>10} {'jobs_ms':>10} "
          f"{'jobs/serial':>11} {'95% CI':>15}")  # fmt: skip
    ratios = []
    has_1 = 0
    for key in sorted(a):
        if key not in b:
            continue
        ratios.append(b[key] / a[key])
        low, high = ratio_ci(va[key], vb[key], rng)
        has_1 += low <= 1 <= high
        print(f"{key[0]:<36} {key[1]:<24} {key[2]:<5} {a[key]:>10.0f} {b[key]:>10.0f} "
              f"{ratios[-1]:>11.3f} {low:>7.3f}-{high:<7.3f}")  # fmt: skip
    print(f"\n{'page':<36} {'network':<24} {'s_serial':>9} {'s_jobs':>9} same_outcome")
    same = 0
    cells = sorted({(p, n) for p, n, _ in a})
    compared = 0
    for page, net in cells:
        h1 = first_measured(page, net, H1_PROTOCOLS, a, b)
        h2 = first_measured(page, net, H2_PROTOCOLS, a, b)
        if h1 is None or h2 is None:
            continue
        compared += 1
        s_a, s_b = a[h2] / a[h1], b[h2] / b[h1]
        same += outcome(s_a) == outcome(s_b)
        print(f"{page:<36} {net:<24} {s_a:>9.3f} {s_b:>9.3f} {outcome(s_a) == outcome(s_b)}")
    worst = max(abs(r - 1) for r in ratios)
    print(
        f"{metric}: jobs/serial medians: median {statistics.median(ratios):.3f}, worst |r-1| "
        f"{worst:.3f} (target <= {TARGET}); same h2-vs-h1 outcome in {same}/{compared} "
        f"cells; ci_has_1 in {has_1}/{len(ratios)}"
    )
    return worst, same, compared, has_1


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=3)
    ap.add_argument("--experiment", type=Path, default=ROOT / "bench" / "jobs-fidelity.toml")
    ap.add_argument(
        "--keep",
        type=Path,
        help="measure into KEEP/serial and KEEP/jobs and keep them (run again: the stored "
        "trials are skipped, so the tables print again without measuring)",
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="h2lab-jobs-") as tmp:
        out = args.keep or Path(tmp)
        serial_s, serial = run_arm(args.experiment, out / "serial", 1)
        jobs_s, sharded = run_arm(args.experiment, out / "jobs", args.jobs)
    print(f"\n{args.experiment.name}: {len(serial)} trials serial, {len(sharded)} with --jobs")
    ok = True
    # the report's main metrics: pdt_ms for h2load/nghttp, plt_ms and speed_index_ms for browsers
    for metric in (view.metric for view in metric_views(serial)):
        worst, same, cells, _ = compare(metric, serial, sharded)
        ok = ok and worst <= TARGET and same == cells
    cpu_a = statistics.median(r.cpu_busy_pct or 0 for r in serial)
    cpu_b = statistics.median(r.cpu_busy_pct or 0 for r in sharded)
    saturated_a = sum(bool(r.cpu_saturated) for r in serial)
    saturated_b = sum(bool(r.cpu_saturated) for r in sharded)
    print(
        f"\nwall time: serial {serial_s:.0f} s, --jobs {args.jobs} {jobs_s:.0f} s "
        f"({serial_s / jobs_s:.2f}x); median cpu_busy_pct {cpu_a:.0f} vs {cpu_b:.0f}; "
        f"cpu_saturated trials {saturated_a} vs {saturated_b}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
