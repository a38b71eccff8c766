"""Read a results store's tables as Arrow record batches, in C, without a Python object per
value: the report's export and its columnar view of the trials (issue #43: a million trials and
fifty million resources).

The reader is the ADBC SQLite driver (``adbc-driver-sqlite``): it steps the query and fills
Arrow arrays itself, 1.7 times faster than ``sqlite3``'s tuples on 5,000,000 resources
(5.4 s against 9.2 s for the fetch alone, before any conversion). It infers each column's type
from the first batch, and refuses a later value of another type ("Type mismatch"): a column
NULL in every row of the first batch (``priority`` of a store whose first trials ran h2load)
would be taken for an integer. So every query starts with one row of the declared types
(``''``, ``0.0``, ``0``) that is dropped, and every batch is cast to the declared schema
(:func:`arrow_schema`), the one the store's export always had.

The store is opened read-only, immutable when no ``-wal`` with content is beside it (as
:func:`h2lab.store.reader.connect_read_only`): reading leaves no file behind.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from h2lab.spec.factors import Cell
from h2lab.store.frame import EXACT_COLUMNS, NUMBER_COLUMNS, TEXT_COLUMNS, Texts, TrialFrame
from h2lab.store.reader import _default
from h2lab.store.sqlite import FACTOR_COLUMNS, TRIAL_COLUMNS

if TYPE_CHECKING:
    import numpy as np

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
    from h2lab.store.reader import connect_read_only

    db = connect_read_only(db_path)
    try:
        return frozenset(r[1] for r in db.execute(f"PRAGMA table_info({table})"))
    finally:
        db.close()


def _texts(column: pa.ChunkedArray) -> Texts:
    """A text column as codes into its sorted distinct values (None first)."""
    import numpy as np
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    encoded = pc.dictionary_encode(column).combine_chunks()
    words: list[str] = encoded.dictionary.to_pylist()
    order = sorted(range(len(words)), key=words.__getitem__)
    has_null = encoded.null_count > 0
    remap = np.empty(len(words) + 1, np.int64)
    remap[order] = np.arange(len(words)) + has_null
    remap[-1] = 0  # NULL
    codes = encoded.indices.fill_null(len(words)).to_numpy(zero_copy_only=False)
    values = ((None,) if has_null else ()) + tuple(words[i] for i in order)
    return Texts(values, remap[codes])


def _cells(table: pa.Table) -> tuple[tuple[Cell, ...], np.ndarray]:
    """The distinct cells of the factor columns and each row's index into them."""
    import numpy as np
    import pyarrow.compute as pc

    key = np.zeros(table.num_rows, np.int64)
    levels = []
    for column in FACTOR_COLUMNS:
        encoded = pc.dictionary_encode(table[column]).combine_chunks()
        words = encoded.dictionary.to_pylist()
        key = key * (len(words) + 1) + encoded.indices.to_numpy(zero_copy_only=False)
        levels.append(words)
    distinct, index = np.unique(key, return_inverse=True)
    cells = []
    for k in distinct.tolist():
        codes = []
        for words in reversed(levels):
            k, code = divmod(k, len(words) + 1)
            codes.append(code)
        picked = [words[c] for words, c in zip(levels, reversed(codes), strict=True)]
        cells.append(Cell.of(**dict(zip(FACTOR_COLUMNS, picked, strict=True))))
    return tuple(cells), index.reshape(-1).astype(np.int64)


def _number(column: pa.ChunkedArray, exact: bool) -> np.ndarray:
    """A number column as float64 (NULL: NaN), or with ``exact``
    (:data:`~h2lab.store.frame.EXACT_COLUMNS`) as int64 when it has no NULL. Integers beyond
    2^53 lose their last bits as floats; the measured ones never get there (counts of bytes,
    ms), so the cast is not asked to refuse them."""
    import numpy as np
    import pyarrow as pa

    values: np.ndarray
    if exact and column.null_count == 0:
        values = column.cast(pa.int64()).to_numpy().astype(np.int64, copy=False)
    else:
        values = column.cast(pa.float64(), safe=False).to_numpy().astype(np.float64, copy=False)
    return values


def read_trial_frame(db_path: Path) -> TrialFrame:
    """The stored trials (warm-ups left out, by id) as a :class:`TrialFrame`, read in batches
    of Arrow arrays: no Python object per row. Columns an older store lacks take their
    defaults, as :func:`h2lab.store.reader.read_trials` gives them."""
    import pyarrow as pa

    have = table_columns(db_path, "trials")
    wanted = (*FACTOR_COLUMNS, *TEXT_COLUMNS, *NUMBER_COLUMNS)
    columns = {c: TRIAL_COLUMNS[c] for c in wanted}
    where = "warmup = 0" if "warmup" in have else ""
    batches = list(read_batches(db_path, "trials", columns, where=where, order="id", have=have))
    table = pa.Table.from_batches(batches, schema=arrow_schema(columns))
    for c in set(wanted) - have:
        default = _default(c, TRIAL_COLUMNS[c], db_path)
        table = table.set_column(
            table.schema.get_field_index(c),
            c,
            pa.array([default] * table.num_rows, type=arrow_type(TRIAL_COLUMNS[c])),
        )
    cells, cell = _cells(table)
    texts = {c: _texts(table[c]) for c in TEXT_COLUMNS}
    numbers = {c: _number(table[c], c in EXACT_COLUMNS) for c in NUMBER_COLUMNS}
    return TrialFrame(cells, cell, texts, numbers)
