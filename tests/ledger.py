"""The rerun ledger: every test that ran again alone, and every run of the suite, in
tests/reruns.tsv (kept in the repository, appended to by tests/suite.py).

A rerun absorbs a failure; the ledger keeps it from being forgotten. One row per run of the
suite (``kind`` ``run``: what it selected, its outcome, how many tests ran again) and one per
test that ran again (``kind`` ``rerun``: its id, whether it passed alone, what it measured and
its bound, from the JUnit properties tests/timing.py records, else the failure's first line).
A test that ran again in :data:`FLAKY_RUNS` of the last :data:`WINDOW` runs of the whole suite
fails the run: it is not a busy machine's victim but a test whose bound does not hold.
"""

from __future__ import annotations

import csv
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import astuple, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path

LEDGER = Path(__file__).with_name("reruns.tsv")
WINDOW = 10
FLAKY_RUNS = 3
WHOLE_SUITE = "whole suite"
"""The selection of a ``make test`` run (the only runs :func:`frequent` counts: a partial run
says nothing about tests it did not select)."""
CELL_CHARS = 300


@dataclass(frozen=True)
class Row:
    run: str
    """the run's start, UTC, ISO 8601 to the second: one run's rows share it"""
    commit: str
    kind: str
    """``run`` or ``rerun``"""
    test: str
    """a test id (``rerun``), or what the run selected (``run``)"""
    outcome: str
    """``passed alone`` or ``failed alone`` (``rerun``); ``passed`` or ``failed`` (``run``)"""
    measured: str = ""
    bound: str = ""


COLUMNS = tuple(f.name for f in fields(Row))


def cell(text: str) -> str:
    """One TSV cell: no tabs or line breaks, at most :data:`CELL_CHARS` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= CELL_CHARS else flat[: CELL_CHARS - 1] + "…"


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def commit(root: Path) -> str:
    """The checkout's commit (12 hex digits, ``+`` when the tree has changes other than the
    ledger's own rows); ``unknown`` outside git."""
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()
        dirty = subprocess.run(
            [
                "git",
                "-C",
                str(root),
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ".",
                f":!{LEDGER.name}",
                f":!tests/{LEDGER.name}",
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+" if dirty else "")


def read(path: Path = LEDGER) -> list[Row]:
    """The ledger's rows, oldest first; rows that do not parse are left out."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    rows = []
    for record in csv.DictReader(text.splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE):
        if all(record.get(c) is not None for c in COLUMNS):
            rows.append(Row(**{c: record[c] for c in COLUMNS}))
    return rows


def append(rows: Iterable[Row], path: Path = LEDGER) -> None:
    new = not path.exists() or path.stat().st_size == 0
    with path.open("a") as f:
        if new:
            f.write("\t".join(COLUMNS) + "\n")
        for row in rows:
            f.write("\t".join(cell(v) for v in astuple(row)) + "\n")


def frequent(
    rows: Sequence[Row], window: int = WINDOW, at_least: int = FLAKY_RUNS
) -> dict[str, int]:
    """Test id -> the number of the last ``window`` whole-suite runs in which it ran again,
    for the tests that did in ``at_least`` of them or more."""
    runs = [r.run for r in rows if r.kind == "run" and r.test == WHOLE_SUITE][-window:]
    recent = set(runs)
    seen: dict[str, set[str]] = {}
    for r in rows:
        if r.kind == "rerun" and r.run in recent:
            seen.setdefault(r.test, set()).add(r.run)
    return {t: len(s) for t, s in sorted(seen.items()) if len(s) >= at_least}
