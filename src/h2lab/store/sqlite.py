"""SQLite schema and access. One row per trial attempt, committed when the trial ends.

The row is the store's format, the :class:`~h2lab.results.TrialRecord` everyone else's: flags
as 0/1 integers, the configuration and versions as JSON text. :func:`row_of` and
:func:`record_of` convert at this boundary, so the schema and the stored values stay as older
stores and exports hold them."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from h2lab.artifacts import ARTIFACTS_DIR, RESULTS_DB
from h2lab.results import (
    STATUSES,
    JsonObject,
    Metrics,
    ResourceTiming,
    Status,
    StepTiming,
    TrialRecord,
)
from h2lab.spec.factors import FACTORS, Cell
from h2lab.spec.protocols import PROTOCOLS
from h2lab.spec.vocab import one_of

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]

    from h2lab.store.segments import Segment

# 2: page-level browser metrics, resource priority; 3: resource status; 4: resource pushed;
# 5: warmup, cpu_busy_pct, cpu_saturated; 6: emulator_drops; 7: connect_ms, tls; 8: machine;
# 9: failed_requests, resource error; 10: resource priority_field, priority_update, from_cache,
# trial view, early_data_packets; 11: resource_segments (resource rows sealed into Parquet);
# 12: dns_lookups, dns_nxdomain; 13: udp_dropped_packets; 14: cpu_calibration_ms,
# cpu_throttled_ms; 15: quic_sent_packets, quic_lost_packets, quic_initial_window_bytes,
# server_tcp_cc, server_quic_cc; 16: journey_ms, the steps table (a journey's steps); 17:
# resource step; 18: cpu_calibration_cores
SCHEMA_VERSION = 18

_SQL_TYPES = {"str": "TEXT", "float": "REAL", "int": "INTEGER", "bool": "INTEGER"}


def _sql(annotation: object) -> str:
    return _SQL_TYPES[str(annotation).replace(" | None", "")]


TRIAL_COLUMNS: dict[str, str] = {
    "id": "INTEGER PRIMARY KEY",
    "trial_key": "TEXT NOT NULL",
    "experiment": "TEXT NOT NULL",
    "block": "TEXT NOT NULL",
    **{
        f.column: f"{f.sql} NOT NULL"
        + ("" if f.default is None else f" DEFAULT {f.stored(f.default)!r}")
        for f in FACTORS
    },
    "page_digest": "TEXT",
    "protocol": "TEXT NOT NULL",
    "repetition": "INTEGER NOT NULL",
    "seed": "INTEGER NOT NULL",
    "attempt": "INTEGER NOT NULL",
    "status": "TEXT NOT NULL CHECK (status IN ('ok', 'failed'))",
    "error": "TEXT",
    "started_at": "TEXT NOT NULL",
    "duration_s": "REAL",
    **{f.name: _sql(f.type) for f in dataclasses.fields(Metrics)},
    "config_json": "TEXT NOT NULL",
    "versions_json": "TEXT NOT NULL",
    "warmup": "INTEGER NOT NULL DEFAULT 0",
    "cpu_busy_pct": "REAL",
    "cpu_saturated": "INTEGER",
    "emulator_drops": "INTEGER",
    "machine": "TEXT",
    "server_tcp_cc": "TEXT",
    "server_quic_cc": "TEXT",
}
"""Every column of ``trials``: the factors' (:data:`h2lab.spec.factors.FACTORS`; a factor
added later has its default level as the column default, which older rows take) and the
metrics' (:class:`h2lab.results.Metrics`) derive from their definitions."""
FACTOR_COLUMNS = tuple(f.column for f in FACTORS)


def _resource_columns() -> dict[str, str]:
    """One column per :class:`ResourceTiming` field (a new field is a new column)."""
    columns = {"trial_id": "INTEGER NOT NULL REFERENCES trials(id)"}
    for f in dataclasses.fields(ResourceTiming):
        columns[f.name] = _sql(f.type) + (" NOT NULL" if f.name in ("url", "origin") else "")
    return columns


RESOURCE_COLUMNS: dict[str, str] = _resource_columns()


def _step_columns() -> dict[str, str]:
    """One column per :class:`StepTiming` field (a journey's steps after its first)."""
    columns = {"trial_id": "INTEGER NOT NULL REFERENCES trials(id)"}
    for f in dataclasses.fields(StepTiming):
        columns[f.name] = _sql(f.type) + ("" if "None" in str(f.type) else " NOT NULL")
    return columns


STEP_COLUMNS: dict[str, str] = _step_columns()


_RECORD_ONLY = frozenset({"cell", "config", "versions"})
"""The fields of :class:`TrialRecord` that are not a column as they are: the cell is the
factor columns, the configuration and versions are the JSON columns."""


def row_of(record: TrialRecord) -> dict[str, Any]:
    """The store row of ``record`` (column -> value, in :data:`TRIAL_COLUMNS` order)."""
    d = {
        f.name: getattr(record, f.name)
        for f in dataclasses.fields(record)
        if f.name not in _RECORD_ONLY
    }
    d.update(record.cell.columns())
    d["config_json"] = config_json(record.config)
    d["versions_json"] = config_json(record.versions)
    d["warmup"] = int(record.warmup)
    d["cpu_saturated"] = None if record.cpu_saturated is None else int(record.cpu_saturated)
    return {k: d[k] for k in TRIAL_COLUMNS}


def _json_object(text: object) -> JsonObject:
    """A JSON column as its object; text that is not a JSON object (a row an older or a foreign
    h2lab wrote, ``versions_json`` of ``"not json"``) is an empty one: a reader that needs the
    text as stored reads the column (:mod:`h2lab.store.frame`)."""
    try:
        value = json.loads(str(text))
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def record_of(row: Mapping[str, Any]) -> TrialRecord:
    """The record of a store row (column -> value); a ``status`` or ``protocol`` outside its
    vocabulary raises ValueError."""
    status = one_of(STATUSES, row["status"], "status")
    protocol = one_of(PROTOCOLS, row["protocol"], "protocol")
    saturated = row["cpu_saturated"]
    return TrialRecord(
        cell=Cell.of(**{c: row[c] for c in FACTOR_COLUMNS}),
        status=status,
        protocol=protocol,
        config=_json_object(row["config_json"]),
        versions=_json_object(row["versions_json"]),
        warmup=bool(row["warmup"]),
        cpu_saturated=None if saturated is None else bool(saturated),
        **{k: v for k, v in row.items() if k not in FACTOR_COLUMNS and k not in _CONVERTED},
    )


_CONVERTED = frozenset(
    {"status", "protocol", "config_json", "versions_json", "warmup", "cpu_saturated"}
)
"""The columns :func:`record_of` converts; the others are their field as they are."""


def _ddl(table: str, columns: dict[str, str]) -> str:
    return (
        f"CREATE TABLE IF NOT EXISTS {table} ("
        + ", ".join(f"{k} {v}" for k, v in columns.items())
        + ")"
    )


def artifacts_dir(out_dir: Path, trial_key: str, attempt: int) -> Path:
    """The folder of one attempt's artifacts in the results folder ``out_dir`` (a worker that
    does not open the store names it as :meth:`Store.artifacts_dir` does)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in trial_key)
    return out_dir / ARTIFACTS_DIR / f"{safe}.{attempt}"


_MACHINE_FROM_HOST = (
    "UPDATE trials SET machine = json_extract(versions_json, '$.host') WHERE CASE "
    "WHEN json_valid(versions_json) THEN json_type(versions_json, '$.host') = 'text' END"
)
"""Schema 8's ``machine`` for the rows of an older store: the host name their
``versions_json`` recorded (a row without one, or with unreadable JSON, stays NULL)."""


class Store:
    """The results store of one folder: trials and their resources in SQLite, the resource rows
    of large stores sealed into Parquet segments beside it (:mod:`h2lab.store.segments`)."""

    def __init__(self, out_dir: Path) -> None:
        from h2lab.store.segments import REGISTRY_DDL

        self.dir = out_dir
        out_dir.mkdir(parents=True, exist_ok=True)
        self.path = out_dir / RESULTS_DB
        # timeout: the shards of `h2lab run --jobs` write to one store
        self._db = sqlite3.connect(self.path, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        with self._db:
            # one transaction: Python's sqlite3 begins none before DDL, and a reader of a run
            # just started saw `trials` made and `resources` not yet (a suite run on a busy host)
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute(_ddl("trials", TRIAL_COLUMNS))
            self._db.execute(_ddl("resources", RESOURCE_COLUMNS))
            self._db.execute(_ddl("steps", STEP_COLUMNS))
            self._add_missing_columns()
            self._db.execute("CREATE INDEX IF NOT EXISTS trials_key ON trials(trial_key)")
            self._db.execute("CREATE INDEX IF NOT EXISTS resources_trial ON resources(trial_id)")
            self._db.execute("CREATE INDEX IF NOT EXISTS steps_trial ON steps(trial_id)")
            # which shard of a `h2lab run --jobs` run took which block: written by h2lab
            # before the executor seam (#29), kept so older stores open unchanged
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS claims (run TEXT NOT NULL, block TEXT NOT NULL, "
                "shard TEXT NOT NULL, PRIMARY KEY (run, block))"
            )
            self._db.execute(REGISTRY_DDL)
            self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        self._unsealed: int | None = None
        """resource rows in SQLite, counted when first needed (:meth:`seal_if_due`)"""

    def _add_missing_columns(self) -> None:
        """Bring a store written by an older h2lab up to this schema (new columns are NULL, or
        their default; ``machine`` is the ``host`` its ``versions_json`` names, if any)."""
        for table, columns in (("trials", TRIAL_COLUMNS), ("resources", RESOURCE_COLUMNS)):
            have = {r[1] for r in self._db.execute(f"PRAGMA table_info({table})")}
            for name, kind in columns.items():
                if name not in have:
                    self._db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
                    if (table, name) == ("trials", "machine"):
                        self._db.execute(_MACHINE_FROM_HOST)

    def artifacts_dir(self, trial_key: str, attempt: int) -> Path:
        return artifacts_dir(self.dir, trial_key, attempt)

    def close(self) -> None:
        self._db.close()

    def add_trial(
        self,
        record: TrialRecord,
        resources: tuple[ResourceTiming, ...] = (),
        steps: tuple[StepTiming, ...] = (),
    ) -> int:
        """Insert a trial, its resources and a journey's steps in one transaction (committed
        on return)."""
        row = row_of(record)
        del row["id"]
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        with self._db:
            cur = self._db.execute(
                f"INSERT INTO trials ({cols}) VALUES ({marks})", list(row.values())
            )
            trial_id = cur.lastrowid
            assert trial_id is not None
            self._db.executemany(
                f"INSERT INTO resources ({', '.join(RESOURCE_COLUMNS)}) "
                f"VALUES ({', '.join('?' for _ in RESOURCE_COLUMNS)})",
                [(trial_id, *dataclasses.astuple(r)) for r in resources],
            )
            self._db.executemany(
                f"INSERT INTO steps ({', '.join(STEP_COLUMNS)}) "
                f"VALUES ({', '.join('?' for _ in STEP_COLUMNS)})",
                [(trial_id, *dataclasses.astuple(st)) for st in steps],
            )
        if self._unsealed is not None:
            self._unsealed += len(resources)
        return trial_id

    def seal_if_due(self, rows: int | None = None) -> Segment | None:
        """Seal the resource rows in SQLite into a segment once there are ``rows`` of them
        (default :data:`~h2lab.store.segments.SEAL_ROWS`); the segment, or None."""
        from h2lab.store import segments

        limit = segments.SEAL_ROWS if rows is None else rows
        if self._unsealed is None:
            self._unsealed = int(self._db.execute("SELECT count(*) FROM resources").fetchone()[0])
        if self._unsealed < limit:
            return None
        segment = segments.seal(self._db, self.path, RESOURCE_COLUMNS)
        self._unsealed = 0
        return segment

    def all_steps(self) -> dict[int, list[StepTiming]]:
        """Every journey trial's steps after its first, by trial id, in order."""
        names = [n for n in STEP_COLUMNS if n != "trial_id"]
        rows = self._db.execute(
            f"SELECT trial_id, {', '.join(names)} FROM steps ORDER BY trial_id, step"
        )
        out: dict[int, list[StepTiming]] = {}
        for trial_id, *values in rows:
            out.setdefault(int(trial_id), []).append(StepTiming(*values))
        return out

    def segments(self) -> list[Segment]:
        """The sealed segments, in trial order."""
        from h2lab.store.segments import registered

        return registered(self._db)

    def done_keys(self, experiment: str) -> set[str]:
        """Trial keys of ``experiment`` that already have a successful row (skipped on resume)."""
        rows = self._db.execute(
            "SELECT DISTINCT trial_key FROM trials WHERE status = 'ok' AND experiment = ?",
            (experiment,),
        )
        return {r[0] for r in rows}

    def rekey(self, experiment: str, moves: Mapping[str, tuple[str, str, str]]) -> int:
        """Give each stored attempt of ``experiment`` keyed by a key of ``moves`` its new key
        and ``server`` and ``page`` levels (``old key -> (new key, server, page)``), its
        artifacts' folder renamed to match; how many attempts moved. Folders first, then the
        rows in one transaction: stopped between the two, the next call finds the folders
        moved and moves the rows."""
        rows = self._db.execute(
            "SELECT id, trial_key, attempt FROM trials WHERE experiment = ?", (experiment,)
        ).fetchall()
        moved = [(i, key, attempt) for i, key, attempt in rows if key in moves]
        for _, key, attempt in moved:
            old, new = self.artifacts_dir(key, attempt), self.artifacts_dir(moves[key][0], attempt)
            if old.is_dir() and not new.exists():
                old.rename(new)
        with self._db:
            self._db.executemany(
                "UPDATE trials SET trial_key = ?, server = ?, page = ?, config_json = CASE WHEN "
                "json_valid(config_json) THEN json_set(config_json, '$.server', ?, '$.page', ?) "
                "ELSE config_json END WHERE id = ?",
                [(*moves[k], *moves[k][1:], i) for i, k, _ in moved],
            )
        return len(moved)

    def failed_attempts(self, experiment: str) -> dict[str, int]:
        """Failed attempts per trial key of ``experiment`` that has no successful row."""
        rows = self._db.execute(
            "SELECT trial_key, COUNT(*) FROM trials WHERE experiment = ? GROUP BY trial_key "
            "HAVING SUM(status = 'ok') = 0",
            (experiment,),
        )
        return {r[0]: int(r[1]) for r in rows}

    def attempts(self, experiment: str, trial_key: str) -> int:
        row = self._db.execute(
            "SELECT COUNT(*) FROM trials WHERE experiment = ? AND trial_key = ?",
            (experiment, trial_key),
        )
        return int(row.fetchone()[0])

    def trials(
        self,
        *,
        status: Status | None = None,
        experiment: str | None = None,
        include_warmup: bool = False,
    ) -> list[TrialRecord]:
        q = f"SELECT {', '.join(TRIAL_COLUMNS)} FROM trials WHERE 1=1"
        if not include_warmup:
            q += " AND warmup = 0"
        args: list[str] = []
        if status:
            q += " AND status = ?"
            args.append(status)
        if experiment:
            q += " AND experiment = ?"
            args.append(experiment)
        q += " ORDER BY id"
        return [
            record_of(dict(zip(TRIAL_COLUMNS, r, strict=True))) for r in self._db.execute(q, args)
        ]

    def trials_by_id(self, ids: Sequence[int]) -> list[TrialRecord]:
        """The stored trials of ``ids`` (those that exist), in id order: the few a report
        shows in full, when it holds the others as columns."""
        rows: list[TrialRecord] = []
        for start in range(0, len(ids), 500):  # SQLite's default limit of 999 parameters
            chunk = list(ids[start : start + 500])
            q = (
                f"SELECT {', '.join(TRIAL_COLUMNS)} FROM trials "
                f"WHERE id IN ({', '.join('?' for _ in chunk)})"
            )
            rows += [
                record_of(dict(zip(TRIAL_COLUMNS, r, strict=True)))
                for r in self._db.execute(q, chunk)
            ]
        return sorted(rows, key=lambda t: t.id or 0)

    def resources(self, trial_id: int) -> list[dict[str, Any]]:
        """The resource rows of one trial, in stored order (column -> value)."""
        return self.resources_of([trial_id]).get(trial_id, [])

    def resources_of(self, trial_ids: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
        """The resource rows of ``trial_ids`` by trial id, each in stored order, from SQLite
        or the sealed segments (a trial without resources is absent)."""
        from h2lab.store.segments import SEGMENTS_DIR, rows_of

        found: dict[int, list[dict[str, Any]]] = {}
        ids = list(dict.fromkeys(trial_ids))
        for start in range(0, len(ids), 500):  # SQLite's default limit of 999 parameters
            chunk = ids[start : start + 500]
            cur = self._db.execute(
                f"SELECT {', '.join(RESOURCE_COLUMNS)} FROM resources "
                f"WHERE trial_id IN ({', '.join('?' for _ in chunk)}) ORDER BY rowid",
                chunk,
            )
            for r in cur:
                row = dict(zip(RESOURCE_COLUMNS, r, strict=True))
                found.setdefault(int(row["trial_id"]), []).append(row)
        sealed = self.segments()
        rest = [i for i in ids if i not in found]
        if sealed and rest:
            found.update(rows_of(self.dir / SEGMENTS_DIR, sealed, rest, RESOURCE_COLUMNS))
        return found

    def priority_signals(self) -> list[tuple[str, str, str, str, int, int]]:
        """What the clients said of their requests' priorities, over the resources of the ok
        trials (warm-ups not counted): (client, protocol, the client's priority, the RFC 9218
        field sent, requests, requests changed after they were sent), one row per distinct
        combination, counted in the database (a store of millions of resources stays there)."""
        cur = self._db.execute(
            "SELECT t.client, r.protocol, COALESCE(r.priority, ''), "
            "COALESCE(r.priority_field, ''), COUNT(*), COUNT(r.priority_update) "
            "FROM resources r JOIN trials t ON t.id = r.trial_id "
            "WHERE t.status = 'ok' AND t.warmup = 0 "
            "AND (r.priority IS NOT NULL OR r.priority_field IS NOT NULL) "
            "GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 5 DESC, 3, 4"
        )
        counts = {(str(a), str(b), str(c), str(d)): (int(e), int(f)) for a, b, c, d, e, f in cur}
        for key, (n, changed) in self._sealed_priority_counts().items():
            had, had_changed = counts.get(key, (0, 0))
            counts[key] = (had + n, had_changed + changed)
        rows = [(*key, n, changed) for key, (n, changed) in counts.items()]
        return sorted(rows, key=lambda r: (r[0], r[1], -r[4], r[2], r[3]))

    def _sealed_priority_counts(self) -> dict[tuple[str, str, str, str], tuple[int, int]]:
        """:meth:`priority_signals`'s counts over the sealed segments."""
        from h2lab.store.segments import SEGMENTS_DIR, priority_counts

        sealed = self.segments()
        if not sealed:
            return {}
        clients = dict(
            self._db.execute(
                "SELECT id, client FROM trials WHERE status = 'ok' AND warmup = 0 "
                "AND id BETWEEN ? AND ?",
                (sealed[0].first_trial, sealed[-1].last_trial),
            )
        )
        return priority_counts(self.dir / SEGMENTS_DIR, sealed, clients, RESOURCE_COLUMNS)

    def export_csv(self, out_dir: Path) -> list[Path]:
        import csv

        written = []
        for table, columns in (("trials", TRIAL_COLUMNS), ("resources", RESOURCE_COLUMNS)):
            path = out_dir / f"{table}.csv"
            with path.open("w", newline="") as f:
                w = csv.writer(f)
                w.writerow(columns)
                if table == "resources":
                    for batch in self._sealed_batches():
                        w.writerows(tuple(r.values()) for r in batch.to_pylist())
                w.writerows(self._db.execute(f"SELECT {', '.join(columns)} FROM {table}"))
            written.append(path)
        return written

    def _sealed_batches(self) -> Iterator[pa.RecordBatch]:
        from h2lab.store.segments import SEGMENTS_DIR, batches

        return batches(self.dir / SEGMENTS_DIR, self.segments(), RESOURCE_COLUMNS)


def config_json(config: Mapping[str, Any]) -> str:
    """A JSON column's text: keys sorted, as every stored row has it."""
    return json.dumps(config, sort_keys=True)
