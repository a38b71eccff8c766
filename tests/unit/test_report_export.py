"""h2lab.report.export on stores written by Store: the streamed CSV is byte for byte what
pyarrow wrote of the whole table before issue #43, the Parquet holds the same rows and types,
however many batches and row groups the rows are cut into."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.csv as pacsv  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest

from h2lab.clients import ResourceTiming
from h2lab.report import export
from h2lab.store import Store
from h2lab.store import tables as store_tables
from h2lab.store.sqlite import RESOURCE_COLUMNS, TRIAL_COLUMNS
from h2lab.store.tables import arrow_schema
from tests.unit.test_report_model import trial


def whole_table(db_path: Path, table: str) -> pa.Table:
    """The table as the export built it before it streamed: every row, then one write."""
    columns = export.TABLES[table]
    order = "id" if "id" in columns else "rowid"
    db = sqlite3.connect(db_path)
    rows = db.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {order}").fetchall()
    db.close()
    schema = arrow_schema(columns)
    cols = list(zip(*rows, strict=True)) if rows else [()] * len(columns)
    arrays = [pa.array(c, type=schema.field(i).type) for i, c in enumerate(cols)]
    return pa.Table.from_arrays(arrays, schema=schema)


def store_with_late_texts(out: Path) -> None:
    """Load-client trials first (no priority, no error: NULL text columns in the first rows,
    which the reader must not take for integers), browser trials after, with quotes, commas
    and line breaks in their texts."""
    store = Store(out)
    plain = ResourceTiming("https://o1/a.css", "o1", 0.0, None, 12.5, 10, "h2s", "o1#0")
    for r in range(6):
        store.add_trial(trial("h2s", r, 80.0 + r), (plain,) * 3)
    odd = ResourceTiming(
        'https://o1/q?a=1,b="2"', "o1", 1.25, 3.0, 4.0, 7, "h2s", "o1#1", priority="VeryHigh",
        status=200, error="net::ERR_BLOCKED_BY_ORB\nsecond line", priority_field="u=0, i",
    )  # fmt: skip
    for r in range(3):
        store.add_trial(trial("h2s", r, 90.0, client="chromium", plt=99.0), (plain, odd))
    store.close()


@pytest.mark.parametrize("batch_rows", [None, 2])
def test_streamed_export_is_the_whole_table_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_rows: int | None
) -> None:
    store_with_late_texts(tmp_path)
    if batch_rows:  # cut the rows into batches of 2 and row groups of 5
        monkeypatch.setattr(store_tables, "BATCH_ROWS", batch_rows)
        monkeypatch.setattr(export, "ROW_GROUP_ROWS", 5)
    out = tmp_path / "out"
    out.mkdir()
    written = export.export_tables(tmp_path / "results.sqlite", out)
    assert [p.name for p in written] == [
        "trials.csv", "trials.parquet", "resources.csv", "resources.parquet"
    ]  # fmt: skip
    for table, columns in (("trials", TRIAL_COLUMNS), ("resources", RESOURCE_COLUMNS)):
        before = whole_table(tmp_path / "results.sqlite", table)
        expected = tmp_path / f"{table}-before.csv"
        pacsv.write_csv(before, expected, write_options=pacsv.WriteOptions(quoting_style="needed"))
        assert (out / f"{table}.csv").read_bytes() == expected.read_bytes()
        parquet = pq.read_table(out / f"{table}.parquet")
        assert parquet.schema.equals(arrow_schema(columns))
        assert parquet.equals(before)
    resources = pq.read_table(out / "resources.parquet").to_pylist()
    assert resources[0]["priority"] is None and resources[-1]["priority"] == "VeryHigh"
    if batch_rows:
        assert pq.ParquetFile(out / "resources.parquet").num_row_groups == 5  # 24 rows


def test_empty_tables_are_a_header_and_no_rows(tmp_path: Path) -> None:
    Store(tmp_path).close()
    export.export_tables(tmp_path / "results.sqlite", tmp_path)
    header = (tmp_path / "resources.csv").read_text().splitlines()
    assert header == [",".join(f'"{c}"' for c in RESOURCE_COLUMNS)]
    assert pq.read_table(tmp_path / "trials.parquet").num_rows == 0


def test_fan_out_gives_every_batch_in_order_to_each_sink_and_raises_the_first_error() -> None:
    batches = [pa.record_batch({"n": [i]}) for i in range(20)]
    seen: dict[str, list[int]] = {"a": [], "b": []}
    threads: set[str] = set()

    def sink(name: str) -> Callable[[pa.RecordBatch], None]:
        def take(batch: pa.RecordBatch) -> None:
            threads.add(threading.current_thread().name + name)
            seen[name].append(batch["n"][0].as_py())

        return take

    export.fan_out(iter(batches), [sink("a"), sink("b")])
    assert seen == {"a": list(range(20)), "b": list(range(20))}
    assert len(threads) == 2 and threading.current_thread().name + "a" not in threads

    def broken(batch: pa.RecordBatch) -> None:
        if batch["n"][0].as_py() == 3:
            raise OSError("No space left on device")

    with pytest.raises(OSError, match="No space"):
        export.fan_out(iter(batches), [broken, sink("a")])

    def failing_reader() -> Iterator[pa.RecordBatch]:
        yield batches[0]
        raise RuntimeError("store unreadable")

    with pytest.raises(RuntimeError, match="unreadable"):
        export.fan_out(failing_reader(), [sink("b")])
    assert all(t.name != "h2lab-export" for t in threading.enumerate())  # every one joined


def test_a_table_over_the_csv_limit_gets_its_parquet_file_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resources: 24 rows, trials: 9; a limit of 10 rows leaves out resources.csv (and removes
    the one an earlier, smaller export wrote), keeps trials.csv, and every row is in the
    Parquet files."""
    store_with_late_texts(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "resources.csv").write_text("stale\n")
    monkeypatch.setattr(export, "CSV_ROWS_MAX", 10)
    written = export.export_tables(tmp_path / "results.sqlite", out)
    assert [p.name for p in written] == ["trials.csv", "trials.parquet", "resources.parquet"]
    assert not (out / "resources.csv").exists()
    assert pq.read_table(out / "resources.parquet").num_rows == 24
    assert len((out / "trials.csv").read_text().splitlines()) == 1 + 9
