"""Rebuild a results store from its export, so a run whose store was not kept resumes.

``reproduction/<name>/`` keeps only ``trials.csv`` (plus the report) in git; a long experiment
run in parts on fresh checkouts restores its store from that file first, and ``h2lab run`` then
skips every trial key already stored ok. The resource rows are read when their file is there
(it is not committed: per-resource rows of a restored trial are absent, so its waterfall is
too): ``resources.csv``, or ``resources.parquet`` where the export wrote no CSV (a store past
:data:`~h2lab.report.export.CSV_ROWS_MAX` rows); with both, their row counts must agree. So
is ``trials.parquet`` read when there is no ``trials.csv``, and a journey's ``steps.csv`` (or
``steps.parquet``) when there is one.

The CSV files are the ones ``h2lab report`` (pyarrow) and ``h2lab export`` (csv module) write:
one header row of column names, an empty field for NULL; the Parquet files are ``h2lab
report``'s. Rows keep their ``id`` so resources stay attached to their trial. Columns a file
lacks (written by an older h2lab) take their schema default; a column the schema does not know
is an error, as is any value that does not parse as its column's type.
"""

from __future__ import annotations

import csv
import sqlite3
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from h2lab.artifacts import RESULTS_DB
from h2lab.errors import SpecError
from h2lab.spec.factors import FACTORS
from h2lab.store.sqlite import RESOURCE_COLUMNS, STEP_COLUMNS, TRIAL_COLUMNS, Store

ADDED_DEFAULTS: dict[str, Any] = {
    "warmup": 0,
    "pushed": 0,
    **{f.column: f.stored(f.default) for f in FACTORS if not f.keyed_at_default},
}
"""NOT NULL columns added after the first schema (a factor added later: its default level):
their value in a CSV that predates them."""


@dataclass(frozen=True)
class Restored:
    trials: int
    resources: int
    resources_from: str | None
    """the file the resource rows came from (``resources.csv``, ``resources.parquet``); None:
    neither was there"""


def _convert(kind: str, text: str) -> Any:
    if text == "":
        return None
    base = kind.split()[0]
    if base == "INTEGER":
        return int(text)
    if base == "REAL":
        return float(text)
    return text


def _layout(
    path: Path, header: list[str], columns: dict[str, str], required: set[str]
) -> tuple[list[int | None], list[Any]]:
    """Where each store column is in a file's ``header`` (None: not there) and its value when
    not; a column the store does not know, or a required one missing, refused in one line."""
    unknown = [c for c in header if c not in columns]
    if unknown:
        raise SpecError(path, unknown[0], "not a column of the results store")
    missing = sorted(required - set(header))
    if missing:
        raise SpecError(path, missing[0], "required column missing from the header")
    order = [header.index(c) if c in header else None for c in columns]
    return order, [ADDED_DEFAULTS.get(c) for c in columns]


def _rows(path: Path, columns: dict[str, str], required: set[str]) -> Iterator[tuple[Any, ...]]:
    """The file's rows as tuples in the order of ``columns`` (defaults filled in)."""
    csv.field_size_limit(sys.maxsize)  # config_json of a large page spec
    with path.open(newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            raise SpecError(path, "header", "empty file: no header row")
        order, defaults = _layout(path, header, columns, required)
        kinds = [columns[c] for c in header]
        for lineno, fields in enumerate(reader, start=2):
            if len(fields) != len(header):
                raise SpecError(
                    path, f"line {lineno}", f"{len(fields)} fields, the header has {len(header)}"
                )
            values = []
            for name, kind, text in zip(header, kinds, fields, strict=True):
                try:
                    values.append(_convert(kind, text))
                except ValueError:
                    raise SpecError(
                        path, f"line {lineno}, {name}", f"{text!r} is not {kind.split()[0]}"
                    ) from None
            yield tuple(defaults[j] if i is None else values[i] for j, i in enumerate(order))


PARQUET_BATCH_ROWS = 65_536


def _parquet_rows(
    path: Path, columns: dict[str, str], required: set[str]
) -> Iterator[tuple[Any, ...]]:
    """A Parquet file's rows as tuples in the order of ``columns`` (defaults filled in), a
    batch at a time."""
    header = _parquet_file(path).schema_arrow.names
    order, defaults = _layout(path, header, columns, required)
    for batch in _parquet_file(path).iter_batches(batch_size=PARQUET_BATCH_ROWS):
        values = [batch.column(i).to_pylist() for i in range(len(header))]
        for row in zip(*values, strict=True):
            yield tuple(defaults[j] if i is None else row[i] for j, i in enumerate(order))


def _parquet_file(path: Path) -> Any:
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    try:
        return pq.ParquetFile(path)
    except (OSError, ValueError) as exc:
        raise SpecError(path, "file", f"not a Parquet file: {str(exc)[:200]}") from None


def _parquet_count(path: Path) -> int:
    return int(_parquet_file(path).metadata.num_rows)


def _source(out: Path, table: str) -> Path | None:
    """The file ``table`` is restored from: its CSV, else its Parquet file, else None. With
    both, their row counts must agree (a CSV cut short is not restored from)."""
    csv_path, parquet_path = out / f"{table}.csv", out / f"{table}.parquet"
    if csv_path.is_file() and parquet_path.is_file():
        with csv_path.open(newline="") as f:
            csv_rows = max(0, sum(1 for _ in csv.reader(f)) - 1)
        parquet_rows = _parquet_count(parquet_path)
        if csv_rows != parquet_rows:
            raise SpecError(
                csv_path, "rows", f"{csv_rows} rows, but {parquet_path.name} has {parquet_rows}: "
                "the two exports disagree, so neither is restored from",
            )  # fmt: skip
    if csv_path.is_file():
        return csv_path
    return parquet_path if parquet_path.is_file() else None


def _read(path: Path, columns: dict[str, str], required: set[str]) -> Iterator[tuple[Any, ...]]:
    if path.suffix == ".parquet":
        return _parquet_rows(path, columns, required)
    return _rows(path, columns, required)


def _insert(
    db: sqlite3.Connection, table: str, columns: dict[str, str], rows: Iterator[tuple[Any, ...]]
) -> int:
    """Insert every row (read lazily from the file); how many."""
    sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    return db.executemany(sql, rows).rowcount


def restore_store(out: Path) -> Restored:
    """Create ``out/results.sqlite`` from ``out/trials.csv`` (or ``trials.parquet``) and the
    resource rows (``resources.csv``, or ``resources.parquet``).

    Refuses when the folder already has a store (it would mix two histories); an empty file
    there (what ``sqlite3 results.sqlite`` leaves after a query on a missing store) is no store.
    On a bad file nothing is left behind."""
    db_path = out / RESULTS_DB
    trials_from = _source(out, "trials")
    if trials_from is None:
        raise SpecError(
            out / "trials.csv", "file", "no trials.csv (or trials.parquet) to restore from"
        )
    resources_from = _source(out, "resources")
    steps_from = _source(out, "steps")
    if db_path.is_file() and db_path.stat().st_size == 0:
        db_path.unlink()
    if db_path.exists():
        raise SpecError(
            db_path, "file", "a results store is already here (restore only fills a new one)"
        )
    required = {c for c, kind in TRIAL_COLUMNS.items() if "NOT NULL" in kind} - set(ADDED_DEFAULTS)
    required_res = {c for c, k in RESOURCE_COLUMNS.items() if "NOT NULL" in k} - set(ADDED_DEFAULTS)
    required_steps = {c for c, k in STEP_COLUMNS.items() if "NOT NULL" in k}
    Store(out).close()  # schema, indexes, user_version
    db = sqlite3.connect(db_path)
    try:
        with db:
            trial_rows = _read(trials_from, TRIAL_COLUMNS, required | {"id"})
            n_trials = _insert(db, "trials", TRIAL_COLUMNS, trial_rows)
            n_res = 0
            if resources_from is not None:
                rows = _read(resources_from, RESOURCE_COLUMNS, required_res)
                n_res = _insert(db, "resources", RESOURCE_COLUMNS, rows)
            if steps_from is not None:  # a journey's steps
                rows = _read(steps_from, STEP_COLUMNS, required_steps)
                _insert(db, "steps", STEP_COLUMNS, rows)
    except (SpecError, sqlite3.Error) as exc:
        db.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db_path}{suffix}").unlink(missing_ok=True)
        if isinstance(exc, SpecError):
            raise
        raise SpecError(trials_from, "rows", f"does not fit the results store: {exc}") from None
    db.close()
    return Restored(
        trials=n_trials,
        resources=n_res,
        resources_from=None if resources_from is None else resources_from.name,
    )
