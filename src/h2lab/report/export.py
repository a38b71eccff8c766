"""``trials`` and ``resources`` as CSV and Parquet, streamed: each table is read once, in
batches of Arrow arrays (:func:`h2lab.store.tables.read_batches`), and every batch goes to a
CSV writer and a Parquet writer, each on a thread of its own (:func:`fan_out`: the two files
are written at once, on two cores). Memory stays at a few batches
whatever the store's size (before issue #43 the whole table was built first: 1.8 GiB for
5,000,000 resources). The CSV is byte for byte what ``pyarrow.csv.write_csv`` of the whole
table wrote (one header row, quoting only where needed); the Parquet file holds the same rows
and types, in row groups of :data:`ROW_GROUP_ROWS`. Resource rows sealed into segments
(:mod:`h2lab.store.segments`) come first, then those still in SQLite: the stored order."""

from __future__ import annotations

import contextlib
import itertools
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from h2lab.store.segments import SEGMENTS_DIR, Segment, batches, registered
from h2lab.store.sqlite import RESOURCE_COLUMNS, STEP_COLUMNS, TRIAL_COLUMNS
from h2lab.store.tables import arrow_schema, read, read_batches, table_columns

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    Batch: TypeAlias = pa.RecordBatch

TABLES = {"trials": TRIAL_COLUMNS, "resources": RESOURCE_COLUMNS, "steps": STEP_COLUMNS}
OPTIONAL = frozenset({"steps"})
"""Tables exported only when they have rows (a journey's steps: most stores have none)."""
ROW_GROUP_ROWS = 1_048_576
"""Rows per Parquet row group: pyarrow's default for a whole table (``write_table``)."""
CSV_ROWS_MAX = 1_048_576
"""A table of more rows gets no CSV from the report, its Parquet file only: a spreadsheet (Excel,
LibreOffice Calc) opens no more rows than this, and pandas, R, Polars and DuckDB read the Parquet
file. At a million trials the 50,000,000 resource rows make a 7.3 GB CSV that took 43 s to
write, more than the rest of the report (issue #43). ``h2lab export DIR`` writes any size."""
QUEUED_BATCHES = 4
"""Batches a writer may lag behind the reader (each about 10 MB of resources)."""


class _RowGroups:
    """A sink that gathers batches into row groups of :data:`ROW_GROUP_ROWS` rows."""

    def __init__(self, parquet: pq.ParquetWriter, schema: pa.Schema) -> None:
        self.parquet, self.schema = parquet, schema
        self.group: list[pa.RecordBatch] = []
        self.rows = 0

    def __call__(self, batch: pa.RecordBatch) -> None:
        self.group.append(batch)
        self.rows += batch.num_rows
        if self.rows >= ROW_GROUP_ROWS:
            self.flush()

    def flush(self) -> None:
        import pyarrow as pa

        if self.group:
            self.parquet.write_table(pa.Table.from_batches(self.group, schema=self.schema))
        self.group, self.rows = [], 0


def fan_out(
    batches: Iterable[pa.RecordBatch], sinks: Sequence[Callable[[pa.RecordBatch], None]]
) -> None:
    """Give every batch, in order, to each sink, each sink on a thread of its own, at most
    :data:`QUEUED_BATCHES` batches ahead of it (pyarrow's writers release the GIL: the CSV
    and the Parquet file are written at once, on two cores). The first error of a sink or of
    ``batches`` is raised once every thread has ended."""
    queues: list[queue.Queue[pa.RecordBatch | None]] = [queue.Queue(QUEUED_BATCHES) for _ in sinks]
    errors: list[BaseException] = []

    def drain(
        q: queue.Queue[pa.RecordBatch | None], sink: Callable[[pa.RecordBatch], None]
    ) -> None:
        while (batch := q.get()) is not None:
            if errors:
                continue  # another sink failed: take what comes until the end, write nothing
            try:
                sink(batch)
            except BaseException as exc:
                errors.append(exc)

    threads = [
        threading.Thread(target=drain, args=(q, sink), name="h2lab-export", daemon=True)
        for q, sink in zip(queues, sinks, strict=True)
    ]
    for t in threads:
        t.start()
    try:
        for batch in batches:
            if errors:
                break
            for q in queues:
                q.put(batch)
    finally:
        for q in queues:
            q.put(None)
        for t in threads:
            t.join()
    if errors:
        raise errors[0]


def export_table(db_path: Path, table: str, out_dir: Path) -> list[Path]:
    """Write ``out_dir/TABLE.parquet``, and ``out_dir/TABLE.csv`` unless the table has more
    than :data:`CSV_ROWS_MAX` rows (then a CSV left by an earlier export is removed), in one
    pass over ``table``; the paths written."""
    import pyarrow.csv as pacsv  # type: ignore[import-untyped]
    import pyarrow.parquet as pq

    columns = TABLES[table]
    schema = arrow_schema(columns)
    have = table_columns(db_path, table)
    order = "id" if "id" in columns else "rowid"
    csv_path, parquet_path = out_dir / f"{table}.csv", out_dir / f"{table}.parquet"
    if table in OPTIONAL and table not in tables_of(db_path):
        return []  # a store written before the table was: nothing to export
    sealed, rows = _counted(db_path, table)
    if table in OPTIONAL and rows == 0:
        csv_path.unlink(missing_ok=True)
        parquet_path.unlink(missing_ok=True)
        return []
    with contextlib.ExitStack() as files:
        parquet = files.enter_context(pq.ParquetWriter(parquet_path, schema))
        groups = _RowGroups(parquet, schema)
        sinks: list[Callable[[Batch], None]] = [groups]
        if rows <= CSV_ROWS_MAX:
            options = pacsv.WriteOptions(quoting_style="needed")
            sinks.append(
                files.enter_context(
                    pacsv.CSVWriter(csv_path, schema, write_options=options)
                ).write_batch
            )
        else:
            csv_path.unlink(missing_ok=True)
        stored = read_batches(db_path, table, columns, order=order, have=have)
        fan_out(itertools.chain(_sealed_batches(db_path, table, sealed), stored), sinks)
        groups.flush()
    return [csv_path, parquet_path] if rows <= CSV_ROWS_MAX else [parquet_path]


def _counted(db_path: Path, table: str) -> tuple[list[Segment], int]:
    """The segments of ``table`` (resources only; none in a small store) and its rows, sealed
    and not."""

    def query(db: sqlite3.Connection) -> tuple[list[Segment], int]:
        sealed = registered(db) if table == "resources" else []
        return sealed, int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])

    sealed, rows = read(db_path, query)  # one snapshot: a seal moves rows from table to segment
    return sealed, rows + sum(s.rows for s in sealed)


def _sealed_batches(db_path: Path, table: str, sealed: list[Segment]) -> Iterator[Batch]:
    return batches(db_path.parent / SEGMENTS_DIR, sealed, TABLES[table])


def tables_of(db_path: Path) -> frozenset[str]:
    """The store's tables."""
    return read(
        db_path,
        lambda db: frozenset(r[0] for r in db.execute("SELECT name FROM sqlite_master")),
    )


def export_tables(db_path: Path, out_dir: Path) -> list[Path]:
    """Write ``trials.parquet``, ``resources.parquet`` and, up to :data:`CSV_ROWS_MAX` rows,
    ``trials.csv`` and ``resources.csv`` to ``out_dir`` (and a journey's ``steps`` the same
    way, where the store has some); the paths written."""
    return [p for table in TABLES for p in export_table(db_path, table, out_dir)]
