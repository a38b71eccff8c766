"""Benchmark: analysis + report for a synthetic store of 10,000 trials and 500,000 resources
must take at most 15 s (issue #7).

Run: ``.venv/bin/python bench/report.py [--out DIR] [--keep]`` (no root needed).

The store is generated, not measured: 500 cells (object count 8..128 × object size 1..100 KB ×
RTT 20..300 ms × loss 0/1 % × client h2load/chromium) × protocols h1s/h2s × 10 repetitions, 50
resources per trial, written with ``executemany`` into a store made by :class:`Store` (its
schema). Page times follow a simple model with seeded lognormal noise, so that verdicts,
factors and the tree have something to find.

Printed: the time to generate the store (not counted), the time to import scikit-learn alone
(counted: ``write_report`` imports it for the tree; measured first, in this process, so the
report's own figure then excludes it), the time of ``write_report`` by phase, and the total
(import + report), against the 15 s budget.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from h2lab.store import Store
from h2lab.store.sqlite import TRIAL_COLUMNS

BUDGET_S = 15.0
"""Issue #7, must hold: analysis + report for 10,000 trials and 500,000 resources ≤ 15 s."""
COUNTS = (8, 16, 32, 64, 128)
SIZES_KB = (1, 3, 10, 30, 100)
RTTS_MS = (20, 50, 100, 200, 300)
LOSSES_PCT = (0, 1)
CLIENTS = ("h2load", "chromium")
PROTOCOLS = ("h1s", "h2s")
REPETITIONS = 10
RESOURCES_PER_TRIAL = 50
RESOURCE_FIELDS = (
    "trial_id",
    "url",
    "origin",
    "start_ms",
    "ttfb_ms",
    "end_ms",
    "bytes",
    "protocol",
    "connection",
)
"""The resource columns set here (the others keep their defaults)."""


def generate(out: Path, seed: int = 0) -> tuple[int, int]:
    """Write the synthetic store; (trials, resources) written."""
    Store(out).close()  # the schema
    rng = np.random.default_rng(seed)
    trial_cols: list[str] = []  # the columns set here; the store's defaults fill the rest
    trials: list[tuple[object, ...]] = []
    resources: list[tuple[object, ...]] = []
    trial_id = 0
    versions = json.dumps({"h2lab": "0.1.0", "nginx": "1.22.1", "chromium": "bench"})
    for n in COUNTS:
        for kb in SIZES_KB:
            page = f"synthetic:n={n},size={kb}KB,origins=1"
            for rtt in RTTS_MS:
                for loss in LOSSES_PCT:
                    network = f"rtt={rtt}ms,down=10Mbps,up=2Mbps,loss={loss}%"
                    for client in CLIENTS:
                        for rep in range(REPETITIONS):
                            block = f"{page}|{network}|nginx|{client}|cubic|iw10|r{rep}"
                            noise = rng.lognormal(0, 0.1)
                            for protocol in PROTOCOLS:
                                trial_id += 1
                                # h1: 6 connections, one request at a time; h2: one, all at once
                                rounds = n / 6 if protocol == "h1s" else 1 + loss * 2
                                base = rtt * (3 + rounds) + n * kb * 8 / 10 * (1 + loss * 0.3)
                                pdt = base * noise * rng.lognormal(0, 0.05)
                                browser = client == "chromium"
                                row = {
                                    "trial_key": f"{block}|{protocol}",
                                    "experiment": "bench",
                                    "block": block,
                                    "page": page,
                                    "page_digest": None,
                                    "protocol": protocol,
                                    "network": network,
                                    "server": "nginx",
                                    "client": client,
                                    "congestion_control": "cubic",
                                    "initcwnd_packets": 10,
                                    "repetition": rep,
                                    "seed": rep,
                                    "attempt": 1,
                                    "status": "ok",
                                    "error": None,
                                    "started_at": "2026-01-01T00:00:00",
                                    "duration_s": pdt / 1000,
                                    "pdt_ms": pdt,
                                    "plt_ms": pdt * 1.1 + 30 if browser else None,
                                    "body_bytes": n * kb * 1000,
                                    "bytes_up": None,
                                    "bytes_down": None,
                                    "tcp_connections": 6 if protocol == "h1s" else 1,
                                    "retransmits": None,
                                    "request_header_bytes": n * (300 if protocol == "h1s" else 40),
                                    "response_header_bytes": n * (200 if protocol == "h1s" else 30),
                                    "speed_index_ms": pdt * 0.8 if browser else None,
                                    "config_json": json.dumps({"page": page, "network": network}),
                                    "versions_json": versions,
                                }
                                trial_cols = trial_cols or [c for c in row if c in TRIAL_COLUMNS]
                                trials.append(tuple(row[c] for c in trial_cols))
                                starts = np.sort(rng.uniform(0, pdt * 0.8, RESOURCES_PER_TRIAL))
                                for i, s in enumerate(starts):
                                    conn = i % 6 if protocol == "h1s" else 0
                                    resources.append(
                                        (
                                            trial_id,
                                            f"https://o1.h2lab.test/obj/{i:05d}.png",
                                            "o1.h2lab.test",
                                            float(s),
                                            float(s) + rtt,
                                            float(s) + rtt + kb * 0.8,
                                            kb * 1000,
                                            protocol,
                                            f"o1.h2lab.test#{conn}",
                                        )
                                    )
    db = sqlite3.connect(out / "results.sqlite")
    with db:
        db.executemany(
            f"INSERT INTO trials ({', '.join(trial_cols)}) "
            f"VALUES ({', '.join('?' for _ in trial_cols)})",
            trials,
        )
        db.executemany(
            f"INSERT INTO resources ({', '.join(RESOURCE_FIELDS)}) "
            f"VALUES ({', '.join('?' for _ in RESOURCE_FIELDS)})",
            resources,
        )
    db.close()
    return len(trials), len(resources)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, help="store folder (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="h2lab-bench-report-"))
    out.mkdir(parents=True, exist_ok=True)
    if (out / "results.sqlite").exists():
        print(f"{out}/results.sqlite exists; use an empty folder", file=sys.stderr)
        return 2
    try:
        t0 = time.perf_counter()
        n_trials, n_resources = generate(out)
        print(
            f"generated {n_trials:,} trials, {n_resources:,} resources in "
            f"{time.perf_counter() - t0:.1f} s (not counted)"
        )
        t0 = time.perf_counter()
        import sklearn.tree  # type: ignore[import-untyped]  # noqa: F401

        import_s = time.perf_counter() - t0
        print(f"import scikit-learn: {import_s:.1f} s")
        from h2lab.report import write_report

        phases: dict[str, float] = {}
        t0 = time.perf_counter()
        path = write_report(out, timings=phases)
        report_s = time.perf_counter() - t0
        detail = ", ".join(f"{k} {v:.2f} s" for k, v in phases.items())
        print(f"write_report: {report_s:.1f} s ({detail})")
        size_kb = path.stat().st_size / 1024
        print(f"report.html: {size_kb:,.0f} KB")
        total = import_s + report_s
        verdict = "ok" if total <= BUDGET_S else "OVER BUDGET"
        print(f"total (import + report): {total:.1f} s, budget {BUDGET_S:g} s: {verdict}")
        return 0 if total <= BUDGET_S else 1
    finally:
        if args.out is None and not args.keep:
            shutil.rmtree(out, ignore_errors=True)
        elif args.out is None:
            print(f"kept {out}")


if __name__ == "__main__":
    sys.exit(main())
