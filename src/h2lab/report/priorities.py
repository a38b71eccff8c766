"""The report's part "Priority signals" (in the Reproducibility section): what each client told
the servers of its requests' priorities, per protocol: its own priority for a request, the RFC
9218 ``priority`` field it sent (HTTP/2 and HTTP/3), and how many requests it changed after
sending them (a PRIORITY_UPDATE frame). Counted by the store (:meth:`Store.priority_signals`)."""

from __future__ import annotations

from h2lab.report import html as h
from h2lab.store import Store

TITLE = "Priority signals"
HEADERS = (
    "client",
    "protocol",
    "client's priority",
    "priority field sent",
    "requests",
    "changed after sending",
)
MAX_ROWS = 60
NOTE = (
    "What each browser asked of the servers, over the ok trials' requests: its own priority "
    "for the request (Chromium: VeryHigh to VeryLow; Firefox: the field it sent), the RFC 9218 "
    "priority header field it sent with it (HTTP/2 and HTTP/3; none over HTTP/1.1), and how "
    "many it reprioritized afterwards (Chromium sends the change as a PRIORITY_UPDATE frame). "
    'What each server did with them: docs/servers.md, "RFC 9218".'
)


def render(rows: list[tuple[str, str, str, str, int, int]]) -> str:
    """The part's HTML; nothing when no client reported a priority."""
    if not rows:
        return ""
    shown = rows[:MAX_ROWS]
    table = h.table(
        HEADERS,
        [
            (c, p, prio or "-", field or "(none)", str(n), str(u))
            for c, p, prio, field, n, u in shown
        ],
        numeric={4, 5},
    )
    more = (
        f" The {MAX_ROWS} most frequent of {len(rows)} combinations are shown."
        if len(rows) > MAX_ROWS
        else ""
    )
    return h.h3(TITLE) + h.note(NOTE + more) + table


def priorities_part(store: Store) -> str:
    return render(store.priority_signals())
