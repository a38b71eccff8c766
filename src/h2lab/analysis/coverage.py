"""Replay coverage of one trial (pure: a page and its resource rows in, counts out).

Every request the browser made over the network (``http``/``https`` URLs; ``data:`` and
``blob:`` are not requests) falls in one of four groups, as the replaying servers answered it
(docs/pages.md):

* **answered from the recording**, with the recorded status: *exact* (same method, host and
  target), *by closest query* (the closest of several queries recorded for that method, host
  and path, :mod:`h2lab.pages.closest`) or *by path* (the only response recorded for that
  host and path);
* **not recorded**: the replay had nothing for it and answered 404;
* **failed in the browser**: the row carries the browser's error (blocked by ORB or CSP, a
  dropped connection, a host the lab does not serve, so the name did not resolve).

A request the replay holds but whose row shows another status and no error is counted as not
recorded (it was not answered from the recording); none is expected.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from h2lab.analysis.verdict import latest_ok
from h2lab.pages.manifest import Page
from h2lab.results import TrialRecord


@dataclass(frozen=True)
class Coverage:
    requests: int
    """network requests of the trial"""
    exact: int
    by_query: int
    by_path: int
    not_recorded: int
    failed: int
    """failed in the browser (an error in the row)"""
    in_recording: int
    """requests whose URL the replay holds (exact or by path), however they ended"""

    @property
    def answered(self) -> int:
        return self.exact + self.by_query + self.by_path


def is_network(url: str) -> bool:
    return url.startswith(("http://", "https://"))


def coverage(page: Page, rows: Iterable[Mapping[str, Any]]) -> Coverage:
    """Count the rows (``url``, ``status``, ``error``; ``method`` GET unless given) of one
    trial of ``page`` in the groups above."""
    counts = {"exact": 0, "query": 0, "path": 0, "not": 0, "failed": 0, "held": 0}
    requests = 0
    for row in rows:
        url = str(row["url"])
        if not is_network(url):
            continue
        requests += 1
        held, how = page.match_how(str(row.get("method") or "GET"), url)
        counts["held"] += held is not None
        if row.get("error"):
            counts["failed"] += 1
        elif held is not None and row.get("status") == held.status:
            counts[how] += 1
        else:
            counts["not"] += 1
    return Coverage(
        requests=requests,
        exact=counts["exact"],
        by_query=counts["query"],
        by_path=counts["path"],
        not_recorded=counts["not"],
        failed=counts["failed"],
        in_recording=counts["held"],
    )


@dataclass(frozen=True)
class CoverageRow:
    """One page and protocol: the coverage of its ok trials, summed."""

    page: str
    """the page's name"""
    protocol: str
    client: str
    trials: int
    total: Coverage


def add(a: Coverage, b: Coverage) -> Coverage:
    return Coverage(*(getattr(a, f.name) + getattr(b, f.name) for f in fields(Coverage)))


def coverage_rows(
    trials: Iterable[TrialRecord],
    page_of: Callable[[str], Page | None],
    rows_of: Callable[[int], Sequence[Mapping[str, Any]]],
) -> tuple[list[CoverageRow], list[str]]:
    """Coverage of every replayed page's latest ok, non-warm-up browser trials (those with
    ``failed_requests`` recorded), summed per page, protocol and client. ``page_of(digest)``
    finds a page (None: not on this machine), ``rows_of(trial id)`` its resource rows.
    Synthetic pages are left out: the replay holds all they ask for. Returns the rows (by page
    name, protocol, client) and the names of the pages that could not be found."""
    totals: dict[tuple[str, str, str], tuple[int, Coverage]] = {}
    missing: set[str] = set()
    for t in latest_ok(trials):
        spec = str(t.cell["page"])
        if t.warmup or t.failed_requests is None or spec.startswith("synthetic:"):
            continue
        page = page_of(t.page_digest) if t.page_digest else None
        if page is None:
            missing.add(spec)
            continue
        key = (page.name, t.protocol, str(t.cell["client"]))
        n, total = totals.get(key, (0, EMPTY))
        totals[key] = (n + 1, add(total, coverage(page, rows_of(t.id or 0))))
    rows = [CoverageRow(p, proto, c, n, cov) for (p, proto, c), (n, cov) in sorted(totals.items())]
    return rows, sorted(missing)


EMPTY = Coverage(0, 0, 0, 0, 0, 0, 0)
