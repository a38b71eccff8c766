"""Issue #56, item 3: readers of a live run. While ``h2lab run`` writes 200 trials, this test
reads the store in a loop as ``h2lab compare`` reads it (:func:`h2lab.store.reader.read_trials`)
and as the report reads it (Arrow batches of :func:`h2lab.store.tables.read_batches`, trials and
their resources) until the run ends: no read fails, and none is torn. A torn read would show
as an error ("database disk image is malformed"), a NOT NULL column without a value, ids out of
order, fewer rows than an earlier read, a trial key the experiment does not have, or a row or a
trial's count of resources other than an earlier read saw (the run only appends).

The cheapest real trial: h2load fetching the smallest synthetic page from nginx over h1c and h2c, a
2 ms link, about 0.1 s a trial."""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

from h2lab.artifacts import RESULTS_DB
from h2lab.errors import SpecError
from h2lab.runner.levels import load_experiment
from h2lab.runner.matrix import expand
from h2lab.store.reader import read_trials
from h2lab.store.sqlite import RESOURCE_COLUMNS, TRIAL_COLUMNS, row_of
from h2lab.store.tables import opening, read_batches, table_columns
from tests.integration.conftest import H2LAB

EXPERIMENT = """name = "live-reader"
seed = 56
repetitions = 100
timeout_s = 30
[factors]
protocol = ["h1c", "h2c"]
network = ["rtt=2ms"]
page = ["synthetic:n=1,size=1KB,origins=1"]
client = ["h2load"]
"""
TRIALS = 200
RUN_TIMEOUT_S = 300
"""The run took 21 s here (two cores, nothing beside it); the bound only ends a hung one."""
PAUSE_S = 0.02
"""Between two rounds of reads (a round took about 20 ms, 480 rounds in a run): the reader
takes half a core at most."""
NOT_NULL = [c for c, kind in TRIAL_COLUMNS.items() if "NOT NULL" in kind or c == "id"]
NOT_BEFORE_THE_STORE = ("no such folder", "no results store in this folder", "no trials table")
"""What a read may say before the run has made the store and its tables, and only then."""


class Reads:
    """The reads of one store, each checked against the experiment and the reads before it."""

    def __init__(self, keys: set[str]) -> None:
        self.keys = keys
        self.rows: dict[str, dict[int, Any]] = {"compare": {}, "arrow": {}}
        self.counts = {"compare": 0, "arrow": 0}
        self.resources: dict[int, int] = {}
        self.done = Counter[str]()

    def check(self, path: str, rows: list[dict[str, Any]]) -> None:
        ids = [r["id"] for r in rows]
        assert ids == sorted(set(ids)), f"{path}: ids out of order"
        assert len(rows) >= self.counts[path], f"{path}: {len(rows)} rows after {self.counts}"
        self.counts[path] = len(rows)
        for r in rows:
            assert not [c for c in NOT_NULL if r[c] is None], f"{path}: {r}"
            assert r["trial_key"] in self.keys, f"{path}: trial key {r['trial_key']!r}"
            first = self.rows[path].setdefault(r["id"], r)
            assert r == first, f"{path}: row {r['id']} changed: {first} then {r}"

    def once(self, out: Path) -> None:
        """One round: the compare reader, then trials and resources as Arrow batches."""
        db = out / RESULTS_DB
        live = not opening(db).immutable if db.exists() else False
        try:
            trials = read_trials(out)
        except SpecError as exc:
            assert not self.done and any(m in str(exc) for m in NOT_BEFORE_THE_STORE), exc
            return
        self.check("compare", [row_of(t) for t in trials])
        have = table_columns(db, "trials")
        batches = read_batches(db, "trials", TRIAL_COLUMNS, where="warmup = 0", have=have)
        self.check("arrow", [r for b in batches for r in b.to_pylist()])
        columns = {"trial_id": RESOURCE_COLUMNS["trial_id"], "url": RESOURCE_COLUMNS["url"]}
        per_trial = Counter[int]()
        for b in read_batches(db, "resources", columns):
            assert b.column("url").null_count == 0
            per_trial.update(b.column("trial_id").to_pylist())
        for trial, n in per_trial.items():  # committed with its trial: whole, or not yet at all
            assert self.resources.setdefault(trial, n) == n, f"trial {trial}: resources {n}"
        self.done["live" if live else "finished"] += 1


def test_reads_of_a_store_a_run_is_writing_are_whole(tmp_path: Path) -> None:
    exp = tmp_path / "exp.toml"
    exp.write_text(EXPERIMENT)
    keys = {t.key for t in expand(load_experiment(exp))}
    assert len(keys) == TRIALS
    out = tmp_path / "out"
    reads = Reads(keys)
    started = time.monotonic()
    with (tmp_path / "run.stderr").open("wb") as stderr:
        proc = subprocess.Popen(
            [H2LAB, "run", str(exp), "--out", str(out)], stdout=subprocess.DEVNULL, stderr=stderr
        )
    try:
        while proc.poll() is None:
            assert time.monotonic() - started < RUN_TIMEOUT_S, "the run did not end"
            reads.once(out)
            time.sleep(PAUSE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    run_s = time.monotonic() - started
    assert proc.returncode == 0, (tmp_path / "run.stderr").read_text()[-3000:]
    reads.once(out)  # the folder finished
    print(
        f"{TRIALS} trials in {run_s:.1f} s (the report included); rounds of reads: "
        f"{reads.done['live']} WAL-aware (the run live), {reads.done['finished']} immutable"
    )
    assert {r["trial_key"] for r in reads.rows["compare"].values()} == keys
    assert reads.counts == {"compare": TRIALS, "arrow": TRIALS}
    assert reads.done["live"] >= 50  # the reads this test is for: while the run wrote
