"""h2lab.analysis.verdict: per-cell statistics, paired ratios over complete blocks, verdicts."""

from __future__ import annotations

import numpy as np
import pytest

from h2lab.analysis.factors import Cell
from h2lab.analysis.stats import quantile
from h2lab.analysis.verdict import (
    H1_FASTER_AT_LEAST,
    H2_FASTER_AT_MOST,
    analyze,
    outcome_of,
    outcome_text,
    trial_efficiencies,
)
from h2lab.report.model import verdict_rows
from h2lab.results import STATUSES, TrialRecord
from h2lab.spec.protocols import PROTOCOLS
from h2lab.spec.vocab import one_of

CELL = Cell.of(
    page="synthetic:n=64,size=10KB,origins=1", network="cable", server="nginx", client="h2load"
)


def trial(
    protocol: str,
    rep: int,
    pdt: float | None,
    *,
    status: str = "ok",
    attempt: int = 1,
    network: str = "cable",
    plt: float | None = None,
) -> TrialRecord:
    block = f"{CELL.page}|{network}|nginx|h2load|cubic|iw10|r{rep}"
    return TrialRecord(
        trial_key=f"{block}|{protocol}",
        experiment="e",
        block=block,
        cell=Cell.of(page=CELL.page, network=network, server="nginx", client="h2load"),
        page_digest=None,
        protocol=one_of(PROTOCOLS, protocol, "protocol"),
        repetition=rep,
        seed=rep,
        attempt=attempt,
        status=one_of(STATUSES, status, "status"),
        error=None if status == "ok" else "boom",
        started_at="2026-01-01T00:00:00",
        duration_s=1.0,
        pdt_ms=pdt,
        plt_ms=plt,
        body_bytes=None,
        bytes_up=None,
        bytes_down=None,
        tcp_connections=None,
        retransmits=None,
        request_header_bytes=None,
        response_header_bytes=None,
        config={},
        versions={},
    )


def paired(ratios: list[float], h1_ms: float = 100.0) -> list[TrialRecord]:
    """One block per ratio: h1s at ``h1_ms`` (+ the repetition, so values differ), h2s at
    ratio × that."""
    rows = []
    for rep, s in enumerate(ratios):
        h1 = h1_ms + rep
        rows += [trial("h1s", rep, h1), trial("h2s", rep, s * h1)]
    return rows


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (0.80, H2_FASTER_AT_MOST, "h2 faster"),  # seed 001: s <= 0.95, the bound included
        (0.80, 0.9500001, "tie"),
        (H1_FASTER_AT_LEAST, 1.30, "h1 faster"),  # s >= 1.05
        (1.0499999, 1.30, "tie"),
        (0.90, 1.10, "tie"),
        (0.96, 1.04, "tie"),
        (0.50, 1.50, "tie"),  # wide CI straddling both thresholds
    ],
)
def test_outcome_thresholds(low: float, high: float, expected: str) -> None:
    assert outcome_of(low, high) == expected


def test_outcome_needs_two_blocks() -> None:
    assert outcome_of(0.5, 0.5, n_blocks=1) == "too few blocks"
    assert outcome_of(0.5, 0.5, n_blocks=2) == "h2 faster"


def test_cell_stats_and_paired_ratio() -> None:
    rows = paired([0.5, 0.6, 0.55, 0.52, 0.58, 0.61, 0.49, 0.57])
    a = analyze(rows, np.random.default_rng(0), resamples=1000)
    h1, h2 = a.cell_stats
    assert (h1.protocol, h2.protocol) == ("h1s", "h2s")
    assert h1.cell == CELL
    h1_values = [100.0 + rep for rep in range(8)]
    assert h1.n == 8
    assert h1.median_ms == quantile(h1_values, 0.5) == 103.5
    assert h1.p25_ms == quantile(h1_values, 0.25)
    assert h1.p75_ms == quantile(h1_values, 0.75)
    assert h1.ci_low_ms is not None and h1.ci_high_ms is not None
    assert 100.0 <= h1.ci_low_ms <= 103.5 <= h1.ci_high_ms <= 107.0
    assert (h1.n_failed, h1.n_missing, h1.n_outliers_removed) == (0, 0, 0)
    (v,) = a.verdicts
    assert v.ratio.pair == "h2s/h1s"
    assert v.ratio.n_blocks == 8
    assert v.ratio.ratios == pytest.approx([0.5, 0.6, 0.55, 0.52, 0.58, 0.61, 0.49, 0.57])
    assert v.ratio.median_ratio == pytest.approx(0.56)
    assert v.ratio.ci_high_ratio is not None and v.ratio.ci_high_ratio <= 0.61
    assert v.outcome == "h2 faster"
    assert (v.n_blocks, v.n_failed, v.outlier_rule) == (8, 0, None)


def test_verdicts_h1_faster_and_tie() -> None:
    rng = np.random.default_rng(0)
    (slow,) = analyze(paired([1.8, 2.0, 2.2, 1.9, 2.1]), rng).verdicts
    assert slow.outcome == "h1 faster"
    (even,) = analyze(paired([0.99, 1.01, 1.0, 0.98, 1.02]), rng).verdicts
    assert even.outcome == "tie"
    # h2 faster in most blocks but not all: the CI reaches above 0.95
    (mixed,) = analyze(paired([0.7, 1.2, 0.8, 1.1, 0.75]), rng).verdicts
    assert mixed.outcome == "tie"


def test_paired_ratio_uses_only_complete_blocks() -> None:
    rows = paired([0.5, 0.5, 0.5])  # blocks 0-2 complete
    rows += [trial("h1s", 3, 100.0), trial("h2s", 3, None, status="failed")]  # h2 failed
    rows += [trial("h1s", 4, 100.0)]  # h2 never ran (e.g. interrupted)
    rows += [trial("h2s", 5, 1.0)]  # h1 never ran: would give s = 0.01
    (v,) = analyze(rows, np.random.default_rng(0)).verdicts
    assert v.ratio.n_blocks == 3
    assert v.ratio.n_incomplete_blocks == 3
    assert v.ratio.ratios == pytest.approx([0.5, 0.5, 0.5])
    assert v.ratio.median_ratio == pytest.approx(0.5)
    assert v.h2.n_failed == 1
    assert v.n_failed == 1
    assert v.h1.n == 5 and v.h2.n == 4


def test_a_retried_trial_counts_once() -> None:
    rows = paired([0.5, 0.5])
    rows += [trial("h1s", 2, None, status="failed", attempt=1), trial("h1s", 2, 100.0, attempt=2)]
    rows += [trial("h2s", 2, 50.0)]
    rows += [trial("h2s", 3, None, status="failed", attempt=a) for a in (1, 2, 3)]
    rows += [trial("h1s", 3, 100.0)]
    (v,) = analyze(rows, np.random.default_rng(0)).verdicts
    assert v.h1.n == 4 and v.h1.n_failed == 0
    assert v.h2.n == 3 and v.h2.n_failed == 1  # three failed attempts, one failed trial
    assert v.ratio.n_blocks == 3


def test_successful_trials_without_the_metric_are_counted_as_missing() -> None:
    rows = paired([0.5, 0.5, 0.5])  # h2load: no plt_ms
    a = analyze(rows, np.random.default_rng(0), metric="plt_ms")
    assert [(s.n, s.n_missing, s.median_ms) for s in a.cell_stats] == [(0, 3, None)] * 2
    (v,) = a.verdicts
    assert v.outcome == "too few blocks"
    assert v.ratio.median_ratio is None


def test_outlier_rule_off_by_default_and_reported_when_on() -> None:
    ratios = [0.5, 0.52, 0.48, 0.51, 0.49, 0.5, 0.53, 0.47, 0.5, 0.5]
    rows = paired(ratios, h1_ms=100.0)
    # plant one absurd h2 value in block 4
    rows = [t if t.trial_key != rows[9].trial_key else trial("h2s", 4, 5000.0) for t in rows]
    off = analyze(rows, np.random.default_rng(0))
    (v_off,) = off.verdicts
    assert off.outlier_rule is None and v_off.outlier_rule is None
    assert v_off.n_outliers_removed == 0
    assert v_off.ratio.n_blocks == 10
    assert max(v_off.ratio.ratios) > 40
    on = analyze(rows, np.random.default_rng(0), outlier_rule="2sd")
    (v_on,) = on.verdicts
    assert v_on.outlier_rule == "2sd"
    assert v_on.h2.n_outliers_removed == 1
    assert v_on.h1.n_outliers_removed == 0
    assert v_on.n_outliers_removed == 1
    assert v_on.h2.n == 9
    assert v_on.ratio.n_blocks == 9  # the block lost its h2 value: no longer complete
    assert v_on.ratio.n_incomplete_blocks == 1
    assert max(v_on.ratio.ratios) < 0.6


def test_analysis_is_reproducible_from_the_seed() -> None:
    rows = paired([0.5, 0.9, 0.7, 1.1, 0.6, 0.8])
    a = analyze(rows, np.random.default_rng(5))
    b = analyze(rows, np.random.default_rng(5))
    assert a == b


def test_every_pair_present_in_a_cell_gets_a_verdict() -> None:
    rows = [trial(p, rep, 100.0 + rep) for rep in range(3) for p in ("h1c", "h1p", "h2c")]
    pairs = [v.ratio.pair for v in analyze(rows, np.random.default_rng(0)).verdicts]
    assert pairs == ["h2c/h1c", "h2c/h1p"]


def test_metric_must_be_a_time_field() -> None:
    with pytest.raises(ValueError, match="_ms"):
        analyze(paired([0.5]), np.random.default_rng(0), metric="bytes_down")
    with pytest.raises(ValueError, match="_ms"):
        analyze(paired([0.5]), np.random.default_rng(0), metric="nonsense_ms")


def test_trial_efficiencies_take_the_bounds_as_input() -> None:
    rows = paired([0.5, 0.5])
    rows.append(trial("h2s", 9, None, status="failed"))
    bounds = {rows[0].trial_key: 50.0, rows[1].trial_key: 25.0, rows[-1].trial_key: 10.0}
    eff = trial_efficiencies(rows, bounds)
    assert [(e.protocol, e.bound_ms, e.measured_ms, e.efficiency) for e in eff] == [
        ("h1s", 50.0, 100.0, 0.5),
        ("h2s", 25.0, 50.0, 0.5),
    ]  # trials without a bound, and failed trials, are left out


def test_h3_is_compared_with_h2s_and_its_outcome_is_named_by_the_pair() -> None:
    trials = [trial(p, r, v) for r in range(4) for p, v in (("h2s", 200.0 + r), ("h3", 150.0 + r))]
    analysis = analyze(trials, np.random.default_rng(1), resamples=200)
    (v,) = analysis.verdicts
    assert (v.ratio.pair, v.outcome) == ("h3/h2s", "h2 faster")
    assert outcome_text(v.outcome, "h3", "h2s") == "h3 faster"
    assert outcome_text("h1 faster", "h3", "h2s") == "h2s faster"
    assert outcome_text("tie", "h3", "h2s") == "tie"
    # the seeds' pairs keep their words
    assert outcome_text("h2 faster", "h2s", "h1s") == "h2 faster"
    # the report's verdict table says it in the pair's words, coloured as the analysis names it
    (row,) = verdict_rows(analysis)
    assert (row.pair, row.outcome, row.kind) == ("h3/h2s", "h3 faster", "h2 faster")
