"""h2lab.store.sqlite: one committed row per trial attempt, resume keys, CSV export."""

from __future__ import annotations

import csv
import dataclasses
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from h2lab.clients import ResourceTiming
from h2lab.results import STATUSES, TrialRecord
from h2lab.spec.factors import Cell
from h2lab.spec.protocols import PROTOCOLS
from h2lab.spec.vocab import one_of
from h2lab.store import Store
from h2lab.store.sqlite import (
    RESOURCE_COLUMNS,
    SCHEMA_VERSION,
    TRIAL_COLUMNS,
    config_json,
    row_of,
)


def record(key: str = "b|h2s", status: str = "ok", attempt: int = 1, **kw: object) -> TrialRecord:
    protocol = key.rsplit("|", 1)[1]
    base = TrialRecord(
        trial_key=key,
        experiment="e",
        block=key.rsplit("|", 1)[0],
        cell=Cell.of(page="synthetic:n=2", network="cable", server="nginx", client="h2load"),
        page_digest="0123456789abcdef",
        protocol=one_of(PROTOCOLS, protocol, "protocol"),
        repetition=0,
        seed=99,
        attempt=attempt,
        status=one_of(STATUSES, status, "status"),
        error=None if status == "ok" else "boom",
        started_at="2026-01-01T00:00:00.000+00:00",
        duration_s=1.5,
        pdt_ms=123.5 if status == "ok" else None,
        plt_ms=None,
        body_bytes=20_000,
        bytes_up=1_000,
        bytes_down=25_000,
        tcp_connections=1,
        retransmits=0,
        request_header_bytes=None,
        response_header_bytes=310,
        config={"protocol": "h2s", "a": 1},
        versions={"h2lab": "0.1.0"},
    )
    return dataclasses.replace(base, **kw)  # type: ignore[arg-type]


RES = (
    ResourceTiming(
        url="https://o1.h2lab.test/index.html",
        origin="o1.h2lab.test",
        start_ms=0.0,
        ttfb_ms=None,
        end_ms=10.5,
        bytes=500,
        protocol="h2s",
        connection="o1.h2lab.test#0",
    ),
    ResourceTiming(
        url="https://o1.h2lab.test/obj/00000.bin",
        origin="o1.h2lab.test",
        start_ms=0.2,
        ttfb_ms=3.0,
        end_ms=20.0,
        bytes=10_000,
        protocol="h2s",
        connection="o1.h2lab.test#0",
    ),
)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "out")
    yield s
    s.close()


def test_creates_folder_and_schema(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b"
    s = Store(out)
    s.close()
    db = sqlite3.connect(out / "results.sqlite")
    try:
        cols = [r[1] for r in db.execute("PRAGMA table_info(trials)")]
        assert cols == list(TRIAL_COLUMNS)
        rcols = [r[1] for r in db.execute("PRAGMA table_info(resources)")]
        assert rcols == list(RESOURCE_COLUMNS)
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        db.close()


def test_add_trial_is_committed(store: Store) -> None:
    trial_id = store.add_trial(record(), RES)
    other = sqlite3.connect(store.path)
    try:
        rows = other.execute(
            "SELECT id, trial_key, status, pdt_ms, seed, response_header_bytes FROM trials"
        ).fetchall()
        assert rows == [(trial_id, "b|h2s", "ok", 123.5, 99, 310)]
        res = other.execute(
            "SELECT trial_id, url, end_ms, bytes FROM resources ORDER BY start_ms"
        ).fetchall()
        assert res == [
            (trial_id, "https://o1.h2lab.test/index.html", 10.5, 500),
            (trial_id, "https://o1.h2lab.test/obj/00000.bin", 20.0, 10_000),
        ]
    finally:
        other.close()


def test_trials_round_trip(store: Store) -> None:
    first = record()
    second = record("b|h1s", status="failed")
    id1 = store.add_trial(first)
    id2 = store.add_trial(second)
    assert id2 == id1 + 1
    assert store.trials() == [
        dataclasses.replace(first, id=id1),
        dataclasses.replace(second, id=id2),
    ]
    assert [t.trial_key for t in store.trials(status="failed")] == ["b|h1s"]
    assert [t.trial_key for t in store.trials(status="ok")] == ["b|h2s"]


def test_resources_of_a_trial(store: Store) -> None:
    trial_id = store.add_trial(record(), RES)
    other_id = store.add_trial(record("b|h1s"))
    rows = store.resources(trial_id)
    assert rows[1] == {
        "trial_id": trial_id,
        "url": "https://o1.h2lab.test/obj/00000.bin",
        "origin": "o1.h2lab.test",
        "start_ms": 0.2,
        "ttfb_ms": 3.0,
        "end_ms": 20.0,
        "bytes": 10_000,
        "protocol": "h2s",
        "connection": "o1.h2lab.test#0",
        "priority": None,
        "status": None,
        "pushed": 0,
        "error": None,
        "priority_field": None,
        "priority_update": None,
        "from_cache": 0,
        "step": None,
    }
    assert rows[0]["ttfb_ms"] is None
    assert store.resources(other_id) == []


def test_done_keys_only_counts_ok_rows(store: Store) -> None:
    store.add_trial(record("b|h1s", status="failed"))
    store.add_trial(record("b|h2s", status="failed"))
    store.add_trial(record("b|h2s", status="ok", attempt=2))
    store.add_trial(record("c|h2s", status="ok"))
    assert store.done_keys("e") == {"b|h2s", "c|h2s"}
    assert store.done_keys("other") == set()


def test_failed_attempts_counts_keys_never_ok(store: Store) -> None:
    store.add_trial(record("b|h1s", status="failed"))
    store.add_trial(record("b|h1s", status="failed", attempt=2))
    store.add_trial(record("b|h2s", status="failed"))
    store.add_trial(record("b|h2s", status="ok", attempt=2))
    store.add_trial(record("c|h2s", status="ok"))
    assert store.failed_attempts("e") == {"b|h1s": 2}
    assert store.failed_attempts("other") == {}


def test_attempts_counts_every_row_of_a_key(store: Store) -> None:
    assert store.attempts("e", "b|h2s") == 0
    store.add_trial(record("b|h2s", status="failed"))
    assert store.attempts("e", "b|h2s") == 1
    store.add_trial(record("b|h2s", status="ok", attempt=2))
    store.add_trial(record("b|h1s"))
    assert store.attempts("e", "b|h2s") == 2
    assert store.attempts("e", "b|h1s") == 1
    assert store.attempts("other", "b|h2s") == 0


def test_status_is_checked(store: Store) -> None:
    with pytest.raises(sqlite3.IntegrityError):
        # past the record's type (a Status is "ok" or "failed"): the schema refuses it too
        store.add_trial(dataclasses.replace(record(), status="maybe"))  # type: ignore[arg-type]
    assert store.trials() == []


def test_failed_insert_leaves_no_partial_rows(store: Store) -> None:
    bad = (dataclasses.replace(RES[0], url=None),)  # type: ignore[arg-type]
    with pytest.raises(sqlite3.IntegrityError):
        store.add_trial(record(), bad)
    assert store.trials() == []
    assert store.attempts("e", "b|h2s") == 0


def test_reopen_keeps_rows(tmp_path: Path) -> None:
    s = Store(tmp_path)
    s.add_trial(record())
    s.close()
    s = Store(tmp_path)
    try:
        assert [t.trial_key for t in s.trials()] == ["b|h2s"]
        assert s.done_keys("e") == {"b|h2s"}
    finally:
        s.close()


def test_export_csv(store: Store, tmp_path: Path) -> None:
    trial_id = store.add_trial(record(), RES)
    store.add_trial(record("b|h1s", status="failed"))
    paths = store.export_csv(tmp_path)
    assert paths == [tmp_path / "trials.csv", tmp_path / "resources.csv"]
    with paths[0].open(newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == list(TRIAL_COLUMNS)
    assert len(rows) == 3
    trial = dict(zip(rows[0], rows[1], strict=True))
    assert trial["id"] == str(trial_id)
    assert trial["trial_key"] == "b|h2s"
    assert trial["pdt_ms"] == "123.5"
    assert trial["request_header_bytes"] == ""
    assert json.loads(trial["config_json"]) == {"a": 1, "protocol": "h2s"}
    failed = dict(zip(rows[0], rows[2], strict=True))
    assert (failed["status"], failed["error"], failed["pdt_ms"]) == ("failed", "boom", "")
    with paths[1].open(newline="") as f:
        res = list(csv.reader(f))
    assert res[0] == list(RESOURCE_COLUMNS)
    assert [r[1] for r in res[1:]] == [
        "https://o1.h2lab.test/index.html",
        "https://o1.h2lab.test/obj/00000.bin",
    ]


def test_artifacts_dir_is_a_safe_name(store: Store) -> None:
    path = store.artifacts_dir("synthetic:n=2|cable|r0|h2s", 3)
    assert path == store.dir / "artifacts" / "synthetic_n_2_cable_r0_h2s.3"


def test_config_json_is_sorted() -> None:
    assert config_json({"b": 1, "a": [1, 2]}) == '{"a": [1, 2], "b": 1}'


def test_a_row_has_every_column_in_order() -> None:
    d = row_of(record())
    assert list(d) == list(TRIAL_COLUMNS)
    assert d["id"] is None
    assert d["trial_key"] == "b|h2s"


def test_a_store_of_schema_1_gains_the_new_columns(tmp_path: Path) -> None:
    old_trials = {k: v for k, v in TRIAL_COLUMNS.items() if not k.endswith(
        ("ttfb_ms", "dcl_ms", "fp_ms", "fcp_ms", "lcp_ms", "speed_index_ms", "visual_complete_ms")
    )}  # fmt: skip
    old_resources = {k: v for k, v in RESOURCE_COLUMNS.items() if k != "priority"}
    tmp_path.mkdir(exist_ok=True)
    db = sqlite3.connect(tmp_path / "results.sqlite")
    for table, cols in (("trials", old_trials), ("resources", old_resources)):
        db.execute(f"CREATE TABLE {table} ({', '.join(f'{k} {v}' for k, v in cols.items())})")
    db.execute("PRAGMA user_version=1")
    db.commit()
    db.close()
    s = Store(tmp_path)
    try:
        trial_id = s.add_trial(record("b|h2s", speed_index_ms=812.5), RES)
        (row,) = s.trials()
        assert row.speed_index_ms == 812.5 and row.lcp_ms is None
        assert [r["priority"] for r in s.resources(trial_id)] == [None, None]
    finally:
        s.close()


def _schema_7_store(path: Path, versions: list[str]) -> None:
    """A store as h2lab wrote it before the ``machine`` column: one row per ``versions``."""
    old = {k: v for k, v in TRIAL_COLUMNS.items() if k != "machine"}
    path.mkdir(exist_ok=True)
    db = sqlite3.connect(path / "results.sqlite")
    db.execute(f"CREATE TABLE trials ({', '.join(f'{k} {v}' for k, v in old.items())})")
    for i, vj in enumerate(versions, start=1):
        row = {**row_of(dataclasses.replace(record(), id=i)), "versions_json": vj}
        del row["machine"]
        marks = ", ".join("?" * len(row))
        db.execute(f"INSERT INTO trials ({', '.join(row)}) VALUES ({marks})", list(row.values()))
    db.execute("PRAGMA user_version=7")
    db.commit()
    db.close()


def test_a_store_of_schema_7_gains_machine_from_the_recorded_host(tmp_path: Path) -> None:
    _schema_7_store(
        tmp_path,
        [
            json.dumps({"h2lab": "0.1.0", "host": "lab-a", "kernel": "6.1.0"}),
            json.dumps({"h2lab": "0.1.0"}),  # older than the host key
            json.dumps({"host": 7}),  # not a name
            "not json",
        ],
    )
    s = Store(tmp_path)
    try:
        assert [t.machine for t in s.trials()] == ["lab-a", None, None, None]
        s.add_trial(record("c|h2s", machine="lab-b/0123456789ab"))
        assert s.trials()[-1].machine == "lab-b/0123456789ab"
    finally:
        s.close()
    db = sqlite3.connect(tmp_path / "results.sqlite")
    try:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 18
        cols = [r[1] for r in db.execute("PRAGMA table_info(trials)")]
        assert sorted(cols) == sorted(TRIAL_COLUMNS) and cols[-1] == "machine"
        # 17: a resource names the journey step that began it
        assert [r[1] for r in db.execute("PRAGMA table_info(resources)")][-1] == "step"
    finally:
        db.close()
    # only the rows older than the column are filled: a later row keeps what it was given
    s = Store(tmp_path)
    try:
        s.add_trial(record("d|h2s", versions={"host": "lab-c"}))
        s.close()
        s = Store(tmp_path)
        assert [t.machine for t in s.trials()] == [
            "lab-a",
            None,
            None,
            None,
            "lab-b/0123456789ab",
            None,
        ]
    finally:
        s.close()


def test_machine_round_trips_and_is_exported(store: Store, tmp_path: Path) -> None:
    first = record(machine="lab-a/0123456789ab")
    trial_id = store.add_trial(first)
    store.add_trial(record("b|h1s"))
    assert [t.machine for t in store.trials()] == ["lab-a/0123456789ab", None]
    assert store.trials()[0] == dataclasses.replace(first, id=trial_id)
    (path, _) = store.export_csv(tmp_path)
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["machine"] for r in rows] == ["lab-a/0123456789ab", ""]


def test_a_journeys_steps_are_stored_exported_and_restored(tmp_path: Path) -> None:
    """``steps`` rows go with their trial, into ``steps.csv`` by the report's export, and back
    by ``h2lab restore``; a store without steps exports no steps file."""
    from h2lab.report.export import export_tables
    from h2lab.results import StepTiming
    from h2lab.store.restore import restore_store

    steps = (
        StepTiming(1, "log in", "submit", 104.1, 2, 0, "{}", "https://o1/account", 20.5,
                   40.0, 40.0, 90.2),
        StepTiming(2, "add", "click", 411.2, 0, 1, '{"o1": 1}', "https://o1/p", None, None,
                   None, None, 208.0),
    )  # fmt: skip
    out = tmp_path / "a"
    store = Store(out)
    trial_id = store.add_trial(record("b|h2s"), (), steps)
    store.add_trial(record("c|h2s"))
    assert store.all_steps()[trial_id] == list(steps)
    store.close()
    export_tables(out / "results.sqlite", out)
    assert (out / "steps.csv").is_file() and (out / "steps.parquet").is_file()
    back = tmp_path / "b"
    back.mkdir()
    for name in ("trials.csv", "steps.csv"):
        (back / name).write_bytes((out / name).read_bytes())
    restore_store(back)
    again = Store(back)
    try:
        assert again.all_steps()[trial_id] == list(steps)
    finally:
        again.close()
    plain = tmp_path / "plain"
    Store(plain).close()
    export_tables(plain / "results.sqlite", plain)
    assert not (plain / "steps.csv").exists()
