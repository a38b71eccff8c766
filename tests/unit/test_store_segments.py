"""h2lab.store.segments: resource rows sealed into Parquet read back as they were stored, in
every reader (one trial, priority counts, both exports), and a seal cut short loses nothing."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest

from h2lab.errors import SpecError
from h2lab.report.export import export_tables
from h2lab.spec.factors import Cell
from h2lab.store import Store
from h2lab.store import segments as seg
from h2lab.store.sqlite import RESOURCE_COLUMNS
from tests.unit.test_store_sqlite import RES, record

SIGNALLED = (
    dataclasses.replace(RES[0], priority="VeryHigh", priority_field="u=0, i"),
    dataclasses.replace(RES[1], priority="Low", priority_field="u=4", priority_update="High"),
    dataclasses.replace(RES[1], url="https://o1.h2lab.test/x", pushed=True, from_cache=True),
)


def _fill(store: Store, first: int, count: int) -> None:
    """``count`` trials, alternating clients, ok and failed, each with its resources."""
    for n in range(first, first + count):
        client = "chromium" if n % 2 else "firefox"
        cell = Cell.of(page="synthetic:n=2", network="cable", server="nginx", client=client)
        status = "failed" if n % 5 == 4 else "ok"
        resources = tuple(dataclasses.replace(r, start_ms=r.start_ms + n) for r in SIGNALLED)
        store.add_trial(record(f"b{n}|h2s", status=status, cell=cell), resources)


def _everything(store: Store, folder: Path, out: Path) -> tuple[object, ...]:
    """What each reader of resources gives."""
    ids = [t.id or 0 for t in store.trials(include_warmup=True)]
    out.mkdir()
    store.export_csv(out)
    export_tables(folder / "results.sqlite", out)
    return (
        [store.resources(i) for i in ids],
        store.resources_of(ids[::-1]),
        store.priority_signals(),
        (out / "resources.csv").read_bytes(),
        pq.read_table(out / "resources.parquet").to_pylist(),
    )


def test_sealed_rows_read_back_as_stored_by_every_reader(tmp_path: Path) -> None:
    store = Store(tmp_path / "r")
    try:
        _fill(store, 0, 7)
        _fill(store, 7, 3)
        before = _everything(store, tmp_path / "r", tmp_path / "before")
        store.close()  # a seal between two runs, then one in the next
        store = Store(tmp_path / "r")
        assert store.seal_if_due(rows=100) is None  # 30 rows: not due
        first = store.seal_if_due(rows=30)
        assert first == seg.Segment("seg-0000000001-0000000010.parquet", 1, 10, 30)
        _fill(store, 10, 4)  # more rows in SQLite after the segment
        second = store.seal_if_due(rows=12)
        assert second is not None and (second.first_trial, second.rows) == (11, 12)
        _fill(store, 14, 2)  # and some left unsealed
        after = _everything(store, tmp_path / "r", tmp_path / "after")
        assert store.segments() == [first, second]
        in_sqlite = store._db.execute("SELECT count(*) FROM resources").fetchone()[0]
        assert in_sqlite == 6
    finally:
        store.close()
    fresh = Store(tmp_path / "fresh")  # the same trials never sealed
    try:
        _fill(fresh, 0, 16)
        whole = _everything(fresh, tmp_path / "fresh", tmp_path / "whole")
    finally:
        fresh.close()
    assert after == whole  # sealed in two segments, or never: the same rows in the same order
    assert isinstance(after[0], list) and before[0] == after[0][:10]


def test_a_seal_cut_short_leaves_the_rows_in_sqlite_and_its_file_is_swept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(tmp_path / "r")
    try:
        _fill(store, 0, 4)
        rows = store.resources_of([1, 2, 3, 4])
        real_write = seg._write

        def write_then_die(*args: object) -> int:
            real_write(*args)  # type: ignore[arg-type]
            raise OSError("killed after the rename")

        monkeypatch.setattr(seg, "_write", write_then_die)
        with pytest.raises(OSError, match="killed"):
            store.seal_if_due(rows=1)
        stray = tmp_path / "r" / seg.SEGMENTS_DIR / "seg-0000000001-0000000004.parquet"
        assert stray.is_file() and store.segments() == []
        assert store.resources_of([1, 2, 3, 4]) == rows  # still in SQLite, the stray unread
        monkeypatch.setattr(seg, "_write", real_write)
        _fill(store, 4, 1)
        done = store.seal_if_due(rows=1)
        assert done is not None and done.name == "seg-0000000001-0000000005.parquet"
        assert not stray.exists()  # swept by the seal that succeeded
        assert store.resources_of([1, 2, 3, 4]) == rows
    finally:
        store.close()


def test_a_segment_written_before_a_column_existed_reads_it_as_null(tmp_path: Path) -> None:
    store = Store(tmp_path / "r")
    try:
        _fill(store, 0, 2)
        segment = store.seal_if_due(rows=1)
        assert segment is not None
        path = tmp_path / "r" / seg.SEGMENTS_DIR / segment.name
        table = pq.read_table(path)
        pq.write_table(table.drop_columns(["from_cache", "priority_update"]), path)
        rows = store.resources(1)
        assert [r["from_cache"] for r in rows] == [None, None, None]
        assert [r["priority_update"] for r in rows] == [None, None, None]
        assert [r["url"] for r in rows] == [r.url for r in SIGNALLED]
        signals = store.priority_signals()
        assert {(r[2], r[5]) for r in signals} == {("VeryHigh", 0), ("Low", 0)}
    finally:
        store.close()


def test_sealed_rows_have_every_column_of_the_table(tmp_path: Path) -> None:
    store = Store(tmp_path / "r")
    try:
        _fill(store, 0, 1)
        segment = store.seal_if_due(rows=1)
        assert segment is not None
    finally:
        store.close()
    table = pq.read_table(tmp_path / "r" / seg.SEGMENTS_DIR / segment.name)
    assert table.schema.names == list(RESOURCE_COLUMNS)
    db = sqlite3.connect(tmp_path / "r" / "results.sqlite")
    try:
        assert db.execute("SELECT count(*) FROM resources").fetchone() == (0,)
        assert db.execute("SELECT name, rows FROM resource_segments").fetchall() == [
            (segment.name, 3)
        ]
    finally:
        db.close()


def test_a_resource_less_trial_has_no_rows_sealed_or_not(tmp_path: Path) -> None:
    store = Store(tmp_path / "r")
    try:
        _fill(store, 0, 2)
        store.add_trial(record("bare|h2s"), ())
        assert store.seal_if_due(rows=1) is not None
        assert store.resources(3) == []
        assert store.resources_of([3, 99]) == {}
        assert sorted(store.resources_of([1, 3, 2])) == [1, 2]
    finally:
        store.close()


def test_a_store_naming_a_file_outside_its_segments_is_refused(tmp_path: Path) -> None:
    """A results folder from elsewhere is outside data: a registered name that is not one
    h2lab writes (here a path out of the folder) is refused, naming the table, not opened."""
    store = Store(tmp_path / "r")
    try:
        _fill(store, 0, 1)
        with store._db:
            store._db.execute(
                "INSERT INTO resource_segments VALUES ('../../../etc/passwd', 1, 1, 3)"
            )
        with pytest.raises(SpecError, match="resource_segments: not a segment name"):
            store.resources(1)
    finally:
        store.close()
