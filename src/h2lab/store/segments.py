"""Resource rows sealed into Parquet segments beside the SQLite store (issue #43).

A trial and its resources are committed to SQLite together when the trial ends, as before. Once
:data:`SEAL_ROWS` resource rows have gathered there, :func:`seal` moves them into one Parquet
file under ``resources/`` in the results folder, named by the first and last trial id it holds,
and deletes them from SQLite. A store of a million trials holds fifty million resource rows:
read back from SQLite they cost 58 s (ADBC, 0.86 million rows/s on this machine kind), read from
Parquet a few seconds, so a report and its export stream them from the segments.

Crash safety. The rows are moved under SQLite's write lock: the file is written beside its
final name, synced and renamed; then, in one transaction, the segment is registered in the
``resource_segments`` table and the rows it holds are deleted. A crash before that commit
leaves the rows in SQLite and a file nobody registered: readers go by the registry only, and
the next seal removes such strays (under the same lock, so never a file being sealed).

Order. Resource rows are inserted in trial order (the driver alone writes the store, a trial's
rows in its own transaction), so a segment's rows in ``rowid`` order are ordered by
``trial_id``, segments follow one another by trial id, and the rows still in SQLite come after
the last segment: :func:`batches` then SQLite's rows in ``rowid`` order are the rows in the
order they were stored, sealed or not. A column added to the resources table after a segment
was written is NULL in its rows.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from h2lab.artifacts import RESULTS_DB
from h2lab.errors import SpecError
from h2lab.store.tables import arrow_schema

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]

SEGMENTS_DIR = "resources"
"""The segments' folder in the results folder."""
SEAL_ROWS = 1_000_000
"""Resource rows gathered in SQLite before they are sealed into a segment: about 20,000 browser
trials of a 50-request page. Sealing them took ~3 s on this machine kind (read, write, delete)."""
ROW_GROUP_ROWS = 65_536
"""Rows per Parquet row group: a lookup of one trial's resources reads one group or two (its
statistics on ``trial_id`` skip the others)."""
_NAME = re.compile(r"seg-[0-9]{10}-[0-9]{10}\.parquet")
"""What :func:`seal` names a segment: nothing else is opened under ``resources/``."""
REGISTRY_DDL = (
    "CREATE TABLE IF NOT EXISTS resource_segments (name TEXT PRIMARY KEY, "
    "first_trial INTEGER NOT NULL, last_trial INTEGER NOT NULL, rows INTEGER NOT NULL)"
)


@dataclass(frozen=True)
class Segment:
    """One sealed file: the resource rows of trials ``first_trial`` to ``last_trial``."""

    name: str
    first_trial: int
    last_trial: int
    rows: int


def registered(db: sqlite3.Connection) -> list[Segment]:
    """The store's segments, in trial order (none in a store that predates them)."""
    have = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'resource_segments'"
    ).fetchone()
    if not have:
        return []
    rows = db.execute(
        "SELECT name, first_trial, last_trial, rows FROM resource_segments ORDER BY first_trial"
    )
    found = [Segment(str(n), int(a), int(b), int(r)) for n, a, b, r in rows]
    for segment in found:  # a store from elsewhere may name any file: read only our own
        if _NAME.fullmatch(segment.name) is None:
            raise SpecError(
                RESULTS_DB, "resource_segments", f"not a segment name: {segment.name!r}"
            )
    return found


def seal(db: sqlite3.Connection, db_path: Path, columns: Mapping[str, str]) -> Segment | None:
    """Move every resource row in SQLite into a new segment (module text); None when there is
    none. ``db`` is the store's connection, outside any transaction."""
    folder = db_path.parent / SEGMENTS_DIR
    db.execute("BEGIN IMMEDIATE")
    try:
        last_rowid, first_trial, last_trial, count = db.execute(
            "SELECT max(rowid), min(trial_id), max(trial_id), count(*) FROM resources"
        ).fetchone()
        if not count:
            db.rollback()
            return None
        _remove_strays(folder, {s.name for s in registered(db)})
        segment = Segment(
            f"seg-{first_trial:010d}-{last_trial:010d}.parquet", first_trial, last_trial, count
        )
        rows = _read(db, f"rowid <= {int(last_rowid)}", columns)
        written = _write(folder, segment.name, rows, arrow_schema(columns))
        if written != count:
            raise RuntimeError(f"sealed {written} resource rows, expected {count}")
        db.execute(
            "INSERT INTO resource_segments (name, first_trial, last_trial, rows) "
            "VALUES (?, ?, ?, ?)",
            (segment.name, first_trial, last_trial, count),
        )
        db.execute("DELETE FROM resources WHERE rowid <= ?", (last_rowid,))
        db.commit()
    except BaseException:
        db.rollback()
        raise
    return segment


def _read(
    db: sqlite3.Connection, where: str, columns: Mapping[str, str]
) -> Iterator[pa.RecordBatch]:
    """The resource rows ``WHERE where`` in ``rowid`` order, as batches, read through ``db``
    itself. Not through ADBC (:func:`h2lab.store.tables.read_batches`): its driver carries its
    own copy of SQLite, and closing its file releases every POSIX lock this process holds on
    the store, ``db``'s write lock among them (SQLite's "locking protocol" error on the next
    write; sqlite.org/howtocorrupt.html, 2.2.1)."""
    import pyarrow as pa

    schema = arrow_schema(columns)
    have = {r[1] for r in db.execute("PRAGMA table_info(resources)")}
    picked = ", ".join(n if n in have else f"NULL AS {n}" for n in columns)
    cur = db.execute(f"SELECT {picked} FROM resources WHERE {where} ORDER BY rowid")
    while rows := cur.fetchmany(ROW_GROUP_ROWS):
        values = zip(*rows, strict=True)
        arrays = [pa.array(col, type=f.type) for col, f in zip(values, schema, strict=True)]
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def _write(folder: Path, name: str, batches: Iterable[pa.RecordBatch], schema: pa.Schema) -> int:
    """``batches`` as ``folder/name``, synced, renamed into place; the rows written."""
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    folder.mkdir(exist_ok=True)
    tmp = folder / f".{name}.tmp"
    rows = 0
    with pq.ParquetWriter(tmp, schema) as writer:
        for batch in batches:
            writer.write_batch(batch, row_group_size=ROW_GROUP_ROWS)
            rows += batch.num_rows
    with tmp.open("rb+") as f:
        os.fsync(f.fileno())
    tmp.replace(folder / name)
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return rows


def _remove_strays(folder: Path, names: set[str]) -> None:
    """Remove files of ``folder`` no segment is registered as (a seal cut short)."""
    if not folder.is_dir():
        return
    for path in folder.iterdir():
        if path.name not in names and path.is_file():
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with ``schema``'s columns in its order: one a segment lacks is NULL."""
    import pyarrow as pa

    if batch.schema.equals(schema):
        return batch
    arrays = [
        batch.column(f.name).cast(f.type)
        if f.name in batch.schema.names
        else pa.nulls(batch.num_rows, f.type)
        for f in schema
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def batches(
    folder: Path, segments: Sequence[Segment], columns: Mapping[str, str]
) -> Iterator[pa.RecordBatch]:
    """The segments' rows, in order, as batches of :func:`arrow_schema` (``columns``)."""
    import pyarrow.parquet as pq

    schema = arrow_schema(columns)
    for segment in segments:
        with pq.ParquetFile(folder / segment.name) as f:
            for batch in f.iter_batches(batch_size=ROW_GROUP_ROWS):
                yield _conform(batch, schema)


def rows_of(
    folder: Path, segments: Sequence[Segment], trial_ids: Iterable[int], columns: Mapping[str, str]
) -> dict[int, list[dict[str, Any]]]:
    """The sealed resource rows of ``trial_ids``, by trial id, each in stored order (a trial no
    segment holds is absent)."""
    import pyarrow.parquet as pq

    schema = arrow_schema(columns)
    wanted = sorted(set(trial_ids))
    found: dict[int, list[dict[str, Any]]] = {}
    for segment in segments:
        ids = [i for i in wanted if segment.first_trial <= i <= segment.last_trial]
        if not ids:
            continue
        table = pq.read_table(
            folder / segment.name, filters=[("trial_id", "in", ids)], use_threads=False
        )
        for batch in table.to_batches():
            for row in _conform(batch, schema).to_pylist():
                found.setdefault(int(row["trial_id"]), []).append(row)
    return found


PriorityKey = tuple[str, str, str, str]
"""(client, protocol, the client's priority, the RFC 9218 field sent); '' for none"""
PRIORITY_COLUMNS = ("trial_id", "protocol", "priority", "priority_field", "priority_update")


def priority_counts(
    folder: Path,
    segments: Sequence[Segment],
    clients: Mapping[int, str],
    columns: Mapping[str, str],
) -> dict[PriorityKey, tuple[int, int]]:
    """Over the sealed resources of the trials in ``clients`` (trial id -> client: the ok
    trials, warm-ups left out) that carry a priority or a priority field: (requests, requests
    whose priority changed after they were sent) per :data:`PriorityKey`, as
    :meth:`h2lab.store.sqlite.Store.priority_signals` counts them in SQLite."""
    import numpy as np
    import pyarrow.parquet as pq

    schema = arrow_schema({c: columns[c] for c in PRIORITY_COLUMNS})
    ids = np.array(sorted(clients), dtype=np.int64)
    counts: dict[PriorityKey, tuple[int, int]] = {}
    if not len(ids):
        return counts
    names = sorted(set(clients.values()))
    code = {n: i for i, n in enumerate(names)}
    codes = np.array([code[clients[int(i)]] for i in ids], dtype=np.int32)
    for segment in segments:
        with pq.ParquetFile(folder / segment.name) as f:
            have = [c for c in PRIORITY_COLUMNS if c in f.schema_arrow.names]
            for batch in f.iter_batches(batch_size=ROW_GROUP_ROWS, columns=have):
                _count(_conform(batch, schema), ids, codes, names, counts)
    return counts


def _count(
    batch: pa.RecordBatch,
    ids: Any,
    codes: Any,
    names: Sequence[str],
    counts: dict[PriorityKey, tuple[int, int]],
) -> None:
    """Add ``batch``'s signalled requests of the trials ``ids`` (sorted; each one's client is
    ``names[codes[i]]``) to ``counts``."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    signalled = pc.or_(pc.is_valid(batch["priority"]), pc.is_valid(batch["priority_field"]))
    batch = batch.filter(signalled)
    if not batch.num_rows:
        return
    tid = batch["trial_id"].to_numpy(zero_copy_only=False)
    at = np.minimum(np.searchsorted(ids, tid), len(ids) - 1)
    ok = ids[at] == tid
    batch = batch.filter(pa.array(ok))
    table = pa.table(
        {
            "client": pa.array(codes[at[ok]], pa.int32()),
            "protocol": batch["protocol"],
            "priority": pc.fill_null(batch["priority"], ""),
            "priority_field": pc.fill_null(batch["priority_field"], ""),
            "trial_id": batch["trial_id"],
            "priority_update": batch["priority_update"],
        }
    )
    grouped = table.group_by(["client", "protocol", "priority", "priority_field"]).aggregate(
        [("trial_id", "count"), ("priority_update", "count")]
    )
    for row in grouped.to_pylist():
        key = (names[row["client"]], row["protocol"], row["priority"], row["priority_field"])
        n, changed = counts.get(key, (0, 0))
        counts[key] = (n + row["trial_id_count"], changed + row["priority_update_count"])
