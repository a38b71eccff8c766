"""Benchmark: analysis + report (+ export) of a synthetic store, at 10,000 trials and 500,000
resources (issue #7: at most 15 s; issue #43: no worse than the 9.0 s before it) up to
1,000,000 trials and 50,000,000 resources (issue #43: 60 s and 4 GiB).

Run: ``.venv/bin/python bench/report.py [--trials N] [--out DIR] [--keep] [--reuse]`` (no root
needed; time it under ``flock /tmp/h2lab-bench.lock`` on a shared machine).

The store is generated, not measured: 500 cells (object count 8..128 × object size 1..100 KB ×
RTT 20..300 ms × loss 0/1 % × client h2load/chromium) × protocols h1s/h2s × N/1,000
repetitions, 50 resources per trial, written with ``executemany`` in batches of 10,000 trials
into a store made by :class:`Store` (its schema); every
:data:`~h2lab.store.segments.SEAL_ROWS` resource rows are sealed into a Parquet segment as a
run's store seals them (:meth:`Store.seal_if_due`), so from 20,000 trials on most resource rows
are in segments. Page times follow a simple model with seeded
lognormal noise, so that verdicts, factors and the tree have something to find.

Printed: the time to generate the store (not counted), the time to import scikit-learn alone
(counted: ``write_report`` imports it for the tree; measured first, in this process, so the
report's own figure then excludes it), the time and peak resident memory of each phase of
``write_report`` (the export last, after the store is closed), the files' sizes, and the
total (import + report) against the budget of that scale.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from h2lab.store import Store
from h2lab.store.segments import SEAL_ROWS, seal
from h2lab.store.sqlite import RESOURCE_COLUMNS, TRIAL_COLUMNS

BUDGET_S = 15.0
"""Issue #7, must hold: analysis + report for 10,000 trials and 500,000 resources ≤ 15 s."""
GIB = 2**30


@dataclass(frozen=True)
class Budget:
    seconds: float
    """import + write_report"""
    peak_bytes: int | None
    """peak resident memory of write_report's phases; None: not bounded"""
    source: str


BUDGETS = {
    10_000: Budget(9.0, None, "issue #43: no worse than the 9.0 s measured before it"),
    1_000_000: Budget(60.0, 4 * GIB, "issue #43: a week of a 32-node cluster"),
}
"""Issue #43's figures, by --trials (other scales: issue #7's 15 s, no memory bound)."""
COUNTS = (8, 16, 32, 64, 128)
SIZES_KB = (1, 3, 10, 30, 100)
RTTS_MS = (20, 50, 100, 200, 300)
LOSSES_PCT = (0, 1)
CLIENTS = ("h2load", "chromium")
PROTOCOLS = ("h1s", "h2s")
REPETITIONS = 10
TRIALS_PER_REPETITION = (
    len(COUNTS) * len(SIZES_KB) * len(RTTS_MS) * len(LOSSES_PCT) * len(CLIENTS) * len(PROTOCOLS)
)
"""1,000: 500 cells × 2 protocols; --trials is a multiple of it."""
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


GENERATE_BATCH_TRIALS = 10_000
"""Trials per ``executemany`` batch of the generator: bounds its memory (500,000 resource
tuples), whatever the scale."""


def _trial_rows(
    repetitions: int, rng: np.random.Generator
) -> Iterator[tuple[dict[str, Any], np.ndarray, int, int, int]]:
    """Every trial's row, its resources' start times, and (rtt, kb, id), in the generator's
    order (the draws are the same as the 10,000-trial generator's before the scale option)."""
    trial_id = 0
    versions = json.dumps({"h2lab": "0.1.0", "nginx": "1.22.1", "chromium": "bench"})
    for n in COUNTS:
        for kb in SIZES_KB:
            page = f"synthetic:n={n},size={kb}KB,origins=1"
            for rtt in RTTS_MS:
                for loss in LOSSES_PCT:
                    network = f"rtt={rtt}ms,down=10Mbps,up=2Mbps,loss={loss}%"
                    config = json.dumps({"page": page, "network": network})
                    for client in CLIENTS:
                        for rep in range(repetitions):
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
                                    "config_json": config,
                                    "versions_json": versions,
                                }
                                starts = np.sort(rng.uniform(0, pdt * 0.8, RESOURCES_PER_TRIAL))
                                yield row, starts, rtt, kb, trial_id


URLS = tuple(f"https://o1.h2lab.test/obj/{i:05d}.png" for i in range(RESOURCES_PER_TRIAL))
CONNECTIONS = {
    p: tuple(f"o1.h2lab.test#{i % 6 if p == 'h1s' else 0}" for i in range(RESOURCES_PER_TRIAL))
    for p in PROTOCOLS
}


def _resource_rows(
    trial_id: int, protocol: str, starts: np.ndarray, rtt: int, kb: int
) -> Iterator[tuple[object, ...]]:
    size = kb * 1000
    for url, s, conn in zip(URLS, starts.tolist(), CONNECTIONS[protocol], strict=True):
        yield (trial_id, url, "o1.h2lab.test", s, s + rtt, s + rtt + kb * 0.8, size, protocol, conn)


def generate(out: Path, repetitions: int = REPETITIONS, seed: int = 0) -> tuple[int, int]:
    """Write the synthetic store (``repetitions`` per cell and protocol); (trials, resources)
    written. Batched, so that a million trials need no more memory than ten thousand."""
    Store(out).close()  # the schema
    rng = np.random.default_rng(seed)
    db = sqlite3.connect(out / "results.sqlite")
    db.execute("PRAGMA synchronous=OFF")  # the generator only: a crash loses a bench store
    trial_cols: list[str] = []  # the columns set here; the store's defaults fill the rest
    resource_sql = (
        f"INSERT INTO resources ({', '.join(RESOURCE_FIELDS)}) "
        f"VALUES ({', '.join('?' for _ in RESOURCE_FIELDS)})"
    )
    n_trials = n_resources = unsealed = 0
    rows = _trial_rows(repetitions, rng)
    while batch := list(itertools.islice(rows, GENERATE_BATCH_TRIALS)):
        trial_cols = trial_cols or [c for c in batch[0][0] if c in TRIAL_COLUMNS]
        with db:
            db.executemany(
                f"INSERT INTO trials ({', '.join(trial_cols)}) "
                f"VALUES ({', '.join('?' for _ in trial_cols)})",
                (tuple(row[c] for c in trial_cols) for row, *_ in batch),
            )
            db.executemany(
                resource_sql,
                itertools.chain.from_iterable(
                    _resource_rows(tid, str(row["protocol"]), starts, rtt, kb)
                    for row, starts, rtt, kb, tid in batch
                ),
            )
        n_trials += len(batch)
        n_resources += len(batch) * RESOURCES_PER_TRIAL
        unsealed += len(batch) * RESOURCES_PER_TRIAL
        if unsealed >= SEAL_ROWS:  # as a run's store seals them (Store.seal_if_due)
            seal(db, out / "results.sqlite", RESOURCE_COLUMNS)
            unsealed = 0
    db.close()
    return n_trials, n_resources


class PhaseMemory(dict[str, float]):
    """The ``timings`` dict given to ``write_report``: it stores each phase's seconds as it
    ends, and this subclass also reads the process's peak resident memory at that moment
    (``VmHWM``) and resets it (``/proc/self/clear_refs``, 5), so each phase gets the peak
    since the phase before it ended (untimed work between two phases counts for the later).
    Each phase is printed as it ends (a long run shows how far it got)."""

    def __init__(self) -> None:
        super().__init__()
        self.peak_bytes: dict[str, int] = {}
        reset_peak()

    def __setitem__(self, name: str, seconds: float) -> None:
        super().__setitem__(name, seconds)
        self.peak_bytes[name] = max(self.peak_bytes.get(name, 0), peak_rss())
        reset_peak()
        print(f"  {name:<18} {seconds:7.2f} s  peak {self.peak_bytes[name] / GIB:5.2f} GiB")
        sys.stdout.flush()


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def peak_rss() -> int:
    """The process's peak resident set size (bytes) since the last :func:`reset_peak`."""
    return _status_kb("VmHWM") * 1024


def reset_peak() -> None:
    """Start a new peak: Linux's ``clear_refs`` 5 sets VmHWM to the current resident size."""
    Path("/proc/self/clear_refs").write_text("5")


def _watch_rss(limit_bytes: int) -> None:
    """Stop the process when it holds more than ``limit_bytes``: a run that would take the
    shared machine's memory ends with a line that says so (exit 3)."""

    def watch() -> None:
        while True:
            rss = _status_kb("VmRSS") * 1024
            if rss > limit_bytes:
                print(f"resident memory {rss / GIB:.1f} GiB > {limit_bytes / GIB:g} GiB: stopped")
                sys.stdout.flush()
                os._exit(3)
            time.sleep(0.05)

    threading.Thread(target=watch, daemon=True).start()


def _files(out: Path) -> str:
    names = ("report.html", "trials.csv", "trials.parquet", "resources.csv", "resources.parquet")
    sizes = [(n, (out / n).stat().st_size) for n in names if (out / n).is_file()]
    return ", ".join(f"{n} {b / 2**20:,.1f} MiB" for n, b in sizes)


def _report(out: Path, budget: Budget) -> bool:
    """Import scikit-learn, then time ``write_report`` phase by phase; whether it held."""
    reset_peak()
    t0 = time.perf_counter()
    import sklearn.tree  # type: ignore[import-untyped]  # noqa: F401

    import_s = time.perf_counter() - t0
    print(f"import scikit-learn: {import_s:.1f} s, peak {peak_rss() / GIB:.2f} GiB")
    from h2lab.report import write_report

    phases = PhaseMemory()
    t0 = time.perf_counter()
    write_report(out, timings=phases)
    report_s = time.perf_counter() - t0
    print(f"write_report: {report_s:.1f} s (phases above; a phase run twice is summed)")
    peak = max([*phases.peak_bytes.values(), peak_rss()])
    print(f"files: {_files(out)}")
    total = import_s + report_s
    ok = total <= budget.seconds and (budget.peak_bytes is None or peak <= budget.peak_bytes)
    memory = "" if budget.peak_bytes is None else f", {budget.peak_bytes / GIB:g} GiB"
    print(
        f"total (import + report): {total:.1f} s, peak {peak / GIB:.2f} GiB; "
        f"budget {budget.seconds:g} s{memory} ({budget.source}): {'ok' if ok else 'OVER BUDGET'}"
    )
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, help="store folder (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument(
        "--trials",
        type=int,
        default=10_000,
        help=f"trials to generate, a multiple of {TRIALS_PER_REPETITION:,} "
        f"({RESOURCES_PER_TRIAL} resources each); default 10,000",
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="--out holds a store this bench generated with the same --trials: report on it",
    )
    parser.add_argument(
        "--rss-limit-gib",
        type=float,
        default=12.0,
        help="stop (exit 3) above this resident memory; default 12 (half the machine)",
    )
    args = parser.parse_args(argv)
    if args.trials <= 0 or args.trials % TRIALS_PER_REPETITION:
        parser.error(f"--trials must be a positive multiple of {TRIALS_PER_REPETITION:,}")
    out = args.out or Path(tempfile.mkdtemp(prefix="h2lab-bench-report-"))
    out.mkdir(parents=True, exist_ok=True)
    stored = (out / "results.sqlite").exists()
    if stored != args.reuse:
        why = "exists; use an empty folder" if stored else "is missing (--reuse)"
        print(f"{out}/results.sqlite {why}", file=sys.stderr)
        return 2
    _watch_rss(int(args.rss_limit_gib * GIB))
    try:
        if not args.reuse:
            t0 = time.perf_counter()
            n_trials, n_resources = generate(out, args.trials // TRIALS_PER_REPETITION)
            print(
                f"generated {n_trials:,} trials, {n_resources:,} resources in "
                f"{time.perf_counter() - t0:.1f} s (not counted)"
            )
        budget = BUDGETS.get(args.trials, Budget(BUDGET_S, None, "issue #7, 10,000 trials"))
        return 0 if _report(out, budget) else 1
    finally:
        if args.out is None and not args.keep:
            shutil.rmtree(out, ignore_errors=True)
        elif args.out is None:
            print(f"kept {out}")


if __name__ == "__main__":
    sys.exit(main())
