"""A browser's network events of one page load -> resource rows, a HAR, and what failed.

Pure: no I/O, no clock, no browser. A browser's adapter turns its own events (Chromium's
DevTools ``Network.*``: :func:`h2lab.clients.browser.chromium.tab.network_event`) into the events
below (each a :class:`RequestEvent`) and adds them to a :class:`NetworkLog` in the order they
came. Times are seconds on the browser's own clock (for Chromium, the monotonic clock of its
trace events; for Firefox, the wall clock); an event for a request the log never saw sent is
ignored. A request sent with its wall-clock time (:attr:`RequestSent.wall_s`) anchors the log's
clock to the wall clock, for the HAR's dates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from h2lab import har as harlib
from h2lab.errors import TrialFailed
from h2lab.pages import Page
from h2lab.results import ResourceTiming

# ------------------------------------------------------------------------------ the events


@dataclass(frozen=True)
class Redirect:
    """The redirect response that ended the previous request under the same id."""

    status: int | None
    protocol: str | None
    """the protocol it came over, as the browser names it (``h2``, ``http/1.1``)"""
    connection: str
    """the browser's id of the connection that carried it"""


@dataclass(frozen=True)
class RequestEvent:
    """Something happened to one request of the load."""

    request_id: str
    """the browser's id of the request, unique within the load (a redirect keeps it)"""


@dataclass(frozen=True)
class RequestSent(RequestEvent):
    """A request went out: a new one, or the next of a redirect chain under the same id."""

    url: str
    time_s: float
    """when it was sent"""
    priority: str | None = None
    """the browser's priority for it (Chromium: VeryHigh..VeryLow)"""
    headers: Mapping[str, str] = field(default_factory=dict)
    """its headers as the browser reports them"""
    redirect: Redirect | None = None
    """the redirect that led here: the previous request of the id ends at ``time_s`` with it"""
    method: str = "GET"
    wall_s: float | None = None
    """``time_s`` on the wall clock, seconds since the epoch (Chromium's ``wallTime``); None:
    the browser's clock is the wall clock"""


@dataclass(frozen=True)
class Phases:
    """Where a request's time went before its response, as the browser reports it (ms; -1:
    did not apply, such as the connection set-up of a request on a reused connection)."""

    dns_ms: float = harlib.NOT_APPLICABLE
    connect_ms: float = harlib.NOT_APPLICABLE
    """the connection's set-up, TCP and TLS (HAR's ``connect`` holds ``ssl``)"""
    ssl_ms: float = harlib.NOT_APPLICABLE
    """the TLS handshake"""
    send_start_s: float | None = None
    """when the request began to go out (None: not told)"""
    send_end_s: float | None = None
    """when it was out (None: not told)"""


@dataclass(frozen=True)
class ResponseStarted(RequestEvent):
    """A request's response headers arrived."""

    status: int | None
    protocol: str | None
    """the protocol it came over, as the browser names it (``h2``, ``http/1.1``)"""
    connection: str
    """the browser's id of the connection that carried it"""
    remote: str | None
    """the server's address"""
    from_cache: bool
    """served from the browser's disk or prefetch cache, not the network"""
    headers: Mapping[str, str]
    """the response's headers as the browser reports them"""
    ttfb_s: float | None
    """when its headers had arrived (None: the browser did not say)"""
    status_text: str = ""
    """the reason phrase (HTTP/2 and HTTP/3 have none)"""
    mime_type: str | None = None
    """the content type the browser settled on (None: the ``Content-Type`` header's)"""
    phases: Phases | None = None
    """its DNS, connect, TLS and send times (None: the browser did not say)"""


@dataclass(frozen=True)
class PrioritySignals(RequestEvent):
    """What the browser told the server of a request's priority (RFC 9218): the ``priority``
    field it sent with the request, or a later change (Chromium sends it as PRIORITY_UPDATE)."""

    field: str | None = None
    """the request's ``priority`` header field as sent (``u=0, i``)"""
    update: str | None = None
    """the priority the browser changed it to after sending it (Chromium: VeryHigh..VeryLow)"""


@dataclass(frozen=True)
class ResponseHeaderBytes(RequestEvent):
    """The size of a response's header block as received (HTTP/1.1 text)."""

    header_bytes: int


@dataclass(frozen=True)
class ServedFromCache(RequestEvent):
    """A request was answered from the browser's cache."""


@dataclass(frozen=True)
class DataReceived(RequestEvent):
    """A piece of a response's body arrived."""

    size_bytes: int
    """body bytes, decoded"""


@dataclass(frozen=True)
class BodyRead(RequestEvent):
    """A finished response's body, as the browser kept it (option ``har_bodies``)."""

    text: str
    base64: bool
    """``text`` is the body in base64 (binary); else the body decoded as text"""


@dataclass(frozen=True)
class RequestFinished(RequestEvent):
    """A request's response is complete."""

    time_s: float
    encoded_bytes: int
    """what the response took on the wire, by the browser's count (HAR ``_transferSize``)"""


@dataclass(frozen=True)
class RequestFailed(RequestEvent):
    """A request ended without its response."""

    time_s: float
    error: str
    """the browser's reason (Chromium: its errorText, e.g. ``net::ERR_CONNECTION_RESET``)"""
    cancelled: bool = False
    """the page (or a navigation) cancelled it itself: no failure of the network or server"""


# ------------------------------------------------------------------------------- the log


@dataclass
class Request:
    """One request of a load, as its events so far tell it."""

    url: str
    start_s: float
    priority: str | None
    protocol: str | None = None
    connection: str | None = None
    priority_field: str | None = None
    """the RFC 9218 ``priority`` field it was sent with (:class:`PrioritySignals`)"""
    priority_update: str | None = None
    """the priority it was changed to after it was sent (:class:`PrioritySignals`)"""
    ttfb_s: float | None = None
    end_s: float | None = None
    body_bytes: int = 0
    encoded_bytes: int | None = None
    header_bytes: int | None = None
    status: int | None = None
    from_cache: bool = False
    failed: str | None = None
    """the failure's reason (:attr:`RequestFailed.error`); None while it has not failed"""
    cancelled: bool = False
    """the page cancelled it (:attr:`RequestFailed.cancelled`)"""
    remote: str | None = None
    request_headers: dict[str, str] = field(default_factory=dict)
    response_headers: dict[str, str] = field(default_factory=dict)
    method: str = "GET"
    status_text: str = ""
    mime_type: str | None = None
    phases: Phases | None = None
    redirect_url: str = ""
    step: int | None = None
    """the journey step that began it (0: the measured load); None outside a journey"""
    """where a redirect sent it (the next request under its id)"""
    body: BodyRead | None = None


class NetworkLog:
    """The requests of one page load, from their :class:`RequestEvent` s. An adapter may add
    events on one thread while another reads the log: every reader goes by
    :meth:`snapshot`."""

    def __init__(self) -> None:
        self.requests: dict[str, Request] = {}
        """by request id; a redirect's earlier requests under ``<id>#<n>``"""
        self.wall_offset_s = 0.0
        """what turns the browser's clock into seconds since the epoch (added), from the first
        request sent with its wall-clock time"""
        self._anchored = False
        self._early: dict[str, list[PrioritySignals]] = {}
        """priority signals that came before their request's :class:`RequestSent` (Chromium
        may send ``requestWillBeSentExtraInfo`` first), taken when it comes"""

    def add(self, event: RequestEvent) -> None:
        """Take one event into the log (one for a request never sent is ignored)."""
        if isinstance(event, RequestSent):
            self._sent(event)
            return
        r = self.requests.get(event.request_id)
        if r is None:
            if isinstance(event, PrioritySignals):
                self._early.setdefault(event.request_id, []).append(event)
            return
        if isinstance(event, ResponseStarted):
            r.protocol = event.protocol
            r.connection = event.connection
            r.status = event.status
            r.remote = event.remote
            r.from_cache = event.from_cache
            r.response_headers = dict(event.headers)
            r.status_text = event.status_text
            r.mime_type = event.mime_type
            r.phases = event.phases or r.phases
            if event.ttfb_s is not None:
                r.ttfb_s = event.ttfb_s
        elif isinstance(event, BodyRead):
            r.body = event
        elif isinstance(event, PrioritySignals):
            r.priority_field = event.field if event.field is not None else r.priority_field
            r.priority_update = event.update if event.update is not None else r.priority_update
        elif isinstance(event, ResponseHeaderBytes):
            r.header_bytes = event.header_bytes
        elif isinstance(event, ServedFromCache):
            r.from_cache = True
        elif isinstance(event, DataReceived):
            r.body_bytes += event.size_bytes
        elif isinstance(event, RequestFinished):
            r.end_s = event.time_s
            r.encoded_bytes = event.encoded_bytes
        elif isinstance(event, RequestFailed):
            r.end_s = event.time_s
            r.failed = event.error
            r.cancelled = event.cancelled

    def _sent(self, event: RequestSent) -> None:
        rid = event.request_id
        if event.wall_s is not None and not self._anchored:
            self.wall_offset_s, self._anchored = event.wall_s - event.time_s, True
        redirected = self.requests.get(rid)
        if redirected is not None and event.redirect is not None:
            # the same request id goes on to the Location: keep the 3xx as its own row
            redirected.status = event.redirect.status
            redirected.protocol = event.redirect.protocol
            redirected.connection = event.redirect.connection
            redirected.end_s = event.time_s
            redirected.redirect_url = event.url
            self.requests[f"{rid}#{len(self.requests)}"] = redirected
        self.requests[rid] = Request(
            url=event.url,
            start_s=event.time_s,
            priority=event.priority,
            request_headers=dict(event.headers),
            method=event.method,
        )
        for early in self._early.pop(rid, []):
            self.add(early)

    def snapshot(self) -> list[Request]:
        """The requests so far. The CDP reader thread adds requests while a load is measured:
        iterating ``requests`` itself then raised "dictionary changed size during iteration"
        (yahoo, in the failed-request check); ``list()`` copies it under the GIL."""
        return list(self.requests.values())

    def unfinished(self) -> list[Request]:
        """Requests with neither their end nor a failure yet, oldest first."""
        return sorted(
            (r for r in self.snapshot() if r.end_s is None and not r.failed),
            key=lambda r: r.start_s,
        )

    def finished(self) -> list[Request]:
        return sorted(
            (r for r in self.snapshot() if r.end_s is not None and not r.failed),
            key=lambda r: r.start_s,
        )

    def failed(self) -> list[Request]:
        """Requests that failed and that the page did not cancel itself, oldest first."""
        return sorted(
            (r for r in self.snapshot() if r.failed and not r.cancelled), key=lambda r: r.start_s
        )

    def resources(self, t0_s: float) -> tuple[ResourceTiming, ...]:
        """One row per finished request, then one per failed one (with its ``error``), times
        in ms from ``t0_s``."""

        def ms(t: float | None) -> float | None:
            return None if t is None else round((t - t0_s) * 1000, 3)

        rows = []
        for r in (*self.finished(), *self.failed()):
            rows.append(
                ResourceTiming(
                    url=r.url,
                    origin=host_of(r.url),
                    start_ms=ms(r.start_s) or 0.0,
                    ttfb_ms=ms(r.ttfb_s),
                    end_ms=ms(r.end_s) or ms(r.start_s) or 0.0,
                    bytes=r.body_bytes,
                    protocol=r.protocol or "",
                    connection=r.connection or "",
                    priority=r.priority,
                    status=r.status,
                    error=r.failed,
                    priority_field=r.priority_field,
                    priority_update=r.priority_update,
                    from_cache=r.from_cache,
                    step=r.step,
                )
            )
        return tuple(rows)

    def har(
        self,
        page_url: str,
        t0_s: float,
        metrics: Mapping[str, float | None],
        *,
        every: bool = False,
    ) -> dict[str, Any]:
        """A HAR 1.2 log: one page started at ``t0_s`` (the browser's clock), its
        ``onContentLoad``/``onLoad`` the metrics ``dcl_ms``/``plt_ms`` and every metric an
        extra (``_plt_ms``); one entry per finished request, with the browser's protocol,
        connection id, priority and header sizes, and the failed ones with ``_error``, the
        browser's reason. With ``every``, the unfinished and cancelled requests too (a failed
        load's log); ``_error`` is ``unfinished`` for one still waiting when the load ended."""
        chosen = (
            sorted(self.snapshot(), key=lambda r: r.start_s)
            if every
            else sorted((*self.finished(), *self.failed()), key=lambda r: r.start_s)
        )
        page = harlib.page(
            page_url,
            t0_s + self.wall_offset_s,
            metrics.get("dcl_ms"),
            metrics.get("plt_ms"),
            metrics,
        )
        return harlib.log([_har_entry(r, self.wall_offset_s, every) for r in chosen], [page])


def host_of(url: str) -> str:
    """The host of a URL as the browser reported it; empty if it has none or does not split."""
    try:
        return urlsplit(url).hostname or ""
    except ValueError:  # "Invalid IPv6 URL": a browser never sends one, a fuzzer does
        return ""


def har_timings(r: Request) -> dict[str, float]:
    """A request's HAR ``timings`` (ms): ``blocked`` (queued and stalled: from its start to
    its send, less DNS and connect), ``dns``, ``connect`` (``ssl`` in it), ``send``, ``wait``
    (to the response's headers), ``receive`` (to its end), as the browser's :class:`Phases`
    tell them; without them, ``blocked``, ``dns``, ``connect`` and ``ssl`` are -1 and
    ``wait`` runs from the start. A failed request waited until it failed; an unfinished
    one's times end at its last event."""
    end = r.end_s if r.end_s is not None else (r.ttfb_s if r.ttfb_s is not None else r.start_s)
    first = _within(r.ttfb_s, r.start_s, end) if r.ttfb_s is not None else end
    p = r.phases
    if p is None:
        send_start = send_end = r.start_s
        blocked, dns, connect, ssl = (harlib.NOT_APPLICABLE,) * 4
    else:
        send_start = _within(p.send_start_s, r.start_s, first)
        send_end = _within(p.send_end_s, send_start, first)
        dns, connect, ssl = p.dns_ms, p.connect_ms, p.ssl_ms
        before_ms = (send_start - r.start_s) * 1000
        blocked = max(0.0, before_ms - max(dns, 0.0) - max(connect, 0.0))
    ms = {
        "blocked": blocked,
        "dns": dns,
        "connect": connect,
        "ssl": ssl,
        "send": (send_end - send_start) * 1000,
        "wait": (first - send_end) * 1000,
        "receive": (end - first) * 1000,
    }
    return {k: round(v, 3) for k, v in ms.items()}


def _within(t: float | None, low: float, high: float) -> float:
    """``t`` held between ``low`` and ``high`` (``low`` when None)."""
    return low if t is None else min(max(t, low), max(low, high))


def _har_entry(r: Request, wall_offset_s: float, every: bool) -> dict[str, Any]:
    error = r.failed or ("unfinished" if r.end_s is None else None)
    timings = har_timings(r)
    address = harlib.ip_address(r.remote)
    return {
        "pageref": harlib.PAGE_ID,
        "startedDateTime": harlib.iso_date(r.start_s + wall_offset_s),
        "time": harlib.total_ms(timings),
        "request": {
            "method": r.method,
            "url": r.url,
            "httpVersion": r.protocol or "",
            "cookies": harlib.request_cookies(r.request_headers),
            "headers": harlib.name_values(r.request_headers),
            "queryString": harlib.query_string(r.url),
            "headersSize": -1,
            "bodySize": 0 if r.method in ("GET", "HEAD") else -1,
        },
        "response": {
            "status": r.status or 0,
            "statusText": r.status_text,
            "httpVersion": r.protocol or "",
            "cookies": harlib.response_cookies(r.response_headers),
            "headers": harlib.name_values(r.response_headers),
            "content": _content(r),
            "redirectURL": r.redirect_url or harlib.header(r.response_headers, "location") or "",
            "headersSize": r.header_bytes if r.header_bytes is not None else -1,
            "bodySize": r.body_bytes,
            "_transferSize": r.encoded_bytes,
        },
        "cache": {},
        "timings": timings,
        "connection": r.connection or "",
        **({"serverIPAddress": address} if address else {}),
        "_priority": r.priority,
        **({"_priorityField": r.priority_field} if r.priority_field is not None else {}),
        **({"_priorityUpdate": r.priority_update} if r.priority_update is not None else {}),
        "_fromCache": r.from_cache,
        **({"_step": r.step} if r.step is not None else {}),
        **({"_error": error} if (every or r.failed) and error else {}),
    }


def _content(r: Request) -> dict[str, Any]:
    """HAR's ``response.content``: the body's size and type, and with option ``har_bodies``
    the body itself (``encoding`` base64 for a binary one)."""
    mime = harlib.header(r.response_headers, "content-type") or r.mime_type or ""
    content: dict[str, Any] = {"size": r.body_bytes, "mimeType": mime}
    if r.body is not None:
        content["text"] = r.body.text
        if r.body.base64:
            content["encoding"] = "base64"
    return content


def failed_load_har(log: NetworkLog, page_url: str) -> dict[str, Any] | None:
    """A failed load's every request (failed and unfinished ones with ``_error``) as a HAR,
    times from the first request: what an incomplete or timed-out load was waiting for (None:
    no request was made)."""
    requests = log.snapshot()
    if not requests:
        return None
    return log.har(page_url, min(r.start_s for r in requests), {}, every=True)


# ------------------------------------------------------------------- what a failure names

UNFINISHED_NAMED = 3
"""How many unfinished requests a timeout's line names."""


def describe_unfinished(log: NetworkLog) -> str:
    """``; 2 of 80 requests unfinished: https://a/x.js (12,000 B received), ...``: what a page
    that never fired its load event was still waiting for ('' when nothing was)."""
    waiting = log.unfinished()
    if not waiting:
        return ""
    named = ", ".join(f"{r.url} ({r.body_bytes:,} B received)" for r in waiting[:UNFINISHED_NAMED])
    return f"; {len(waiting)} of {len(log.requests)} requests unfinished: {named}{_more(waiting)}"


def check_complete(log: NetworkLog, page: Page, url: str, fail_on: str, loaded: bool) -> None:
    """TrialFailed if the load of ``url`` failed: its document failed (``fail_on``
    "document"), or any request for the page's own resources failed (``"any"``)."""
    failed = failed_page_requests(log, page)
    if fail_on != "any":
        failed = [r for r in failed if r.url == url]
    if failed:
        how = "loaded incomplete" if loaded else "failed to load"
        raise TrialFailed(f"{url} {how}: {describe_failed(failed, log)}")


def failed_page_requests(log: NetworkLog, page: Page) -> list[Request]:
    """Requests for the page's own resources (what its servers serve) that failed: a network
    error such as a connection timeout on a slow link. The load event still fires, without
    them, so the page's times are those of a smaller page and the trial fails instead. A
    request the page cancelled (:attr:`RequestFailed.cancelled`) or one for a URL the page does
    not have (a replayed page asking a host it did not capture) is the page's doing and counts
    for nothing."""
    return sorted(
        (r for r in log.snapshot() if r.failed and not r.cancelled and page.match("GET", r.url)),
        key=lambda r: r.start_s,
    )


def describe_failed(failed: Sequence[Request], log: NetworkLog) -> str:
    """``3 of 31 requests for the page's resources failed: https://a/1.png (net::ERR_X), ...``"""
    named = ", ".join(f"{r.url} ({r.failed})" for r in failed[:UNFINISHED_NAMED])
    return (
        f"{len(failed)} of {len(log.requests)} requests for the page's resources failed: "
        f"{named}{_more(failed)}"
    )


def _more(named: Sequence[Request]) -> str:
    """``, and 2 more`` for the requests past the first :data:`UNFINISHED_NAMED`."""
    return f", and {len(named) - UNFINISHED_NAMED} more" if len(named) > UNFINISHED_NAMED else ""
