"""A store past the CSV bound, exported, deleted and restored (issue #56, item 2): every
resource row back. Builds a store of ``--trials`` trials of ``--per-trial`` resource rows each
(1,100 x 960 = 1,056,000 by default, past CSV_ROWS_MAX = 1,048,576, so ``resources.csv`` is
not written), sealed as a run seals it, exports it as ``h2lab report`` does, deletes the store
and its segments, restores from the export, and prints the row counts and a checksum of the
rows (SHA-256 over every row, in id order) before and after, with the time of each step.

    .venv/bin/python bench/restore_big.py [--trials 1100] [--per-trial 960]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import shutil
import sys
import tempfile
import time
from pathlib import Path

from h2lab.report.export import CSV_ROWS_MAX, export_tables
from h2lab.results import ResourceTiming, TrialRecord
from h2lab.spec.factors import Cell
from h2lab.store import Store
from h2lab.store.restore import restore_store
from h2lab.store.segments import SEGMENTS_DIR


def _record(i: int) -> TrialRecord:
    return TrialRecord(
        trial_key=f"b{i}|h2s", experiment="big", block=f"b{i}",
        cell=Cell.of(page="synthetic:n=2", network="cable", server="nginx", client="h2load"),
        page_digest="0123456789abcdef", protocol="h2s", repetition=i, seed=i, attempt=1,
        status="ok", error=None, started_at="2026-12-02T00:00:00.000+00:00", duration_s=1.0,
        config={"protocol": "h2s"}, versions={"h2lab": "bench"},
    )  # fmt: skip


def _resources(i: int, n: int) -> tuple[ResourceTiming, ...]:
    base = ResourceTiming(
        url="", origin="o1.h2lab.test", start_ms=0.0, ttfb_ms=1.0, end_ms=2.0, bytes=0,
        protocol="h2s", connection="o1.h2lab.test#0",
    )  # fmt: skip
    return tuple(
        dataclasses.replace(
            base, url=f"https://o1.h2lab.test/{i}/{k}", bytes=i * n + k, end_ms=2.0 + k / 7
        )
        for k in range(n)
    )


def checksum(out: Path) -> tuple[int, str]:
    """(resource rows, SHA-256 of every row in (trial, url) order) of the store in ``out``."""
    store = Store(out)
    try:
        ids = [t.id for t in store.trials() if t.id is not None]
        rows = store.resources_of(ids)
    finally:
        store.close()
    h = hashlib.sha256()
    n = 0
    for trial_id in sorted(rows):
        for r in sorted(rows[trial_id], key=lambda r: str(r["url"])):
            h.update(repr(sorted((k, v) for k, v in r.items() if k != "id")).encode())
            n += 1
    return n, h.hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--trials", type=int, default=1100)
    ap.add_argument("--per-trial", type=int, default=960)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="h2lab-restore-") as tmp:
        out = Path(tmp) / "big"
        t0 = time.monotonic()
        store = Store(out)
        try:
            for i in range(args.trials):
                store.add_trial(_record(i), _resources(i, args.per_trial))
                store.seal_if_due()
        finally:
            store.close()
        built = time.monotonic() - t0
        before = checksum(out)
        export_tables(out / "results.sqlite", out)
        exported = time.monotonic() - t0 - built
        print(f"{before[0]:,} resource rows (CSV bound {CSV_ROWS_MAX:,}), checksum {before[1]}; "
              f"resources.csv written: {(out / 'resources.csv').exists()}")  # fmt: skip
        for name in ("results.sqlite", "results.sqlite-wal", "results.sqlite-shm"):
            (out / name).unlink(missing_ok=True)
        shutil.rmtree(out / SEGMENTS_DIR, ignore_errors=True)
        t1 = time.monotonic()
        done = restore_store(out)
        restored_s = time.monotonic() - t1
        after = checksum(out)
    print(f"restored {done.trials:,} trials and {done.resources:,} resource rows from "
          f"{done.resources_from}; checksum {after[1]}")  # fmt: skip
    print(f"built {built:.1f} s, exported {exported:.1f} s, restored {restored_s:.1f} s")
    same = before == after
    print("every resource row back: " + ("yes" if same else "NO"))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
