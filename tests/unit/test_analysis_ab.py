"""h2lab.analysis.ab: two runs' cells matched by their factors (differing ones set aside),
trials paired by repetition and protocol, s = B/A with its CI, Wilcoxon p and verdict."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from h2lab.analysis.ab import (
    ConfigDifference,
    ab_outcome,
    compare_runs,
    config_differences,
    factor_differences,
    match_cells,
    pair_values,
)
from h2lab.results import TrialRecord
from tests.unit.test_report_model import trial

FCFS, CLIENT = "origin:scheduler=fcfs", "origin:scheduler=client"


def on(server: str, protocol: str, rep: int, pdt: float | None, **kw: object) -> TrialRecord:
    """A trial of ``server`` (the builder's cell has nginx)."""
    t = trial(protocol, rep, pdt, **kw)  # type: ignore[arg-type]
    block = t.block.replace("|nginx|", f"|{server}|")
    return dataclasses.replace(
        t, cell=t.cell.replace("server", server), block=block, trial_key=f"{block}|{protocol}"
    )


def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def test_a_factor_without_a_common_level_is_set_aside_and_others_are_matched_on() -> None:
    a = {on(FCFS, "h2s", 0, 1.0, network=n).cell for n in ("cable", "3g")}
    b = {on(CLIENT, "h2s", 0, 1.0, network="3g").cell}
    diffs = {d.factor: d for d in factor_differences(a, b)}
    assert set(diffs) == {"network", "server"}
    assert diffs["server"].set_aside and diffs["server"].levels_b == (CLIENT,)
    assert not diffs["network"].set_aside  # 3g in both: matched on
    assert diffs["network"].levels_a == ("3g", "cable")
    pairs = match_cells(a, b, ["server"])
    assert [(x.network, x.server, y.server) for x, y in pairs] == [("3g", FCFS, CLIENT)]


def test_the_page_is_never_set_aside() -> None:
    a = {on(FCFS, "h2s", 0, 1.0, page="synthetic:n=2,size=1KB").cell}
    b = {on(FCFS, "h2s", 0, 1.0, page="synthetic:n=9,size=1KB").cell}
    (d,) = factor_differences(a, b)
    assert d.factor == "page" and not d.set_aside
    assert match_cells(a, b, []) == []


def test_trials_pair_by_repetition_and_protocol() -> None:
    # B is 0.8× A in every h2s repetition and 1.2× in every h1s one, whatever the level
    a = [on(FCFS, p, r, 100.0 * (r + 1)) for p in ("h1s", "h2s") for r in range(6)]
    b = [on(CLIENT, "h2s", r, 80.0 * (r + 1)) for r in range(6)]
    b += [on(CLIENT, "h1s", r, 120.0 * (r + 1)) for r in range(6)]
    result = compare_runs(a, b, rng(), "pdt_ms")
    assert result.set_aside == ("server",)
    assert result.unmatched_a == () and result.unmatched_b == ()
    h1, h2 = result.cells
    assert (h1.protocol, h2.protocol) == ("h1s", "h2s")
    assert h2.n_pairs == 6 and h2.ratios == pytest.approx([0.8] * 6)
    assert h2.median_ratio == pytest.approx(0.8)
    assert h2.ci_low_ratio == pytest.approx(0.8) and h2.ci_high_ratio == pytest.approx(0.8)
    assert h2.median_a_ms == pytest.approx(350.0) and h2.median_b_ms == pytest.approx(280.0)
    assert h2.p_value == pytest.approx(2 / 2**6)  # six pairs, all the same sign
    assert h2.outcome == "B faster" and h1.outcome == "A faster"
    assert h2.cell_a.server == FCFS and h2.cell_b.server == CLIENT


def test_unpaired_failed_and_retried_trials() -> None:
    a = [on(FCFS, "h2s", r, 100.0) for r in range(4)]
    a.append(on(FCFS, "h2s", 4, 100.0))  # repetition 4 only in A
    b = [on(CLIENT, "h2s", r, 100.0 + r) for r in range(3)]
    b.append(on(CLIENT, "h2s", 3, None, status="failed"))
    b.append(on(CLIENT, "h2s", 3, 90.0, attempt=2))  # the retry counts, once
    (cell,) = compare_runs(a, b, rng(), "pdt_ms").cells
    assert (cell.n_pairs, cell.n_a, cell.n_b) == (4, 5, 4)
    assert cell.ratios == pytest.approx([1.0, 1.01, 1.02, 0.9])
    assert cell.outcome == "tie"


def test_one_pair_is_too_few_and_no_common_protocol_gives_no_cell() -> None:
    one = compare_runs([on(FCFS, "h2s", 0, 100.0)], [on(CLIENT, "h2s", 0, 50.0)], rng(), "pdt_ms")
    (cell,) = one.cells
    assert cell.n_pairs == 1 and cell.outcome == "too few pairs" and cell.p_value == 1.0
    none = compare_runs([on(FCFS, "h1s", 0, 1.0)], [on(CLIENT, "h2s", 0, 1.0)], rng(), "pdt_ms")
    assert none.cells == () and len(none.matched) == 1


def test_the_metric_may_depend_on_the_cells() -> None:
    a = [on(FCFS, "h2s", r, 100.0, client="chromium", plt=1000.0 + r) for r in range(3)]
    b = [on(CLIENT, "h2s", r, 100.0, client="chromium", plt=500.0 + r) for r in range(3)]
    (cell,) = compare_runs(a, b, rng(), lambda ca, cb: "plt_ms").cells
    assert cell.metric == "plt_ms" and cell.median_b_ms == pytest.approx(501.0)
    assert cell.outcome == "B faster"


def test_pair_values_orders_repetitions_by_number() -> None:
    a = {f"x|r{r}": float(r + 1) for r in (10, 2, 1)} | {"x|r0": 0.0}  # A 0: no ratio
    b = {f"y|r{r}": 1.0 for r in (1, 2, 10, 0)}
    assert pair_values(a, b) == ([2.0, 3.0, 11.0], [1.0, 1.0, 1.0])


def test_outcome_uses_the_verdicts_thresholds_inclusive() -> None:
    assert ab_outcome(0.90, 0.95, 5) == "B faster"
    assert ab_outcome(1.05, 1.10, 5) == "A faster"
    assert ab_outcome(0.90, 0.96, 5) == "tie"
    assert ab_outcome(0.5, 0.6, 1) == "too few pairs"


def test_config_differences_name_what_changed() -> None:
    a = {"experiment seed": "1", "nginx version": "1.22.1", "repetitions": "4"}
    b = {"experiment seed": "2", "repetitions": "4", "machine": "lab2"}
    assert config_differences(a, b) == (
        ConfigDifference("experiment seed", "1", "2"),
        ConfigDifference("nginx version", "1.22.1", "not recorded"),
        ConfigDifference("machine", "not recorded", "lab2"),
    )


def test_several_levels_of_a_set_aside_factor_each_meet_the_other_run() -> None:
    rr = "origin:scheduler=rr"
    a = [on(s, "h2s", r, 100.0) for s in (FCFS, rr) for r in range(3)]
    b = [on(CLIENT, "h2s", r, 90.0) for r in range(3)]
    result = compare_runs(a, b, rng(), "pdt_ms")
    assert [(c.cell_a.server, c.cell_b.server) for c in result.cells] == [
        (FCFS, CLIENT),
        (rr, CLIENT),
    ]
    assert all(c.median_ratio == pytest.approx(0.9) for c in result.cells)
