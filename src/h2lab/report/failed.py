"""The report's part "Requests that failed in the browser" (in the Reproducibility section):
:mod:`h2lab.analysis.failed_requests` rendered, with the resources read from the store for the
trials that had a failed request only (a big store of clean trials reads none)."""

from __future__ import annotations

from h2lab.analysis.failed_requests import FailedRequests, failed_requests, failure_ids
from h2lab.report import html as h
from h2lab.report.model import factor_texts
from h2lab.spec.factors import report_columns
from h2lab.store import Store
from h2lab.store.frame import TrialsIn

TITLE = "Requests that failed in the browser"
NONE_FAILED = "No request failed in the browser's ok trials."


def _summary(f: FailedRequests) -> str:
    return (
        f"{f.with_failed} of {f.trials} ok browser trials (warm-ups not counted) had a request "
        f"fail in the browser, {f.failed} failed requests in all: blocked (ORB, CSP), dropped "
        "connections, hosts not recorded. The page did not cancel them; the trials stayed ok "
        '(fail_on = "document") and their timings are in the statistics.'
    )


def _cell_table(f: FailedRequests) -> str:
    headers = (
        *report_columns(),
        "protocol",
        "ok trials",
        "trials with a failed request",
        "failed requests",
    )
    rows = [
        (*factor_texts(r.cell), r.protocol, str(r.ok), str(r.with_failed), str(r.failed))
        for r in f.rows
    ]
    first = len(headers) - 3
    return h.table(headers, rows, numeric={first, first + 1, first + 2})


def _top_table(f: FailedRequests) -> str:
    rows = [(p.url, p.error, str(p.count)) for p in f.top]
    return h.note(
        f"The {len(f.top)} most frequent failing (URL, error) pairs over all those trials:"
    ) + h.table(("URL", "error", "count"), rows, numeric={2})


def render(f: FailedRequests) -> str:
    """The part's HTML: nothing without a browser trial, one line when none had a request
    fail, else the summary, the table per cell and protocol and the top pairs."""
    if not f.trials:
        return ""
    if not f.failed:
        return h.h3(TITLE) + h.note(NONE_FAILED)
    parts = [h.h3(TITLE), h.note(_summary(f)), _cell_table(f)]
    if f.top:
        parts.append(_top_table(f))
    return "".join(parts)


def failed_part(store: Store, trials: TrialsIn) -> str:
    """Count the failed requests of ``trials`` and render them; reads ``store.resources`` of
    the trials with ``failed_requests`` > 0 only."""
    resources = {i: store.resources(i) for i in failure_ids(trials)}
    return render(failed_requests(trials, resources))
