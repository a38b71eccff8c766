"""What a Firefox page load measured, from its WebDriver BiDi events and its page timing: the
browser log (resources, HAR, failures) and the metrics. Pure: no browser, no clock, no I/O.

Network events (W3C WebDriver BiDi, "The network Module"): ``network.beforeRequestSent``,
``network.responseStarted``, ``network.responseCompleted`` and ``network.fetchError`` become
:mod:`h2lab.clients.browser.log` events (:class:`BidiNetwork`). Firefox fills each request's
``timings`` with wall-clock times in ms since the epoch (``timeOrigin`` 0): ``requestTime``
(the request made), ``dnsStart``/``dnsEnd``, ``connectStart``/``connectEnd`` (TCP and TLS),
``tlsStart``, ``requestStart`` (sent), ``responseStart`` (first byte), ``responseEnd`` (last
byte); a phase that did not happen (the set-up of a reused connection) is 0. The log keeps them
in seconds, on the wall clock the HAR's dates need; the page's ``performance.timeOrigin``
(same clock) is its time zero.
Requests for ``data:``, ``blob:`` and ``about:`` URLs never reach the network and are left
out. BiDi names no connection: the resources' ``connection`` is empty (the lab counts
connections on the link, ``tcp_connections``).

Metrics: ``ttfb_ms`` = responseStart, ``dcl_ms`` = domContentLoadedEventStart, ``plt_ms`` =
loadEventEnd, ``connect_ms`` = connectEnd, ``fcp_ms`` (paint timing), ``lcp_ms`` (Largest
Contentful Paint, on by pref), all from navigation start; ``speed_index_ms``,
``visual_complete_ms`` and the visual milestones (first and last visual change, visually
85/95/99% complete) from the compositor's frames (:mod:`~h2lab.clients.browser.firefox.frames`), by
:mod:`h2lab.metrics.visual` as Chromium's (option ``speed_index=wpt`` too); ``fully_loaded_ms``
with option ``idle``; ``cls`` when the page reports layout shifts (Firefox ESR does not: None).
``tbt_ms`` is None: Firefox has no trace of the main thread's tasks that h2lab reads, and no
Long Tasks API. Firefox has no ``first-paint`` entry and no Element Timing; the HAR's page keeps
every LCP candidate's paint (``_lcp_candidates_ms``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from h2lab.clients.browser import log as browser_log
from h2lab.clients.browser.log import NetworkLog
from h2lab.clients.browser.result import Analysis, assemble, cls, visual_fields
from h2lab.metrics.visual import H2LAB, Frame, VisualMetrics, visual_metrics

CANCELLED = frozenset({"NS_BINDING_ABORTED"})
"""Firefox's errorText for a request the page (or a navigation) cancelled itself."""
NETWORK_SCHEMES = ("http://", "https://")


def _headers(items: Any) -> dict[str, str]:
    """BiDi headers (``[{"name", "value": {"type": "string", "value"}}]``) as a dict."""
    out = {}
    for h in items or ():
        value = h.get("value", {})
        out[str(h.get("name", ""))] = str(value.get("value", "")) if isinstance(value, dict) else ""
    return out


def _s(ms: Any) -> float | None:
    """A BiDi timing (ms since the epoch; 0: not reached) in seconds."""
    return float(ms) / 1000 if isinstance(ms, int | float) and ms > 0 else None


def phases(timings: Mapping[str, Any]) -> browser_log.Phases:
    """A request's BiDi ``timings`` as its :class:`~browser_log.Phases` (a span whose ends
    are not both reached did not happen: -1)."""

    def span(start: str, end: str) -> float:
        a, b = _s(timings.get(start)), _s(timings.get(end))
        return round((b - a) * 1000, 3) if a is not None and b is not None and b >= a else -1.0

    sent = _s(timings.get("requestStart"))
    return browser_log.Phases(
        dns_ms=span("dnsStart", "dnsEnd"),
        connect_ms=span("connectStart", "connectEnd"),
        ssl_ms=span("tlsStart", "connectEnd"),
        send_start_s=sent,
        send_end_s=sent,
    )


class BidiNetwork:
    """Turns one load's BiDi network events into :class:`~h2lab.clients.browser.log.NetworkLog`
    events, remembering what a redirect needs (the status and protocol of the response that
    ended the previous request under the same id)."""

    def __init__(self, log: NetworkLog | None = None) -> None:
        self.log = log if log is not None else NetworkLog()
        self._last_response: dict[str, tuple[int | None, str | None]] = {}

    def add(self, method: str, params: Mapping[str, Any]) -> None:
        """Take one event (others than the four network events are ignored)."""
        request = params.get("request") or {}
        rid, url = str(request.get("request", "")), str(request.get("url", ""))
        if not url.startswith(NETWORK_SCHEMES):
            return
        timings = request.get("timings") or {}
        time_s = _s(params.get("timestamp")) or 0.0
        for event in self._events(method, params, rid, url, timings, time_s):
            self.log.add(event)

    def _events(
        self,
        method: str,
        p: Mapping[str, Any],
        rid: str,
        url: str,
        timings: Mapping[str, Any],
        time_s: float,
    ) -> list[browser_log.RequestEvent]:
        if method == "network.beforeRequestSent":
            redirect = None
            if int(p.get("redirectCount", 0)) > 0 and rid in self.log.requests:
                status, protocol = self._last_response.get(rid, (None, None))
                redirect = browser_log.Redirect(status, protocol, "")
            start = _s(timings.get("requestTime")) or time_s
            headers = _headers(request_headers(p))
            verb = str((p.get("request") or {}).get("method") or "GET")
            return [browser_log.RequestSent(rid, url, start, None, headers, redirect, method=verb)]
        if method == "network.responseStarted":
            return [self._started(rid, p, timings)]
        if method == "network.responseCompleted":
            resp = p.get("response") or {}
            events: list[browser_log.RequestEvent] = [self._started(rid, p, timings)]
            if resp.get("headersSize"):
                events.append(browser_log.ResponseHeaderBytes(rid, int(resp["headersSize"])))
            events.append(browser_log.DataReceived(rid, int(resp.get("bodySize") or 0)))
            end = _s(timings.get("responseEnd")) or time_s
            events.append(
                browser_log.RequestFinished(rid, end, int(resp.get("bytesReceived") or 0))
            )
            return events
        if method == "network.fetchError":
            error = str(p.get("errorText") or "failed")
            return [browser_log.RequestFailed(rid, time_s, error, cancelled=error in CANCELLED)]
        return []

    def _started(
        self, rid: str, p: Mapping[str, Any], timings: Mapping[str, Any]
    ) -> browser_log.ResponseStarted:
        resp = p.get("response") or {}
        status = resp.get("status")
        protocol = resp.get("protocol")
        self._last_response[rid] = (status, protocol)
        r = self.log.requests.get(rid)
        if r is not None:
            # the request's priority is the RFC 9218 header Firefox added (``u=4, i``)
            r.priority = _headers(request_headers(p)).get("Priority", r.priority)
            r.priority_field = _headers(request_headers(p)).get("Priority", r.priority_field)
        return browser_log.ResponseStarted(
            request_id=rid,
            status=status,
            protocol=protocol,
            connection="",
            remote=None,
            from_cache=bool(resp.get("fromCache")),
            headers=_headers(resp.get("headers")),
            ttfb_s=_s(timings.get("responseStart")),
            status_text=str(resp.get("statusText") or ""),
            mime_type=resp.get("mimeType"),
            phases=phases(timings),
        )


def request_headers(params: Mapping[str, Any]) -> Any:
    return (params.get("request") or {}).get("headers")


# ------------------------------------------------------------------------------ the load


@dataclass
class RawLoad:
    """What a page load leaves for the analysis."""

    timing: dict[str, Any]
    """the page's navigation and paint timing (ms from navigation start), its Largest
    Contentful Paint candidates and its ``timeOrigin`` (ms since the epoch), as the after-load
    script read them"""
    log: NetworkLog
    frames: list[Frame] = field(default_factory=list)
    """the compositor's frames, timed from navigation start
    (:mod:`~h2lab.clients.browser.firefox.frames`)"""


def _ms(v: Any) -> float | None:
    return None if not isinstance(v, int | float) or v <= 0 else round(float(v), 3)


def page_metrics(timing: Mapping[str, Any], visual: VisualMetrics) -> dict[str, float | None]:
    """The page's metrics in ms from navigation start (None: not reported, or not positive)."""
    return {
        "connect_ms": _ms(timing.get("connectEnd")),
        "ttfb_ms": _ms(timing.get("responseStart")),
        "dcl_ms": _ms(timing.get("dcl")),
        "plt_ms": _ms(timing.get("loadEventEnd")),
        "fcp_ms": _ms(timing.get("fcp")),
        "lcp_ms": _ms(timing.get("lcp")),
        "cls": cls(timing),
        **visual_fields(visual),
    }


def lcp_candidates(timing: Mapping[str, Any]) -> dict[str, float]:
    """Each Largest Contentful Paint candidate's URL (or element id) -> its paint, ms: the
    paint marks Firefox reports itself (it has no Element Timing)."""
    out = {}
    for item in timing.get("lcps") or ():
        if isinstance(item, list) and len(item) == 2 and _ms(item[1]) is not None:
            out[str(item[0])] = float(item[1])
    return out


def timing_log(timing: Mapping[str, Any]) -> NetworkLog:
    """The load's requests from the page's own Resource Timing (option ``network=0``, no BiDi
    network events): the document and every resource it fetched, each with its start, first
    byte, end, body bytes, protocol and status. What the page may not see is 0 or empty, and
    left out: cross-origin resources without ``Timing-Allow-Origin`` have no first byte, size,
    protocol or status; no request is marked failed, none has headers. A URL's first entry
    is its fetch: a stylesheet the preload scanner fetched has a second entry when the parser
    takes it from the memory cache (``transferSize`` 0, ending when it was applied)."""
    log = NetworkLog()
    origin = timing.get("timeOrigin")
    if not isinstance(origin, int | float):
        return log

    def at(ms: Any) -> float | None:
        """Resource Timing's ms from the time origin (0: not seen) as seconds since the epoch."""
        return (origin + ms) / 1000 if isinstance(ms, int | float) and ms > 0 else None

    seen: set[str] = set()
    for n, entry in enumerate(timing.get("resources") or ()):
        if not isinstance(entry, list) or len(entry) != 7 or not isinstance(entry[0], str):
            continue
        url, start, first, end, size, protocol, status = entry
        if not url.startswith(NETWORK_SCHEMES) or not isinstance(end, int | float) or end <= 0:
            continue
        if url in seen:
            continue
        seen.add(url)
        rid = f"rt-{n}"
        start_s = at(start) or origin / 1000
        for event in (
            browser_log.RequestSent(rid, url, start_s, None, {}, None),
            browser_log.ResponseStarted(
                request_id=rid,
                status=int(status) or None,
                protocol=str(protocol) or None,
                connection="",
                remote=None,
                from_cache=False,
                headers={},
                ttfb_s=at(first),
            ),
            browser_log.DataReceived(rid, int(size or 0)),
            browser_log.RequestFinished(rid, at(end) or start_s, int(size or 0)),
        ):
            log.add(event)
    return log


def analyse(
    raw: RawLoad, url: str, *, network: bool = True, mode: str = H2LAB, idle: bool = False
) -> Analysis:
    """Metrics, resources and HAR of a load of ``url`` (TrialFailed: it fetched nothing):
    the requests from BiDi's network events, or (``network`` False) from the page's Resource
    Timing (:func:`timing_log`); ``mode``: how SpeedIndex is computed; ``idle``: the load
    waited for network silence."""
    origin = raw.timing.get("timeOrigin")
    t0_s = float(origin) / 1000 if isinstance(origin, int | float) else None
    visual = visual_metrics(raw.frames, mode)
    metrics = page_metrics(raw.timing, visual)
    log = raw.log if network else timing_log(raw.timing)
    analysis = assemble("firefox", log, url, t0_s, metrics, visual, raw.frames, idle=idle)
    analysis.har["log"]["pages"][0]["_lcp_candidates_ms"] = lcp_candidates(raw.timing)
    return analysis
