"""h2lab.store.frame and store.columns.read_trial_frame: the columns read from a store are
the columns of its records, and a frame picks the same trials as the record rules
(``latest_ok``, one attempt per trial key)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from h2lab.analysis.verdict import latest_ok
from h2lab.store import Store
from h2lab.store.columns import read_trial_frame
from h2lab.store.frame import TrialFrame
from h2lab.store.sqlite import row_of
from tests.unit.test_report_model import trial


def stored(out: Path) -> Store:
    store = Store(out)
    store.add_trial(trial("h1s", 0, None, status="failed"))
    store.add_trial(trial("h1s", 0, 100.0, attempt=2))
    store.add_trial(trial("h2s", 0, 80.0))
    store.add_trial(trial("h2s", 1, 70.0, client="chromium", plt=90.0, req_headers=40))
    store.add_trial(trial("h1s", 1, None, status="failed"))
    store.add_trial(dataclasses.replace(trial("h2s", 2, 60.0), warmup=True, machine="m1"))
    return store


def test_the_frame_read_from_a_store_is_the_frame_of_its_records(tmp_path: Path) -> None:
    store = stored(tmp_path)
    records = store.trials()
    store.close()
    read, built = read_trial_frame(tmp_path / "results.sqlite"), TrialFrame.of(records)
    assert len(read) == len(records) == 5  # the warm-up is left out
    assert [read.cells[c] for c in read.cell] == [t.cell for t in records]
    for column, texts in read.texts.items():
        assert (
            texts.texts() == built.texts[column].texts() == [row_of(t)[column] for t in records]
        ), column
    for column, values in read.numbers.items():
        assert np.array_equal(values, built.numbers[column], equal_nan=True), column
    assert np.isnan(read.number("plt_ms")[0]) and read.number("plt_ms")[3] == 90.0


def test_seeds_of_64_bits_are_read_exactly(tmp_path: Path) -> None:
    # real seeds (runner.matrix.block_seed) are 64-bit: a float64 would merge two of them, and
    # pyarrow's safe cast refused them ("Integer value ... not in range")
    seeds = (5_136_120_783_927_023_873, 5_136_120_783_927_023_874)
    store = Store(tmp_path)
    for i, seed in enumerate(seeds):
        store.add_trial(dataclasses.replace(trial("h2s", i, 80.0), seed=seed))
    records = store.trials()
    store.close()
    read = read_trial_frame(tmp_path / "results.sqlite")
    assert (
        read.number("seed").tolist()
        == list(seeds)
        == TrialFrame.of(records).number("seed").tolist()
    )
    assert len(np.unique(read.number("seed"))) == 2


def test_latest_ok_and_chosen_follow_the_record_rules(tmp_path: Path) -> None:
    store = stored(tmp_path)
    records = store.trials()
    store.close()
    frame = read_trial_frame(tmp_path / "results.sqlite")
    ids = frame.latest_ok().number("id").tolist()
    assert ids == [t.id for t in latest_ok(records)] == [2, 3, 4]
    chosen = frame.chosen(ok_only=False)  # a failed-only trial counts by its latest attempt
    assert frame.number("id")[chosen].tolist() == [2, 3, 4, 5]
    assert not frame.take(np.zeros(5, bool)).latest_ok().number("id").size
