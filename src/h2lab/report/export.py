"""``trials`` and ``resources`` as CSV and Parquet, read from SQLite in one query per table and
written column by column by pyarrow (no per-row Python objects beyond the query's tuples)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from h2lab.store.reader import connect_read_only
from h2lab.store.sqlite import RESOURCE_COLUMNS, TRIAL_COLUMNS

if TYPE_CHECKING:
    # pyarrow ships no type information; its use is confined to this module. It is imported
    # when a table is written, not with the report: importing it imports `socket`, and the
    # report's modules are pure (tests/unit/test_imports.py).
    import pyarrow as pa  # type: ignore[import-untyped]

TABLES = {"trials": TRIAL_COLUMNS, "resources": RESOURCE_COLUMNS}
BATCH_ROWS = 100_000
"""Rows per fetch: bounds the memory of the Python tuples of one batch."""


def arrow_type(sql_type: str) -> pa.DataType:
    """The column's declared SQLite type (first word of its declaration) as an Arrow type."""
    import pyarrow as pa

    types = {"TEXT": pa.string(), "REAL": pa.float64(), "INTEGER": pa.int64()}
    return types[sql_type.split()[0]]


def read_table(db: sqlite3.Connection, table: str) -> pa.Table:
    """Every row of ``table`` (``trials`` or ``resources``) in id/insertion order."""
    import pyarrow as pa

    columns = TABLES[table]
    names = list(columns)
    schema = pa.schema([(n, arrow_type(t)) for n, t in columns.items()])
    order = "id" if "id" in columns else "rowid"
    cur = db.execute(f"SELECT {', '.join(names)} FROM {table} ORDER BY {order}")
    batches = []
    while rows := cur.fetchmany(BATCH_ROWS):
        cols = list(zip(*rows, strict=True))
        batches.append(
            pa.record_batch(
                [pa.array(c, type=schema.field(i).type) for i, c in enumerate(cols)],
                schema=schema,
            )
        )
    return pa.Table.from_batches(batches, schema=schema)


def export_tables(db_path: Path, out_dir: Path) -> list[Path]:
    """Write ``trials.csv``, ``resources.csv``, ``trials.parquet`` and ``resources.parquet``
    to ``out_dir``; the paths written."""
    import pyarrow.csv as pacsv  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    db = connect_read_only(db_path)  # leaves no -wal/-shm beside a closed store
    written = []
    try:
        for table in TABLES:
            data = read_table(db, table)
            csv_path = out_dir / f"{table}.csv"
            pacsv.write_csv(
                data, csv_path, write_options=pacsv.WriteOptions(quoting_style="needed")
            )
            parquet_path = out_dir / f"{table}.parquet"
            pq.write_table(data, parquet_path)
            written += [csv_path, parquet_path]
    finally:
        db.close()
    return written
