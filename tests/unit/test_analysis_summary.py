"""h2lab.analysis.summary: per-cell medians and paired per-block h2/h1 ratios."""

from __future__ import annotations

import pytest

from h2lab.analysis.summary import CellSummary, summarize
from h2lab.results import STATUSES, TrialRecord
from h2lab.spec.factors import Cell
from h2lab.spec.protocols import PROTOCOLS
from h2lab.spec.vocab import one_of


def trial(
    protocol: str,
    rep: int,
    pdt: float | None,
    *,
    status: str = "ok",
    network: str = "cable",
    plt: float | None = None,
) -> TrialRecord:
    block = f"p|{network}|nginx|h2load|cubic|iw10|r{rep}"
    return TrialRecord(
        trial_key=f"{block}|{protocol}",
        experiment="e",
        block=block,
        cell=Cell.of(page="p", network=network, server="nginx", client="h2load"),
        page_digest=None,
        protocol=one_of(PROTOCOLS, protocol, "protocol"),
        repetition=rep,
        seed=rep,
        attempt=1,
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


def test_medians_and_paired_ratio_per_block() -> None:
    rows = [
        trial("h1s", 0, 100.0),
        trial("h2s", 0, 50.0),  # ratio 0.5
        trial("h1s", 1, 200.0),
        trial("h2s", 1, 300.0),  # ratio 1.5
        trial("h1s", 2, 400.0),
        trial("h2s", 2, 40.0),  # ratio 0.1
    ]
    (cell,) = summarize(rows)
    assert cell == CellSummary(
        cell=Cell.of(page="p", network="cable", server="nginx", client="h2load"),
        n_ok={"h1s": 3, "h2s": 3},
        n_failed={},
        medians={"h1s": 200.0, "h2s": 50.0},
        ratios={"h2s/h1s": (0.5, 3)},
    )
    # the paired ratio is the median of per-block ratios, not the ratio of medians (0.25)


def test_unpaired_and_failed_trials() -> None:
    rows = [
        trial("h1s", 0, 100.0),
        trial("h2s", 0, 80.0),  # ratio 0.8
        trial("h1s", 1, 120.0),
        trial("h2s", 1, None, status="failed"),  # block 1 has no pair
        trial("h1s", 2, 90.0, status="failed"),
        trial("h2s", 2, 60.0),  # block 2 has no pair either
    ]
    (cell,) = summarize(rows)
    assert cell.n_ok == {"h1s": 2, "h2s": 2}
    assert cell.n_failed == {"h1s": 1, "h2s": 1}
    assert cell.medians == {"h1s": 110.0, "h2s": 70.0}
    assert cell.ratios == {"h2s/h1s": (0.8, 1)}


def test_a_retried_trial_that_succeeded_is_not_a_failure() -> None:
    import dataclasses

    ok = trial("h2s", 0, 80.0)
    failed_first = dataclasses.replace(ok, status="failed", pdt_ms=None, attempt=1)
    failed_twice = dataclasses.replace(trial("h1s", 0, None, status="failed"), attempt=1)
    failed_again = dataclasses.replace(failed_twice, attempt=2)
    (cell,) = summarize([failed_first, ok, failed_twice, failed_again])
    assert cell.n_failed == {"h1s": 1}
    assert cell.n_ok == {"h2s": 1}


def test_all_pairs_cleartext() -> None:
    rows = []
    for rep, (h1c, h1p, h2c) in enumerate([(100.0, 80.0, 40.0), (100.0, 50.0, 60.0)]):
        rows += [trial("h1c", rep, h1c), trial("h1p", rep, h1p), trial("h2c", rep, h2c)]
    (cell,) = summarize(rows)
    assert cell.ratios["h2c/h1c"] == pytest.approx((0.5, 2))  # median of 0.4, 0.6
    assert cell.ratios["h2c/h1p"] == pytest.approx((0.85, 2))  # median of 0.5, 1.2
    assert set(cell.ratios) == {"h2c/h1c", "h2c/h1p"}


def test_zero_h1_value_is_not_divided_by() -> None:
    (cell,) = summarize([trial("h1s", 0, 0.0), trial("h2s", 0, 5.0)])
    assert cell.ratios == {}
    assert cell.medians == {"h1s": 0.0, "h2s": 5.0}


def test_cells_are_separate_and_sorted() -> None:
    rows = [
        trial("h1s", 0, 300.0, network="dsl"),
        trial("h2s", 0, 150.0, network="dsl"),
        trial("h1s", 0, 100.0, network="cable"),
        trial("h2s", 0, 100.0, network="cable"),
    ]
    cells = summarize(rows)
    assert [c.cell.network for c in cells] == ["cable", "dsl"]
    assert cells[0].ratios == {"h2s/h1s": (1.0, 1)}
    assert cells[1].ratios == {"h2s/h1s": (0.5, 1)}
    assert cells[1].medians == {"h1s": 300.0, "h2s": 150.0}


def test_other_metric() -> None:
    rows = [trial("h1s", 0, 1.0, plt=400.0), trial("h2s", 0, 1.0, plt=100.0)]
    (cell,) = summarize(rows, metric="plt_ms")
    assert cell.ratios == {"h2s/h1s": (0.25, 1)}
    assert cell.medians == {"h1s": 400.0, "h2s": 100.0}


def test_ok_row_without_value_is_neither_ok_nor_failed() -> None:
    (cell,) = summarize([trial("h1s", 0, None), trial("h2s", 0, 10.0)])
    assert cell.n_ok == {"h2s": 1}
    assert cell.n_failed == {}
    assert cell.ratios == {}


def test_empty() -> None:
    assert summarize([]) == []
