"""h2lab.analysis.failed_requests: per cell and protocol, how many ok browser trials had a
request fail in the browser, and the most frequent failing (URL, error) pairs."""

from __future__ import annotations

import dataclasses
from typing import Any

from h2lab.analysis.failed_requests import (
    TOP_PAIRS,
    FailedPair,
    FailedRow,
    failed_requests,
    with_failures,
)
from h2lab.results import TrialRecord
from tests.unit.test_report_model import cell, trial

ORB = "net::ERR_BLOCKED_BY_ORB"
RESET = "net::ERR_CONNECTION_RESET"
FAR = "rtt=100ms"


def browser(
    protocol: str, rep: int, failed: int | None, *, tid: int, network: str = "rtt=20ms", **kw: Any
) -> TrialRecord:
    t = trial(protocol, rep, 90.0, client="chromium", plt=100.0, network=network, **kw)
    return dataclasses.replace(t, failed_requests=failed, id=tid)


def row(url: str, error: str | None = None) -> dict[str, Any]:
    return {"url": url, "origin": "o1", "error": error}


def test_counts_per_cell_and_protocol_and_the_top_pairs() -> None:
    records = [
        browser("h1s", 0, 2, tid=1),
        browser("h1s", 1, 0, tid=2),
        browser("h2s", 0, 1, tid=3),
        browser("h2s", 1, 0, tid=4),
        browser("h2s", 0, 3, tid=5, network=FAR),
        browser("h1s", 0, 0, tid=6, network=FAR),  # a clean (cell, protocol): no row
        trial("h2s", 0, 80.0, network=FAR),  # h2load: failed_requests None, not counted
    ]
    resources = {
        1: [row("https://o1/index.html"), row("https://o2/a.js", ORB), row("https://o3/b", RESET)],
        3: [row("https://o2/a.js", ORB)],
        5: [row("https://o2/a.js", ORB), row("https://o3/b", RESET), row("https://o1/c", ORB)],
    }
    f = failed_requests(records, resources)
    assert (f.trials, f.with_failed, f.failed) == (6, 3, 6)
    assert f.rows == (
        FailedRow(cell("chromium", FAR), "h2s", 1, 1, 3),
        FailedRow(cell("chromium"), "h1s", 2, 1, 2),
        FailedRow(cell("chromium"), "h2s", 2, 1, 1),
    )
    assert f.top == (
        FailedPair("https://o2/a.js", ORB, 3),
        FailedPair("https://o3/b", RESET, 2),
        FailedPair("https://o1/c", ORB, 1),
    )
    assert [t.id for t in with_failures(records)] == [1, 3, 5]


def test_warmups_failed_attempts_and_earlier_attempts_are_left_out() -> None:
    records = [
        browser("h2s", 0, 5, tid=1, status="failed"),  # a failed attempt
        browser("h2s", 0, 4, tid=2, attempt=2),  # its retry; superseded by attempt 3
        browser("h2s", 0, 1, tid=3, attempt=3),
        dataclasses.replace(browser("h2s", 1, 7, tid=4), warmup=True),
    ]
    f = failed_requests(records, {3: [row("u", ORB)], 2: [row("v", ORB)] * 4})
    assert (f.trials, f.with_failed, f.failed) == (1, 1, 1)
    assert f.rows == (FailedRow(cell("chromium"), "h2s", 1, 1, 1),)
    assert f.top == (FailedPair("u", ORB, 1),)
    assert [t.id for t in with_failures(records)] == [3]


def test_top_pairs_keep_ten_ties_by_url_then_error() -> None:
    urls = [f"https://o1/{i:02d}" for i in range(12)]
    rows = [row(u, ORB) for u in reversed(urls)] + [row("https://o1/05", RESET)] * 2
    f = failed_requests([browser("h2s", 0, len(rows), tid=1)], {1: rows})
    assert len(f.top) == TOP_PAIRS
    assert f.top[0] == FailedPair("https://o1/05", RESET, 2)
    assert [p.url for p in f.top[1:]] == urls[:9]
    assert all(p.count == 1 and p.error == ORB for p in f.top[1:])


def test_no_failure_and_no_browser_trial() -> None:
    clean = failed_requests([browser("h2s", 0, 0, tid=1)], {})
    assert (clean.trials, clean.with_failed, clean.failed, clean.rows, clean.top) == (
        1,
        0,
        0,
        (),
        (),
    )
    load = failed_requests([trial("h2s", 0, 80.0)], {})
    assert (load.trials, load.failed) == (0, 0)
    assert with_failures([trial("h2s", 0, 80.0), browser("h1s", 0, 0, tid=2)]) == []
