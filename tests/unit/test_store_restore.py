"""h2lab.store.restore: a store rebuilt from its CSV export equals the store it came from, so a
run resumes from a results folder that kept only its CSV files."""

from __future__ import annotations

import csv
import dataclasses
import shutil
from pathlib import Path
from typing import Any

import pytest

from h2lab.errors import SpecError
from h2lab.report.export import export_tables
from h2lab.results import TrialRecord
from h2lab.store import Store
from h2lab.store.restore import restore_store
from h2lab.store.sqlite import TRIAL_COLUMNS, row_of
from tests.unit.test_store_sqlite import RES, record


def _filled(out: Path) -> Store:
    """A store with an ok trial with resources, a failed one, and a long seed and config."""
    s = Store(out)
    s.add_trial(record(seed=1470880895729087315, machine="lab-a/0123456789ab"), RES)
    s.add_trial(record("b|h1s", status="failed", error='say "why", twice\nnewline'))
    s.add_trial(record("c|h2s", config={"page": "x" * 200_000}, warmup=True))
    return s


def _contents(s: Store) -> tuple[list[TrialRecord], list[list[dict[str, Any]]]]:
    trials = s.trials(include_warmup=True)
    return trials, [s.resources(t.id) for t in trials if t.id is not None]


@pytest.mark.parametrize("writer", ["report", "export"])
def test_round_trip_from_either_csv_writer(tmp_path: Path, writer: str) -> None:
    original = _filled(tmp_path / "a")
    want = _contents(original)
    original.close()
    csvs = tmp_path / "csv"
    csvs.mkdir()
    if writer == "report":  # pyarrow, as `h2lab report` writes them
        export_tables(tmp_path / "a" / "results.sqlite", csvs)
    else:  # the csv module, as `h2lab export` writes them
        s = Store(tmp_path / "a")
        s.export_csv(csvs)
        s.close()
    out = tmp_path / "b"
    out.mkdir()
    for name in ("trials.csv", "resources.csv"):
        shutil.copy(csvs / name, out / name)

    done = restore_store(out)

    assert (done.trials, done.resources, done.resources_from) == (3, 2, "resources.csv")
    restored = Store(out)
    try:
        assert _contents(restored) == want
        machines = [t.machine for t in restored.trials(include_warmup=True)]
        assert machines == ["lab-a/0123456789ab", None, None]
        assert restored.done_keys("e") == {"b|h2s", "c|h2s"}
        assert restored.failed_attempts("e") == {"b|h1s": 1}
        # the next trial gets the next id, after the restored ones
        assert restored.add_trial(record("d|h2s")) == 4
    finally:
        restored.close()


def _kept_trials_csv(tmp_path: Path) -> Path:
    """A folder that kept only the trials.csv of a filled store's export."""
    s = _filled(tmp_path)
    export_tables(s.path, tmp_path)
    s.close()
    out = tmp_path / "kept"
    out.mkdir()
    shutil.copy(tmp_path / "trials.csv", out)
    return out


def test_trials_without_resources_csv(tmp_path: Path) -> None:
    out = _kept_trials_csv(tmp_path)
    done = restore_store(out)
    assert (done.trials, done.resources, done.resources_from) == (3, 0, None)
    restored = Store(out)
    try:
        assert [t.trial_key for t in restored.trials(include_warmup=True)] == [
            "b|h2s",
            "b|h1s",
            "c|h2s",
        ]
        assert all(restored.resources(i) == [] for i in (1, 2, 3))
    finally:
        restored.close()


def test_csv_of_an_older_schema_takes_the_defaults(tmp_path: Path) -> None:
    """A trials.csv written before the warmup, CPU and machine columns existed (its
    ``versions_json`` naming a host or not, ``machine`` is NULL)."""
    newer = ("warmup", "cpu_busy_pct", "cpu_saturated", "emulator_drops", "machine")
    old = [c for c in TRIAL_COLUMNS if c not in newer]
    row = row_of(dataclasses.replace(record(versions={"host": "lab-a"}), id=7))
    with (tmp_path / "trials.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(old)
        w.writerow(["" if row[c] is None else row[c] for c in old])
    restore_store(tmp_path)
    s = Store(tmp_path)
    try:
        (t,) = s.trials()
        got = (t.id, t.warmup, t.cpu_busy_pct, t.emulator_drops, t.machine, t.pdt_ms)
        assert got == (7, 0, None, None, None, 123.5)
    finally:
        s.close()


def _write_trials(path: Path, edit: dict[str, str] | None = None, drop: str = "") -> None:
    row = {k: "" if v is None else str(v) for k, v in row_of(record()).items()}
    row["id"] = "1"
    row.update(edit or {})
    names = [c for c in row if c != drop]
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(names)
        w.writerow([row[c] for c in names])


@pytest.mark.parametrize(
    ("case", "field", "reason"),
    [
        ({"edit": {"pdt_ms": "12x"}}, "line 2, pdt_ms", "'12x' is not REAL"),
        ({"edit": {"seed": "1.5"}}, "line 2, seed", "'1.5' is not INTEGER"),
        ({"edit": {"status": "maybe"}}, "rows", "does not fit the results store"),
        ({"drop": "trial_key"}, "trial_key", "required column missing"),
        ({"edit": {"bogus": "1"}}, "bogus", "not a column of the results store"),
    ],
)
def test_bad_csv_names_file_and_field_and_leaves_no_store(
    tmp_path: Path, case: dict[str, object], field: str, reason: str
) -> None:
    _write_trials(tmp_path / "trials.csv", **case)  # type: ignore[arg-type]
    with pytest.raises(SpecError) as exc:
        restore_store(tmp_path)
    assert exc.value.source == str(tmp_path / "trials.csv")
    assert exc.value.field == field
    assert reason in exc.value.reason
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trials.csv"]


def test_refuses_a_folder_that_has_a_store(tmp_path: Path) -> None:
    s = _filled(tmp_path)
    s.close()
    _write_trials(tmp_path / "trials.csv")
    with pytest.raises(SpecError, match="a results store is already here"):
        restore_store(tmp_path)
    s = Store(tmp_path)
    try:
        assert len(s.trials(include_warmup=True)) == 3
    finally:
        s.close()


def test_needs_a_trials_csv(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"no trials\.csv \(or trials\.parquet\) to restore from"):
        restore_store(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_an_empty_store_file_is_no_store(tmp_path: Path) -> None:
    """`sqlite3 results.sqlite "select ..."` on a folder that kept only its CSV leaves a 0-byte
    file; restoring replaces it instead of refusing (and scripts/reproduce.sh restores then)."""
    _write_trials(tmp_path / "trials.csv")
    (tmp_path / "results.sqlite").touch()
    assert restore_store(tmp_path).trials == 1
    s = Store(tmp_path)
    try:
        assert [t.pdt_ms for t in s.trials()] == [123.5]
    finally:
        s.close()


def _checksum(rows: list[list[dict[str, Any]]]) -> str:
    import hashlib
    import json

    flat = sorted(json.dumps(r, sort_keys=True, default=str) for trial in rows for r in trial)
    return hashlib.sha256("\n".join(flat).encode()).hexdigest()[:16]


def test_a_store_past_the_csv_bound_restores_its_resources_from_parquet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #56: the export of a store past CSV_ROWS_MAX resource rows has resources.parquet
    only; restore reads it, sealed rows and unsealed alike, and every row comes back."""
    from h2lab.report import export

    monkeypatch.setattr(export, "CSV_ROWS_MAX", 5)
    s = Store(tmp_path / "a")
    many = tuple(dataclasses.replace(RES[0], url=f"https://o1.h2lab.test/{i}") for i in range(4))
    s.add_trial(record("a|h2s"), many)
    s.add_trial(record("b|h2s"), many)
    assert s.seal_if_due(rows=8) is not None  # the first 8 rows in a segment
    s.add_trial(record("c|h2s"), many[:2])
    want = _contents(s)
    s.close()
    export_tables(tmp_path / "a" / "results.sqlite", tmp_path / "a")
    assert not (tmp_path / "a" / "resources.csv").exists()
    out = tmp_path / "b"
    out.mkdir()
    shutil.copy(tmp_path / "a" / "trials.csv", out)
    shutil.copy(tmp_path / "a" / "resources.parquet", out)
    done = restore_store(out)
    assert (done.trials, done.resources, done.resources_from) == (3, 10, "resources.parquet")
    restored = Store(out)
    try:
        got = _contents(restored)
    finally:
        restored.close()
    assert got == want and _checksum(got[1]) == _checksum(want[1])
    print(f"restored {done.resources} resource rows, checksum {_checksum(got[1])}")


def test_trials_restore_from_parquet_and_two_exports_that_disagree_are_refused(
    tmp_path: Path,
) -> None:
    s = _filled(tmp_path / "a")
    want = _contents(s)
    s.close()
    export_tables(tmp_path / "a" / "results.sqlite", tmp_path / "a")
    only_parquet = tmp_path / "b"
    only_parquet.mkdir()
    for name in ("trials.parquet", "resources.parquet"):
        shutil.copy(tmp_path / "a" / name, only_parquet)
    done = restore_store(only_parquet)
    assert (done.trials, done.resources) == (3, 2)
    restored = Store(only_parquet)
    try:
        assert _contents(restored) == want
    finally:
        restored.close()
    both = tmp_path / "c"
    both.mkdir()
    for name in ("trials.csv", "resources.csv", "resources.parquet"):
        shutil.copy(tmp_path / "a" / name, both)
    lines = (both / "resources.csv").read_text().splitlines(keepends=True)
    (both / "resources.csv").write_text("".join(lines[:-1]))  # one row cut off
    with pytest.raises(SpecError) as err:
        restore_store(both)
    assert "1 rows, but resources.parquet has 2" in err.value.line()
    assert not (both / "results.sqlite").exists()


def test_a_file_that_is_not_parquet_is_refused_in_one_line(tmp_path: Path) -> None:
    out = _kept_trials_csv(tmp_path)
    (out / "resources.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(SpecError) as err:
        restore_store(out)
    assert "resources.parquet: file: not a Parquet file" in err.value.line()
    assert not (out / "results.sqlite").exists()
