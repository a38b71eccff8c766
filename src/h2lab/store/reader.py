"""Read a results store without writing to it: for commands that only look (``h2lab compare``).

:class:`~h2lab.store.sqlite.Store` creates its folder, tables and WAL files and upgrades an
older schema in place; reading two folders to compare them must leave both as they were, and
must not read torn pages of a store that ``h2lab run`` is writing meanwhile. The database is
opened as :func:`h2lab.store.tables.opening` decides: *immutable* when the folder is finished
(no run holds its lock, no ``-wal`` file with content beside it), so SQLite neither creates
``-wal``/``-shm`` files nor marks the ``-shm`` of a folder whose writer left one, and the read
is made again should a run start meanwhile; *WAL-aware* otherwise (a run still writing, or a
``-wal`` left by one killed), reading through the ``-wal`` and writing its ``-shm`` as any
reader does. The table's columns and its rows are read in one read transaction: one snapshot.
Columns an older h2lab did not write take their schema default; columns a newer one added are
not read.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from h2lab.artifacts import RESULTS_DB
from h2lab.errors import SpecError
from h2lab.results import StepTiming, TrialRecord
from h2lab.spec.factors import BY_COLUMN
from h2lab.store.restore import ADDED_DEFAULTS
from h2lab.store.sqlite import STEP_COLUMNS, TRIAL_COLUMNS, record_of
from h2lab.store.tables import CannotOpen
from h2lab.store.tables import read as read_store


def _default(column: str, kind: str, db_path: Path) -> Any:
    """The value of ``column`` in a store written before it existed."""
    if column in ADDED_DEFAULTS:
        return ADDED_DEFAULTS[column]
    factor = BY_COLUMN.get(column)
    if factor is not None and factor.default is not None:
        return factor.stored(factor.default)
    if "NOT NULL" in kind:
        raise SpecError(db_path, column, "required column missing from the trials table")
    return None


def read_trials(out_dir: Path) -> list[TrialRecord]:
    """Every stored trial attempt of ``out_dir/results.sqlite`` (warm-ups left out), in id
    order. A folder without a store, a file that is not an SQLite database, or one without a
    ``trials`` table raises :class:`SpecError` naming the folder or the file."""
    return read_run(out_dir)[0]


def read_run(out_dir: Path) -> tuple[list[TrialRecord], dict[int, list[StepTiming]]]:
    """:func:`read_trials` and, from the same snapshot, the journeys' steps after their first
    by trial id (none in a store written before journeys)."""
    db_path = out_dir / RESULTS_DB
    if not out_dir.is_dir():
        raise SpecError(out_dir, RESULTS_DB, "no such folder")
    if not db_path.is_file():
        raise SpecError(out_dir, RESULTS_DB, "no results store in this folder")

    def query(db: sqlite3.Connection) -> tuple[list[str], list[tuple[Any, ...]], list[Any]]:
        have = {r[1] for r in db.execute("PRAGMA table_info(trials)")}
        if not have:
            return [], [], []
        read = [c for c in TRIAL_COLUMNS if c in have]
        where = " WHERE warmup = 0" if "warmup" in have else ""
        rows = db.execute(f"SELECT {', '.join(read)} FROM trials{where} ORDER BY id").fetchall()
        steps: list[Any] = []
        if db.execute("PRAGMA table_info(steps)").fetchone() is not None:
            names = ", ".join(STEP_COLUMNS)
            steps = db.execute(f"SELECT {names} FROM steps ORDER BY trial_id, step").fetchall()
        return read, rows, steps

    try:
        columns, rows, step_rows = read_store(db_path, query)
    except CannotOpen as exc:
        raise SpecError(db_path, "file", f"cannot be opened: {exc}") from None
    except sqlite3.Error as exc:
        raise SpecError(db_path, "trials", f"not a readable results store ({exc})") from None
    if not columns:
        raise SpecError(db_path, "trials", "no trials table: not an h2lab results store")
    defaults = {c: _default(c, k, db_path) for c, k in TRIAL_COLUMNS.items() if c not in columns}
    try:
        trials = [record_of({**defaults, **dict(zip(columns, r, strict=True))}) for r in rows]
        steps: dict[int, list[StepTiming]] = {}
        for trial_id, *values in step_rows:
            steps.setdefault(int(trial_id), []).append(StepTiming(*values))
    except (TypeError, ValueError) as exc:
        raise SpecError(db_path, "trials", f"a row does not fit the schema ({exc})") from None
    return trials, steps
