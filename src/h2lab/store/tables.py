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

Every reader of a store opens it here (:func:`opening`), read-only, one of two ways, since
``h2lab run`` may be writing the store meanwhile (issue #56, item 3):

- *finished*: no run holds the folder's run lock (:mod:`h2lab.store.lock`) and no ``-wal`` with
  content is beside the store. Opened ``immutable=1``: SQLite takes no lock and makes no file,
  so a reader leaves the folder as it was. Plain ``mode=ro`` on a WAL database made an empty
  ``-wal`` and a 32 KiB ``-shm`` and left both behind, and in a folder the reader may not write
  it failed ("attempt to write a readonly database"). But an immutable reader trusts the file
  not to change: readers of a file that a writer checkpointed into meanwhile read torn pages
  ("database disk image is malformed", rows and counts of two transactions). So the read counts
  only if no run started meanwhile: a run writes its pid into the lock file once it holds the
  lock, before it opens the store, which changes the file's ctime (nothing sets a ctime back),
  and :meth:`Opening.check`, after the read, compares the lock file's inode and ctime with those
  seen before the lock was tested. A read that fails the check is made again
  (:func:`again_if_run_started`), or refused (:class:`RunStarted`) where batches already went
  on. The reader holds no lock while it reads: a shared ``flock`` would make a run that starts
  meanwhile fail, with a message naming the pid of a run long gone; a look at the results must
  never cost a run.
- *live*: a run holds the lock, or a ``-wal`` has content (a run writing, one killed, or another
  writer). Opened WAL-aware (``mode=ro`` alone): SQLite's locking gives each read transaction one
  committed snapshot, and every statement of a read is in one transaction (:func:`read`; the
  one query of :func:`read_batches`). Such a reader writes the ``-shm`` as any reader does; open
  when the run's last connection closes, it keeps that close from checkpointing, and the
  ``-wal`` and ``-shm`` stay (later readers read through them) until a :class:`~h2lab.store.Store`
  next opens and closes the folder (the report, a resumed run).

Only runs are watched: the commands that open a :class:`~h2lab.store.Store` without the run lock
(``report``, ``verdict``, ``restore``) write, as they open it, the schema's version only (page 1,
the same bytes but a change counter) unless the store is older than the schema.
This module imports nothing of h2lab's but its errors, so that every part of the store can use
it.
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from h2lab.errors import H2LabError

if TYPE_CHECKING:
    # pyarrow ships no type information; it is imported when a table is read (importing it
    # imports `socket`, and the report's modules are pure: tests/unit/test_imports.py)
    import pyarrow as pa  # type: ignore[import-untyped]

T = TypeVar("T")

BATCH_ROWS = 65_536
"""Rows per Arrow batch: bounds what one batch holds (about 10 MB of resources)."""
BUSY_TIMEOUT_MS = 60_000
"""As :class:`h2lab.store.Store`'s ``timeout=60``."""
_DUMMY = {"TEXT": "''", "REAL": "0.0", "INTEGER": "0"}
RUN_LOCK = ".h2lab-run.lock"
"""As :data:`h2lab.store.lock.RUN_LOCK` (that module's error messages need more of h2lab than
this one imports; tests/unit/test_store_opening.py holds the two equal)."""
READS = 3
"""Tries of :func:`read`: a second finds the run's lock held; a third covers a run that started
and ended within one read."""


def arrow_type(sql_type: str) -> pa.DataType:
    """The column's declared SQLite type (first word of its declaration) as an Arrow type."""
    import pyarrow as pa

    types = {"TEXT": pa.string(), "REAL": pa.float64(), "INTEGER": pa.int64()}
    return types[sql_type.split()[0]]


def arrow_schema(columns: Mapping[str, str]) -> pa.Schema:
    """Column name -> declared type (``TRIAL_COLUMNS``, ``RESOURCE_COLUMNS``) as a schema."""
    import pyarrow as pa

    return pa.schema([(n, arrow_type(t)) for n, t in columns.items()])


class RunStarted(H2LabError):
    """An ``h2lab run`` started in the folder while its store was read as finished: what was
    read may mix two states of the file."""

    def __init__(self, db_path: Path) -> None:
        super().__init__(
            f"{db_path}: an h2lab run started in this folder while it was being read; read it "
            "again (the folder is read as a live store then)"
        )


class CannotOpen(Exception):
    """SQLite could not open the file at all (its message)."""


def _lock_seen(lock: Path) -> tuple[int, int] | None:
    """The run lock file's inode and ctime (ns), None when it does not exist. A run writes its
    pid into it once it holds the lock, before it opens the store: the ctime then changes, and
    nothing can set a ctime back."""
    try:
        st = os.stat(lock)
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_ctime_ns


def _run_holds(lock: Path) -> bool:
    """Whether a run holds the folder's lock now. The test takes the lock shared for as long as
    two system calls: a run starting in that instant is refused as by another run."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC)  # flock needs no write access
    except FileNotFoundError:
        return False  # no run has locked this folder: a run makes the file before it writes
    except OSError:
        return True  # cannot tell (no read access): read it as live
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # and with it the shared lock, if taken
    return False


def _has_content(path: Path) -> bool:
    try:
        return os.stat(path).st_size > 0
    except FileNotFoundError:  # a writer's last close removes it at any moment
        return False


@dataclasses.dataclass(frozen=True)
class Opening:
    """How a store is opened to read (:func:`opening`): its URI, whether immutable (the folder
    read as finished), and what the run lock looked like just before it was tested."""

    db_path: Path
    uri: str
    immutable: bool
    lock_seen: tuple[int, int] | None

    def check(self) -> None:
        """Raise :class:`RunStarted` when a run may have written the store since this opening
        was decided: only an immutable reading is fooled by a writer. Call it after reading,
        before the rows read are used."""
        if self.immutable and _lock_seen(self.db_path.parent / RUN_LOCK) != self.lock_seen:
            raise RunStarted(self.db_path)


def opening(db_path: Path) -> Opening:
    """How to open ``db_path`` to read it now: immutable when no run holds its folder's lock
    and no ``-wal`` beside it has content, else WAL-aware (the module's docstring says why)."""
    lock = db_path.parent / RUN_LOCK
    seen = _lock_seen(lock)  # before the test: a run that locks after it changes this
    immutable = not _run_holds(lock) and not _has_content(Path(f"{db_path}-wal"))
    uri = db_path.resolve().as_uri() + "?mode=ro" + ("&immutable=1" if immutable else "")
    return Opening(db_path, uri, immutable, seen)


def again_if_run_started(read_once: Callable[[], T]) -> T:
    """``read_once()``, made again when it raised :class:`RunStarted` (:data:`READS` tries in
    all): for a read whose result is used only once it is whole."""
    for _ in range(READS - 1):
        try:
            return read_once()
        except RunStarted:
            pass
    return read_once()


def read(db_path: Path, query: Callable[[sqlite3.Connection], T]) -> T:
    """``query(db)`` with ``db_path`` opened to read through Python's own SQLite
    (:func:`opening`), every statement in one read transaction, so one snapshot; made again
    when a run started in a folder read as finished (:func:`again_if_run_started`). A file
    SQLite cannot open raises :class:`CannotOpen`, any other failure its
    :class:`sqlite3.Error`."""

    def once() -> T:
        how = opening(db_path)
        try:
            db = sqlite3.connect(
                how.uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None
            )
        except sqlite3.Error as exc:
            raise CannotOpen(str(exc)) from None
        try:
            db.execute("BEGIN")  # deferred: the snapshot is taken by the first read
            result = query(db)
        finally:
            db.close()  # a read transaction has nothing to commit
        how.check()
        return result

    return again_if_run_started(once)


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
    some) is NULL in every row. :class:`RunStarted` when a run started in a folder read as
    finished before the last batch was read (the batches handed on before were read before
    it started)."""
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
    how = opening(db_path)
    conn = adbc.connect(how.uri)  # one query: one snapshot of a live store
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
                how.check()  # before the batch is handed on: read while no run had started
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
    return read(
        db_path, lambda db: frozenset(r[1] for r in db.execute(f"PRAGMA table_info({table})"))
    )
