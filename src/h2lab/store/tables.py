"""Read a results store's tables as Arrow record batches, in C, without a Python object per
value: the report's export, its columnar view of the trials (:mod:`h2lab.store.columns`) and the
sealing of resource rows (:mod:`h2lab.store.segments`); issue #43: a million trials and fifty
million resources.

The reader is the ADBC SQLite driver (``adbc-driver-sqlite``): it steps the query and fills
Arrow arrays itself, 1.7 times faster than ``sqlite3``'s tuples on 5,000,000 resources
(5.4 s against 9.2 s for the fetch alone, before any conversion). It infers each column's type
from the first batch, and refuses a later value of another type ("Type mismatch"): a column
NULL in every row of the first batch (``priority`` of a store whose first trials ran h2load)
would be taken for an integer. So every query starts with one row of the declared types
(``''``, ``0.0``, ``0``) that is dropped, and every batch is cast to the declared schema
(:func:`arrow_schema`), the one the store's export always had.

The store is opened read-only, immutable when no ``-wal`` with content is beside it (as
:func:`connect_read_only`): reading leaves no file behind. This module
imports nothing of h2lab's, so that every part of the store can use it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # pyarrow ships no type information; it is imported when a table is read (importing it
    # imports `socket`, and the report's modules are pure: tests/unit/test_imports.py)
    import pyarrow as pa  # type: ignore[import-untyped]

BATCH_ROWS = 65_536
"""Rows per Arrow batch: bounds what one batch holds (about 10 MB of resources)."""
BUSY_TIMEOUT_MS = 60_000
"""As :class:`h2lab.store.Store`'s ``timeout=60``."""
_DUMMY = {"TEXT": "''", "REAL": "0.0", "INTEGER": "0"}


def arrow_type(sql_type: str) -> pa.DataType:
    """The column's declared SQLite type (first word of its declaration) as an Arrow type."""
    import pyarrow as pa

    types = {"TEXT": pa.string(), "REAL": pa.float64(), "INTEGER": pa.int64()}
    return types[sql_type.split()[0]]


def arrow_schema(columns: Mapping[str, str]) -> pa.Schema:
    """Column name -> declared type (``TRIAL_COLUMNS``, ``RESOURCE_COLUMNS``) as a schema."""
    import pyarrow as pa

    return pa.schema([(n, arrow_type(t)) for n, t in columns.items()])


def _uri(db_path: Path) -> str:
    uri = db_path.resolve().as_uri() + "?mode=ro"
    wal = Path(f"{db_path}-wal")
    if not wal.exists() or wal.stat().st_size == 0:
        uri += "&immutable=1"  # every transaction is in the main file
    return uri


def connect_read_only(db_path: Path) -> sqlite3.Connection:
    """``db_path`` opened to read only through Python's own SQLite, leaving no file beside it
    (:mod:`h2lab.store.reader` says when it is immutable)."""
    return sqlite3.connect(_uri(db_path), uri=True)


def read_batches(
    db_path: Path,
    table: str,
    columns: Mapping[str, str],
    *,
    where: str = "",
    order: str = "rowid",
    have: frozenset[str] | None = None,
    batch_rows: int | None = None,
) -> Iterator[pa.RecordBatch]:
    """The rows of ``table`` (``WHERE where``, ``ORDER BY order``) as batches of
    :func:`arrow_schema` (``columns``) of ``batch_rows`` rows (default :data:`BATCH_ROWS`). A
    column not in ``have`` (the table's columns, when the caller knows the store predates
    some) is NULL in every row."""
    import adbc_driver_sqlite.dbapi as adbc

    schema = arrow_schema(columns)
    kinds = {n: t.split()[0] for n, t in columns.items()}
    dummy = ", ".join(f"{_DUMMY[k]} AS {n}" for n, k in kinds.items())
    picked = ", ".join(n if have is None or n in have else f"NULL AS {n}" for n in columns)
    sql = (
        f"SELECT * FROM (SELECT {dummy}) UNION ALL "
        f"SELECT * FROM (SELECT {picked} FROM {table}"
        + (f" WHERE {where}" if where else "")
        + f" ORDER BY {order})"
    )
    conn = adbc.connect(_uri(db_path))
    try:
        cur = conn.cursor()
        try:
            # a reader opening a store whose -wal another connection is reading waits, as
            # Store's connections do, instead of failing with "database is locked"
            cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            cur.fetchall()
            rows = str(batch_rows or BATCH_ROWS)
            cur.adbc_statement.set_options(**{"adbc.sqlite.query.batch_rows": rows})
            cur.execute(sql)
            first = True
            for batch in cur.fetch_record_batch():
                if first:
                    batch, first = batch.slice(1), False
                if batch.num_rows:
                    yield batch.cast(schema)
        finally:
            cur.close()
    finally:
        conn.close()


def table_columns(db_path: Path, table: str) -> frozenset[str]:
    """The columns ``table`` has in this store (an older store lacks the newer ones)."""
    db = connect_read_only(db_path)
    try:
        return frozenset(r[1] for r in db.execute(f"PRAGMA table_info({table})"))
    finally:
        db.close()
