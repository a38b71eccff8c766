"""Requests that failed in the browser during successful trials (pure: records and resource
rows in, counts out).

A browser trial records ``failed_requests``: the requests of its load that failed and that the
page did not cancel itself (blocked by ORB or CSP, a dropped connection, a host the lab did not
record). Each is a ``resources`` row whose ``error`` is the browser's reason
(``net::ERR_BLOCKED_BY_ORB``, ...); a finished request's ``error`` is None. With
``fail_on = "document"`` (the default) such a trial is still ok, and its timings are in the
statistics: this counts them.

Only successful, non-warm-up trials are counted, one per trial (its latest successful
attempt, as the report's statistics take it). A trial whose ``failed_requests`` is None (a
load client, or a row older than the column) is not a browser trial here.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from h2lab.analysis.verdict import latest_ok
from h2lab.results import TrialRecord
from h2lab.spec.factors import Cell
from h2lab.store.frame import TrialFrame, TrialsIn, as_frame

TOP_PAIRS = 10
"""How many (URL, error) pairs :func:`failed_requests` keeps."""


@dataclass(frozen=True)
class FailedRow:
    """One cell and protocol whose ok trials had a request fail."""

    cell: Cell
    protocol: str
    ok: int
    """its ok browser trials"""
    with_failed: int
    """those with at least one failed request"""
    failed: int
    """failed requests in all (the sum of their ``failed_requests``)"""


@dataclass(frozen=True)
class FailedPair:
    url: str
    error: str
    count: int
    """resource rows with this URL and error, over every trial"""


@dataclass(frozen=True)
class FailedRequests:
    trials: int
    """ok browser trials (``failed_requests`` recorded)"""
    with_failed: int
    """those with ``failed_requests`` > 0"""
    failed: int
    """failed requests in all"""
    rows: tuple[FailedRow, ...]
    """per cell and protocol with a failed request, sorted by cell then protocol"""
    top: tuple[FailedPair, ...]
    """the most frequent (URL, error) pairs, most frequent first (ties: by URL, then error);
    at most :data:`TOP_PAIRS`"""


def browser_ok(records: Iterable[TrialRecord]) -> list[TrialRecord]:
    """The latest successful non-warm-up attempt of each trial that recorded
    ``failed_requests`` (:func:`~h2lab.analysis.verdict.latest_ok`)."""
    return [t for t in latest_ok(records) if not t.warmup and t.failed_requests is not None]


def with_failures(records: Iterable[TrialRecord]) -> list[TrialRecord]:
    """The trials of :func:`browser_ok` whose resources are worth reading (a request failed)."""
    return [t for t in browser_ok(records) if (t.failed_requests or 0) > 0]


def _browser_ok(trials: TrialsIn) -> TrialFrame:
    """:func:`browser_ok` of a frame."""
    ok = as_frame(trials).latest_ok()
    return ok.take((ok.number("warmup") == 0) & ~np.isnan(ok.number("failed_requests")))


def failure_ids(trials: TrialsIn) -> list[int]:
    """The ids of :func:`with_failures`, read from a frame."""
    f = _browser_ok(trials)
    return [int(i) for i in f.number("id")[f.number("failed_requests") > 0].tolist()]


def _rows(f: TrialFrame) -> tuple[FailedRow, ...]:
    protocols = f.text("protocol")
    failed = f.number("failed_requests")
    groups = []
    key = f.cell * len(protocols.values) + protocols.codes
    for code in np.unique(key).tolist():
        cell, protocol = divmod(code, len(protocols.values))
        mine = failed[key == code]
        hit = int(np.count_nonzero(mine > 0))
        if hit:
            row = FailedRow(f.cells[cell], str(protocols.values[protocol]), len(mine), hit, 0)
            groups.append(dataclasses.replace(row, failed=int(mine.sum())))
    return tuple(sorted(groups, key=lambda r: (r.cell, r.protocol)))


def _top(
    ids: Sequence[int], resources: Mapping[int, Sequence[Mapping[str, Any]]]
) -> tuple[FailedPair, ...]:
    counts: Counter[tuple[str, str]] = Counter()
    for i in ids:
        for r in resources.get(i, ()):
            if r.get("error"):
                counts[(str(r["url"]), str(r["error"]))] += 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return tuple(FailedPair(u, e, n) for (u, e), n in ranked[:TOP_PAIRS])


def failed_requests(
    records: TrialsIn, resources: Mapping[int, Sequence[Mapping[str, Any]]]
) -> FailedRequests:
    """How many ok browser trials of ``records`` had a request fail, per cell and protocol,
    and the most frequent failing (URL, error) pairs among the rows of ``resources`` (trial id
    -> its resource rows, as ``Store.resources`` gives them; only the counted trials' are
    read, a trial missing from it adds no pair)."""
    f = _browser_ok(records)
    failed = f.number("failed_requests")
    return FailedRequests(
        trials=len(f),
        with_failed=int(np.count_nonzero(failed > 0)),
        failed=int(failed.sum()),
        rows=_rows(f),
        top=_top(failure_ids(f), resources),
    )
