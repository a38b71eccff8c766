"""The report's part "Replay coverage" (in the Reproducibility section):
:mod:`h2lab.analysis.coverage` per replayed page, protocol and client, summed over the ok
browser trials. Pages are found by the id each trial stored (``page_digest``) in this
machine's pages folder; a page not there is named, not counted."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np

from h2lab.analysis.coverage import CoverageRow, coverage_rows
from h2lab.errors import SpecError
from h2lab.pages.manifest import Page, find_page, load_page
from h2lab.report import html as h
from h2lab.store import Store
from h2lab.store.frame import TrialFrame, TrialsIn

TITLE = "Replay coverage"
HEADERS = (
    "page",
    "protocol",
    "client",
    "ok trials",
    "requests",
    "answered exact",
    "by closest query",
    "by path",
    "not recorded (404)",
    "failed in the browser",
    "answered (%)",
)


def _page(digest: str) -> Page | None:
    folder = find_page(digest)
    if folder is None:
        return None
    try:
        return load_page(folder)
    except SpecError:
        return None


def _row(r: CoverageRow) -> tuple[str, ...]:
    c = r.total
    share = "–" if not c.requests else f"{100 * c.answered / c.requests:.1f}"
    numbers = (r.trials, c.requests, c.exact, c.by_query, c.by_path, c.not_recorded, c.failed)
    return (r.page, r.protocol, r.client, *(str(n) for n in numbers), share)


def render(rows: Sequence[CoverageRow], missing: Sequence[str]) -> str:
    """The part's HTML: nothing when no replayed page was loaded in a browser."""
    if not rows and not missing:
        return ""
    parts = [
        h.h3(TITLE),
        h.note(
            "Every network request of the ok browser trials of replayed pages, as the replay "
            "answered it: exact (same method, host and target), by closest query (of several "
            "recorded for that method, host and path, the one sharing the longest prefix with "
            "the request's query), by path (the only one recorded for that host and path), not "
            "recorded (404), or failed in the browser (blocked, a host the capture does not "
            "hold, a dropped connection). Summed over the trials."
        ),
        h.table(HEADERS, [_row(r) for r in rows], numeric=set(range(3, len(HEADERS)))),
    ]
    if missing:
        parts.append(h.note(f"Not on this machine, so not counted: {', '.join(missing)}."))
    return "".join(parts)


def replayed_ids(trials: TrialFrame) -> list[int]:
    """The trials :func:`coverage_rows` counts (the latest ok, non-warm-up browser trials of
    pages that are not synthetic), read in full from the store: a store of synthetic pages
    reads none."""
    ok = trials.latest_ok()
    replayed = np.array([not str(c["page"]).startswith("synthetic:") for c in ok.cells] + [0])
    wanted = (
        replayed[:-1].astype(bool)[ok.cell]
        & (ok.number("warmup") == 0)
        & ~np.isnan(ok.number("failed_requests"))
    )
    return [int(i) for i in ok.number("id")[wanted].tolist()]


def coverage_part(store: Store, trials: TrialsIn) -> str:
    records = store.trials_by_id(replayed_ids(trials)) if isinstance(trials, TrialFrame) else trials
    rows, missing = coverage_rows(records, cache(_page), store.resources)
    return render(rows, missing)
