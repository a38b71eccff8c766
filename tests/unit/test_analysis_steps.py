"""A journey's steps as metrics (:mod:`h2lab.analysis.steps`): the names, the columns they add to
a frame, and run B against run A step by step, read back from real stores."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from h2lab.analysis import steps
from h2lab.results import StepTiming
from h2lab.store import Store
from tests.unit.test_analysis_ab import FCFS, on

JOURNEY_PAGE = "journey:/lab/shop.toml"


def step(i: int, name: str, ms: float, **kw: object) -> StepTiming:
    return StepTiming(i, name, "click", ms, 3, 0, **kw)  # type: ignore[arg-type]


def journey_folder(
    path: Path, server: str, cart_ms: Sequence[float], *, protocols: Sequence[str] = ("h2s",)
) -> Path:
    """A results folder of one Chromium journey cell: plt 1000 ms, step ``search`` 300 ms and
    ``cart`` ``cart_ms[r]`` (its interaction 50 ms longer) in repetition r."""
    store = Store(path)
    for protocol in protocols:
        for r, ms in enumerate(cart_ms):
            t = on(server, protocol, r, 100.0, client="chromium", plt=1000.0, page=JOURNEY_PAGE)
            t = dataclasses.replace(t, journey_ms=1300.0 + ms)
            rows = (step(1, "search", 300.0), step(2, "cart", ms, interaction_ms=ms + 50))
            store.add_trial(t, (), rows)
    store.close()
    meta = {"name": "e", "seed": 1, "repetitions": len(cart_ms), "outlier_rule": None}
    (path / "experiment.json").write_text(json.dumps(meta))
    return path


def test_a_step_metric_names_a_step_and_one_of_its_times() -> None:
    assert steps.parse("step:log in") == ("log in", "duration_ms")
    assert steps.parse("step:cart/interaction_ms") == ("cart", "interaction_ms")
    assert steps.step_metric("cart", "ttfb_ms") == "step:cart/ttfb_ms"
    assert steps.step_metric("cart") == "step:cart"
    assert steps.FIELDS[0] == "duration_ms" and "interaction_ms" in steps.FIELDS
    for bad in ("step:", "step:a:b", "step:cart/requests", "step:cart/nope_ms"):
        with pytest.raises(ValueError, match="step"):
            steps.parse(bad)


def test_step_columns_follow_each_trial_by_id(tmp_path: Path) -> None:
    """Trial 2 lacks ``cart``: NaN there; names come in journey order whatever the storage."""
    store = Store(tmp_path)
    t = on(FCFS, "h2s", 0, 1.0, client="chromium", plt=9.0, page=JOURNEY_PAGE)
    one = store.add_trial(t, (), (step(1, "search", 10.0), step(2, "cart", 20.0)))
    two = store.add_trial(dataclasses.replace(t, trial_key="other"), (), (step(1, "search", 11.0),))
    trials, by_id = store.trials(), store.all_steps()
    store.close()
    assert steps.step_names({two: by_id[two], one: by_id[one]}) == ["search", "cart"]
    frame = steps.with_steps(trials, by_id, ["step:cart", "step:search"])
    assert frame.number("step:search").tolist() == [10.0, 11.0]
    cart = frame.number("step:cart")
    assert cart[0] == 20.0 and np.isnan(cart[1])


def test_run_b_against_run_a_step_by_step(tmp_path: Path) -> None:
    """``cart`` 20% slower in B, ``search`` the same: one cell per step, in journey order."""
    from h2lab.report.ab import compare_folders

    a = journey_folder(tmp_path / "a", FCFS, [500, 510, 520, 530])
    b = journey_folder(tmp_path / "b", FCFS, [600, 612, 624, 636])
    result = compare_folders(a, b)
    assert result.by_step is not None
    search, cart = result.by_step.cells
    assert (search.metric, cart.metric) == ("step:search", "step:cart")
    assert search.median_ratio == pytest.approx(1.0) and search.outcome == "tie"
    assert cart.median_ratio == pytest.approx(1.2) and cart.outcome == "A faster"
    assert cart.median_a_ms == pytest.approx(515) and cart.n_pairs == 4

    asked = compare_folders(a, b, metric="step:cart/interaction_ms")
    (cell,) = asked.comparison.cells
    assert cell.median_a_ms == pytest.approx(565) and cell.median_b_ms == pytest.approx(668)
