"""How a reader opens a results store (issue #56, item 3): immutable when the folder is finished
(no run holds its lock, no ``-wal`` with content), leaving the folder as it was; WAL-aware while
a run holds the lock; a read made while a run started in a folder read as finished is made again
(or refused, for batches already handed on); the statements of one read see one snapshot."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from h2lab.artifacts import RESULTS_DB
from h2lab.report.export import export_tables
from h2lab.store import Store, lock, tables
from h2lab.store.columns import read_trial_frame
from h2lab.store.reader import read_trials
from h2lab.store.sqlite import TRIAL_COLUMNS
from h2lab.store.tables import RunStarted, opening, read, read_batches, table_columns
from tests.unit.test_store_sqlite import record

KEYS = ("b|r0|h1s", "b|r0|h2s", "b|r1|h1s")


def _finished(out: Path, *, ran: bool = True) -> Path:
    """A folder whose run has ended (``ran``: through the run lock, which leaves its file)."""
    with lock.run_lock(out) if ran else contextlib.nullcontext():
        store = Store(out)
        for key in KEYS:
            store.add_trial(record(key))
        store.close()
    return out / RESULTS_DB


def _files(out: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in out.iterdir()}


def test_the_lock_file_is_the_runs() -> None:
    assert tables.RUN_LOCK == lock.RUN_LOCK


@pytest.mark.parametrize("ran", [True, False], ids=["run-lock-file", "no-lock-file"])
def test_a_finished_folder_is_read_immutable_and_left_as_it_was(tmp_path: Path, ran: bool) -> None:
    db = _finished(tmp_path, ran=ran)
    assert (tmp_path / lock.RUN_LOCK).exists() == ran
    before = _files(tmp_path)
    how = opening(db)
    assert how.immutable and how.uri == f"{db.resolve().as_uri()}?mode=ro&immutable=1"
    assert [t.trial_key for t in read_trials(tmp_path)] == list(KEYS)
    assert "trial_key" in table_columns(db, "trials")
    (batch,) = read_batches(db, "trials", {"id": TRIAL_COLUMNS["id"]})
    assert batch.column("id").to_pylist() == [1, 2, 3]
    assert len(read_trial_frame(db)) == 3
    (tmp_path / "export").mkdir()
    export_tables(db, tmp_path / "export")
    after = _files(tmp_path)
    assert after.pop("export") and after == before  # no -wal, no -shm, nothing touched


def test_a_folder_whose_run_holds_the_lock_is_read_wal_aware(tmp_path: Path) -> None:
    db = _finished(tmp_path)
    with lock.run_lock(tmp_path):  # another open file of the lock: held as by another process
        how = opening(db)
        assert not how.immutable and how.uri == f"{db.resolve().as_uri()}?mode=ro"
        assert [t.trial_key for t in read_trials(tmp_path)] == list(KEYS)
        (batch,) = read_batches(db, "trials", {"trial_key": TRIAL_COLUMNS["trial_key"]})
        assert batch.column("trial_key").to_pylist() == list(KEYS)
    assert opening(db).immutable  # the run has ended


def test_a_wal_with_content_is_read_through_wal_aware(tmp_path: Path) -> None:
    db = _finished(tmp_path)
    writer = sqlite3.connect(db)  # a writer killed before its checkpoint, or not under the lock
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("UPDATE trials SET pdt_ms = 7.5")
    writer.commit()
    try:
        assert not opening(db).immutable
        assert {t.pdt_ms for t in read_trials(tmp_path)} == {7.5}
    finally:
        writer.close()


@pytest.mark.parametrize("ran", [True, False], ids=["run-lock-file", "no-lock-file"])
def test_a_run_starting_during_a_finished_read_makes_it_read_again(
    tmp_path: Path, ran: bool
) -> None:
    db = _finished(tmp_path, ran=ran)
    seen: list[bool] = []
    with contextlib.ExitStack() as run:

        def count(conn: sqlite3.Connection) -> int:
            seen.append(opening(db).immutable)
            if len(seen) == 1:  # a run starts (its lock, its pid) after this read began
                run.enter_context(lock.run_lock(tmp_path))
            return int(conn.execute("SELECT count(*) FROM trials").fetchone()[0])

        assert read(db, count) == 3
    assert seen == [True, False]  # read again, WAL-aware: the run holds the lock


def test_batches_read_after_a_run_started_are_refused(tmp_path: Path) -> None:
    db = _finished(tmp_path)
    batches = read_batches(db, "trials", {"id": TRIAL_COLUMNS["id"]}, batch_rows=1)
    assert next(batches).column("id").to_pylist() == [1]
    with lock.run_lock(tmp_path), pytest.raises(RunStarted) as refused:
        next(batches)  # the next row was read once the run had started
    assert str(refused.value).startswith(f"{db}: an h2lab run started in this folder")


def test_the_statements_of_one_read_see_one_snapshot(tmp_path: Path) -> None:
    db = _finished(tmp_path)
    writer = sqlite3.connect(db)
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("DELETE FROM trials WHERE id = 3")  # a -wal with content: read WAL-aware
    writer.commit()

    def twice(conn: sqlite3.Connection) -> tuple[int, int]:
        first = int(conn.execute("SELECT count(*) FROM trials").fetchone()[0])
        writer.execute("DELETE FROM trials WHERE id = 2")  # committed between the two
        writer.commit()
        return first, int(conn.execute("SELECT count(*) FROM trials").fetchone()[0])

    try:
        assert read(db, twice) == (2, 2)
        (left,) = read(db, lambda conn: conn.execute("SELECT count(*) FROM trials").fetchone())
        assert left == 1
    finally:
        writer.close()


def test_a_store_being_made_shows_a_reader_all_its_tables_or_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CI run of a live reader read ``trials`` of a store whose ``resources`` was not made
    yet: Python's sqlite3 begins no transaction before DDL, so each table was committed alone.
    Here a second connection looks at the schema as each table is made."""
    seen: list[set[str]] = []
    made = tmp_path / RESULTS_DB
    real_connect = sqlite3.connect

    def look(statement: str) -> None:
        if statement.startswith("CREATE TABLE") and made.exists():
            with contextlib.closing(real_connect(f"{made.as_uri()}?mode=ro", uri=True)) as db:
                seen.append({r[0] for r in db.execute("SELECT name FROM sqlite_master")})

    def connect(path: Path, timeout: float) -> sqlite3.Connection:
        db = real_connect(path, timeout=timeout)
        db.set_trace_callback(look)
        return db

    monkeypatch.setattr("h2lab.store.sqlite.sqlite3.connect", connect)
    Store(tmp_path).close()
    assert len(seen) >= 5 and all(s == set() for s in seen), seen
