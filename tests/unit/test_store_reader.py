"""h2lab.store.reader: a results store read without writing anything, older schemas filled
with their defaults, and bad stores as one SpecError naming the folder or file."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import pytest

from h2lab.errors import SpecError
from h2lab.store import Store
from h2lab.store.reader import read_trials
from tests.unit.test_store_sqlite import record


def test_reads_what_the_store_wrote_and_leaves_the_folder_as_it_was(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.add_trial(record("b|r0|h2s"))
    store.add_trial(record("b|r0|h1s", status="failed"))
    store.add_trial(dataclasses.replace(record("warmup1|b|r0|h2s"), warmup=True))
    store.close()
    before = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    trials = read_trials(tmp_path)
    assert [(t.trial_key, t.status) for t in trials] == [("b|r0|h2s", "ok"), ("b|r0|h1s", "failed")]
    assert trials[0] == dataclasses.replace(record("b|r0|h2s"), id=1)
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == before


def test_an_older_schema_takes_the_column_defaults(tmp_path: Path) -> None:
    Store(tmp_path).close()
    db = sqlite3.connect(tmp_path / "results.sqlite")
    columns = ", ".join(
        c for c in ("id", "trial_key", "experiment", "block", "page", "network", "server",
                    "client", "protocol", "repetition", "seed", "attempt", "status",
                    "started_at", "config_json", "versions_json", "pdt_ms")
    )  # fmt: skip
    db.executescript(
        f"CREATE TABLE old AS SELECT {columns} FROM trials; DROP TABLE trials; "
        "ALTER TABLE old RENAME TO trials;"
    )
    db.execute(
        "INSERT INTO trials VALUES (1, 'k', 'e', 'b|r0', 'synthetic:n=2', 'cable', 'nginx', "
        "'h2load', 'h2s', 0, 7, 1, 'ok', '2026-01-01', '{}', '{}', 42.5)"
    )
    db.commit()
    db.close()
    (t,) = read_trials(tmp_path)
    assert t.pdt_ms == 42.5 and t.plt_ms is None and t.warmup == 0
    assert (t.cell["congestion_control"], t.cell["initcwnd"], t.cell["tls"]) == ("cubic", 10, "1.3")


def test_bad_stores_name_the_folder_or_the_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as missing:
        read_trials(tmp_path)
    assert str(missing.value) == f"{tmp_path}: results.sqlite: no results store in this folder"
    with pytest.raises(SpecError, match="no such folder"):
        read_trials(tmp_path / "nowhere")
    (tmp_path / "results.sqlite").write_text("not a database\n")
    with pytest.raises(SpecError) as text:
        read_trials(tmp_path)
    assert str(text.value).startswith(f"{tmp_path / 'results.sqlite'}: trials: not a readable")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.sqlite"]
    (tmp_path / "results.sqlite").unlink()
    sqlite3.connect(tmp_path / "results.sqlite").execute(
        "CREATE TABLE other (x)"
    ).connection.close()
    with pytest.raises(SpecError, match="trials: no trials table"):
        read_trials(tmp_path)


def test_a_wal_left_by_a_reader_is_not_touched_and_one_with_content_is_read(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path)
    store.add_trial(record("b|r0|h2s"))
    store.close()
    other = sqlite3.connect(tmp_path / "results.sqlite")  # a reader still open: an empty -wal
    other.execute("SELECT COUNT(*) FROM trials").fetchall()
    assert (tmp_path / "results.sqlite-wal").stat().st_size == 0
    before = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    assert [t.trial_key for t in read_trials(tmp_path)] == ["b|r0|h2s"]
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == before
    # a writer whose last trial is only in the -wal (not checkpointed): read through it
    other.execute("PRAGMA wal_autocheckpoint=0")
    other.execute("UPDATE trials SET pdt_ms = 7.5")
    other.commit()
    assert (tmp_path / "results.sqlite-wal").stat().st_size > 0
    assert [t.pdt_ms for t in read_trials(tmp_path)] == [7.5]
    other.close()
