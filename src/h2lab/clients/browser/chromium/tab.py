"""One trial's tab in Chromium, over the DevTools pipe: made, measured, closed.

A tab is a new browser context (Chromium's off-the-record profile: its own HTTP cache,
cookies, socket pools and HTTP/2 sessions, all dropped when the context closes) with one blank
page, attached by a flat DevTools session with Network and Page events on. Its Network events,
and those of the page's own targets (cross-site iframes, workers), become
:mod:`h2lab.clients.browser.log` events (:func:`network_event`).

The measured load (:func:`measure`): tracing starts; ``Page.navigate``; the load event; with
option ``idle``, network silence; two animation frames and :data:`SCREENSHOT_SETTLE_MS` (the
page's timing read meanwhile); the trace is read back as one stream.
"""

from __future__ import annotations

import base64
import contextlib
import threading
import time
from collections.abc import Mapping
from typing import Any

from h2lab.clients.browser import connection
from h2lab.clients.browser import log as browser_log
from h2lab.clients.browser import pool as browser_pool
from h2lab.clients.browser.chromium.analysis import RawLoad
from h2lab.clients.browser.chromium.cdp import PIPE_CLOSED, CdpError, DevTools, PipeClosed, Reply
from h2lab.clients.browser.load import no_load_event, time_left, wait_network_idle
from h2lab.clients.browser.options import Device
from h2lab.clients.browser.result import LAYOUT_SHIFTS_JS
from h2lab.errors import TrialFailed
from h2lab.har import NOT_APPLICABLE
from h2lab.pages import Page

TAB_TIMEOUT_S = 10.0
"""Longest wait for one step of making or closing a tab (they take 0.01-0.3 s here)."""

# Only what the metrics need: navigationStart (blink.user_timing), the screenshots and, with
# TASKS_CATEGORY, the tasks for TBT (RunTask, with a few other timeline events). Other
# categories multiply the trace's size and its transfer time (devtools.timeline; toplevel, with
# ThreadControllerImpl::RunTask and mojo events): on a 2 s load of a small page the trace was
# 83 kB with these two, 287 kB with TASKS_CATEGORY too (1176 RunTask events), 808 kB with
# toplevel and loading instead.
TRACE_CATEGORIES = (
    "blink.user_timing",
    "disabled-by-default-devtools.screenshot",
)
TASKS_CATEGORY = "disabled-by-default-devtools.timeline"
"""The tasks for TBT (option ``tbt``, on by default): on the demo page it cost plt +0.5-1% and
SpeedIndex +0.3-1.8% in medians (docs/design-notes.md, issue #33)."""

SCREENSHOT_SETTLE_MS = 25
"""After the load event and two animation frames, the time given to the compositor's last
screenshot to reach the trace (it is captured and encoded after the frame is drawn; without
any wait the final frame was sometimes missing and SpeedIndex stopped at the one before). 25 ms
(100 before issue #43). The demo page (h1s, h2s, cable; runs of 30 trials): the last visual
change came 6-36 ms after the load event with 100, 50 and 25 ms alike, so every trial's
post-load frame was in the trace, and the medians of SpeedIndex and visual complete moved less
than 1 % (overhead median 0.27 s at 100 ms, 0.22 s at 50, 0.20 s at 25). A heavy page
(``synthetic:mix``, 229 objects, 7 MB, 12-17 s loads; 20 trials at each): 9-25 ms at 25 ms, 13-30
at 100, SpeedIndex medians within 0.5 %."""

FCP_WAIT_MS = 5000
"""After the load event, how long the first contentful paint is waited for when it has not
come yet: under a CPU quota (``cores=0.25``) a page whose script runs before its first paint
fired load, and its paint was presented only after the trial had read the timing and ended
its trace (FCP and SpeedIndex None). A page that painted before its load event waits nothing;
one that never paints anything contentful waits this long."""

# After the load event: the first contentful paint (up to FCP_WAIT_MS), then two animation
# frames, so the paint the load triggers is traced.
_AFTER_LOAD_JS = (
    """
(settleMs, fcpWaitMs) => new Promise(painted => {
  const done = () => performance.getEntriesByName('first-contentful-paint').length > 0;
  if (done()) return painted();
  const po = new PerformanceObserver(() => { if (done()) { po.disconnect(); painted(); } });
  po.observe({type: 'paint'});
  setTimeout(() => { po.disconnect(); painted(); }, fcpWaitMs);
}).then(() => new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(() =>
  setTimeout(() => {
  const nav = performance.getEntriesByType('navigation')[0] || {};
  const paints = {};
  for (const p of performance.getEntriesByType('paint')) paints[p.name] = p.startTime;
  let lcp = null;
  try {
    const po = new PerformanceObserver(() => {});
    po.observe({type: 'largest-contentful-paint', buffered: true});
    const entries = po.takeRecords();
    if (entries.length) lcp = entries[entries.length - 1].startTime;
    po.disconnect();
  } catch (e) {}
"""
    + LAYOUT_SHIFTS_JS
    + """  const elements = {};
  try {
    const po = new PerformanceObserver(() => {});
    po.observe({type: 'element', buffered: true});
    for (const e of po.takeRecords()) elements[e.identifier] = e.renderTime || e.loadTime;
    po.disconnect();
  } catch (e) {}
  resolve({
    elements: elements,
    connectEnd: nav.connectEnd, responseStart: nav.responseStart,
    dcl: nav.domContentLoadedEventStart,
    loadEventEnd: nav.loadEventEnd, fp: paints['first-paint'],
    fcp: paints['first-contentful-paint'], lcp: lcp, layoutShifts: shifts,
  });
}, settleMs)))))
"""
)

AUTO_ATTACH = {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True}
"""A page's own targets attach paused, so that their Network events are on before they run."""
CHILD_COMMANDS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("Network.enable", {}),
    ("Target.setAutoAttach", AUTO_ATTACH),
    ("Runtime.runIfWaitingForDebugger", {}),
)
"""What a page's child target (cross-site iframe, worker) gets when it attaches."""

# ------------------------------------------------------------- DevTools -> the browser log

CANCELLED_BY_PAGE = "net::ERR_ABORTED"
"""Chromium's errorText for a request the page (or a navigation) cancelled itself."""


def network_event(method: str, p: Mapping[str, Any]) -> browser_log.RequestEvent | None:
    """A DevTools ``Network.*`` event as a browser-log event (None: one the log does not use).
    Timestamps are seconds on the browser's monotonic clock, as the trace's."""
    rid = p.get("requestId", "")
    if method == "Network.requestWillBeSent":
        req = p["request"]
        redirect = None
        if "redirectResponse" in p:
            resp = p["redirectResponse"]
            connection = str(resp.get("connectionId", ""))
            redirect = browser_log.Redirect(resp.get("status"), resp.get("protocol"), connection)
        headers = dict(req.get("headers", {}))
        priority = req.get("initialPriority")
        return browser_log.RequestSent(
            rid,
            req["url"],
            p["timestamp"],
            priority,
            headers,
            redirect,
            method=str(req.get("method", "GET")),
            wall_s=p.get("wallTime"),
        )
    if method == "Network.responseReceived":
        return _response(rid, p["response"])
    if method == "Network.responseReceivedExtraInfo":
        text = p.get("headersText")
        return browser_log.ResponseHeaderBytes(rid, len(text.encode())) if text else None
    if method == "Network.requestWillBeSentExtraInfo":
        field = _header(p.get("headers") or {}, "priority")
        return browser_log.PrioritySignals(rid, field=field) if field is not None else None
    if method == "Network.resourceChangedPriority":
        return browser_log.PrioritySignals(rid, update=p.get("newPriority"))
    if method == "Network.requestServedFromCache":
        return browser_log.ServedFromCache(rid)
    if method == "Network.dataReceived":
        return browser_log.DataReceived(rid, int(p.get("dataLength", 0)))
    if method == "Network.loadingFinished":
        return browser_log.RequestFinished(rid, p["timestamp"], int(p.get("encodedDataLength", 0)))
    if method == "Network.loadingFailed":
        error = p.get("errorText", "failed")
        return browser_log.RequestFailed(
            rid, p["timestamp"], error, cancelled=error == CANCELLED_BY_PAGE
        )
    return None


def _header(headers: Mapping[str, Any], name: str) -> str | None:
    """A header's value by its name in any case (HTTP/2 and HTTP/3 names are lower case)."""
    for k, v in headers.items():
        if k.lower() == name:
            return str(v)
    return None


def phases(timing: Mapping[str, Any]) -> browser_log.Phases | None:
    """A DevTools ``ResourceTiming`` (ms from ``requestTime``, -1: did not happen, as for
    the set-up of a reused connection) as the request's :class:`~browser_log.Phases`;
    ``connect`` spans TCP and TLS there, as HAR's does."""
    if "requestTime" not in timing:
        return None
    base_s = float(timing["requestTime"])

    def span(start: str, end: str) -> float:
        a, b = timing.get(start, -1), timing.get(end, -1)
        return round(b - a, 3) if a >= 0 and b >= 0 else NOT_APPLICABLE

    def at(name: str) -> float | None:
        v = timing.get(name, -1)
        return base_s + v / 1000 if v >= 0 else None

    return browser_log.Phases(
        dns_ms=span("dnsStart", "dnsEnd"),
        connect_ms=span("connectStart", "connectEnd"),
        ssl_ms=span("sslStart", "sslEnd"),
        send_start_s=at("sendStart"),
        send_end_s=at("sendEnd"),
    )


def _response(rid: str, resp: Mapping[str, Any]) -> browser_log.ResponseStarted:
    timing = resp.get("timing") or {}
    ttfb_s = None
    if "requestTime" in timing and "receiveHeadersEnd" in timing:
        ttfb_s = timing["requestTime"] + timing["receiveHeadersEnd"] / 1000
    return browser_log.ResponseStarted(
        request_id=rid,
        status=resp.get("status"),
        protocol=resp.get("protocol"),
        connection=str(resp.get("connectionId", "")),
        remote=resp.get("remoteIPAddress"),
        from_cache=bool(resp.get("fromDiskCache") or resp.get("fromPrefetchCache")),
        headers=dict(resp.get("headers", {})),
        ttfb_s=ttfb_s,
        status_text=str(resp.get("statusText", "")),
        mime_type=resp.get("mimeType"),
        phases=phases(timing),
    )


# ------------------------------------------------------------------------------- the tab


class Tab:
    """One trial's browser context with one blank page, attached by a flat DevTools session.

    Events of the session arrive on the reader thread: Network events go to :attr:`log`, the
    load event, trace completion, a renderer crash and the pipe closing set :attr:`signal`."""

    def __init__(self, context_id: str, session: str, cdp: DevTools | None = None) -> None:
        self.context_id = context_id
        self.session = session
        self.cdp = cdp
        self.children: list[str] = []
        """sessions of the page's own targets: cross-site iframes (their own renderer under
        site isolation) and workers, attached as they start (``Target.setAutoAttach``)"""
        self.log = browser_log.NetworkLog()
        self.last_network_s = time.monotonic()
        """host monotonic time of the last Network event (for the network-idle wait)"""
        self.signal = threading.Event()
        self.loaded = False
        self.request_failed = False
        """a request failed since the load's wait last looked (it may be a cancel)"""
        self.crashed = False
        self.closed = False
        self.trace_stream: str | None = None
        self.finished_on: dict[str, str] = {}
        """request id -> the session whose events said it finished (where its body is asked
        for, option ``har_bodies``)"""
        self._navigating = False

    def on(self, method: str, params: dict[str, Any]) -> None:
        if method.startswith("Network."):
            self._network(self.session, method, params)
        elif method == "Target.attachedToTarget":
            self._attach(params["sessionId"])
        elif method == "Page.loadEventFired":
            if self._navigating:
                self.loaded = True
                self.signal.set()
        elif method == "Tracing.tracingComplete":
            self.trace_stream = params.get("stream", "")
            self.signal.set()
        elif method == "Inspector.targetCrashed":
            self.crashed = True
            self.signal.set()
        elif method == PIPE_CLOSED:
            self.closed = True
            self.signal.set()

    def _network(self, session: str, method: str, params: dict[str, Any]) -> None:
        self.last_network_s = time.monotonic()
        event = network_event(method, params)
        if event is not None:
            self.log.add(event)
        if method == "Network.loadingFinished":
            self.finished_on[str(params.get("requestId", ""))] = session
        if method == "Network.loadingFailed":
            self.request_failed = True
            self.signal.set()

    def _attach(self, child: str) -> None:
        """A target of the page started, paused: its Network events join the page's log (request
        ids are the browser's, unique across processes; a cross-site frame's document request
        starts on the parent's session and ends on the frame's), its own children attach too,
        then it runs. Called on the reader thread, so nothing here waits for an answer."""
        cdp = self.cdp
        if cdp is None:
            return
        self.children.append(child)

        def on_child(method: str, params: dict[str, Any]) -> None:
            if method.startswith("Network."):
                self._network(child, method, params)
            elif method == "Target.attachedToTarget":
                self._attach(params["sessionId"])

        cdp.listen(child, on_child)
        for method, params in CHILD_COMMANDS:
            cdp.send(method, params, child)

    def navigating(self) -> None:
        """From now on a load event is the page's own (not the blank page's)."""
        self.signal.clear()
        self._navigating = True

    def again(self) -> None:
        """Ready for another load in the same context (the repeat view's): a new log, and no
        load event, trace or failure of the last load left to be seen."""
        self._navigating = False
        self.log = browser_log.NetworkLog()
        self.loaded = self.request_failed = False
        self.trace_stream = None
        self.finished_on = {}
        self.signal.clear()


def new_tab(cdp: DevTools, device: Device, cpu_slowdown: float) -> Tab:
    """A new browser context with one blank page, its DevTools session listening."""
    context_id = cdp.call("Target.createBrowserContext", timeout_s=TAB_TIMEOUT_S)[
        "browserContextId"
    ]
    target_id = cdp.call(
        "Target.createTarget",
        {"url": "about:blank", "browserContextId": context_id},
        timeout_s=TAB_TIMEOUT_S,
    )["targetId"]
    window = cdp.send("Browser.getWindowForTarget", {"targetId": target_id})
    session = cdp.call(
        "Target.attachToTarget",
        {"targetId": target_id, "flatten": True},
        timeout_s=TAB_TIMEOUT_S,
    )["sessionId"]
    tab = Tab(context_id, session, cdp)
    cdp.listen(session, tab.on)
    replies = [cdp.send(m, p, session) for m, p in _tab_commands(device, cpu_slowdown)]
    with contextlib.suppress(CdpError):  # no window: the metrics override alone
        window_id = window.result(TAB_TIMEOUT_S)["windowId"]
        bounds = {"width": device.width, "height": device.height}
        replies.append(
            cdp.send("Browser.setWindowBounds", {"windowId": window_id, "bounds": bounds})
        )
    for reply in replies:
        reply.result(TAB_TIMEOUT_S)
    return tab


def _tab_commands(device: Device, cpu_slowdown: float) -> list[tuple[str, dict[str, Any]]]:
    """What a new tab's session is sent: events on, auto-attach, the emulated device."""
    screen = {"angle": 0, "type": "portraitPrimary" if device.mobile else "landscapePrimary"}
    commands: list[tuple[str, dict[str, Any]]] = [
        ("Network.enable", {}),
        ("Page.enable", {}),
        ("Network.setBypassServiceWorker", {"bypass": True}),
        ("Target.setAutoAttach", AUTO_ATTACH),
        ("Emulation.setFocusEmulationEnabled", {"enabled": True}),
        (
            "Emulation.setDeviceMetricsOverride",
            {
                "width": device.width,
                "height": device.height,
                "screenWidth": device.width,
                "screenHeight": device.height,
                "deviceScaleFactor": device.scale,
                "mobile": device.mobile,
                "screenOrientation": screen,
            },
        ),
    ]
    if device.mobile:
        commands.append(("Emulation.setTouchEmulationEnabled", {"enabled": True}))
    if cpu_slowdown > 1:
        commands.append(("Emulation.setCPUThrottlingRate", {"rate": cpu_slowdown}))
    return commands


def _stop_listening(cdp: DevTools, tab: Tab) -> None:
    for session in (tab.session, *tab.children):
        cdp.listen(session, None)


def freeze(cdp: DevTools, tab: Tab) -> Reply:
    """Stop listening to the tab and freeze its page (no timer, task or animation of it runs
    again): a measured tab left for a later :func:`dispose` costs no CPU meanwhile."""
    _stop_listening(cdp, tab)
    return cdp.send("Page.setWebLifecycleState", {"state": "frozen"}, tab.session)


def dispose(cdp: DevTools, tab: Tab) -> Reply:
    """Close the tab's browser context (its cache, cookies, sockets); do not wait."""
    _stop_listening(cdp, tab)
    return cdp.send("Target.disposeBrowserContext", {"browserContextId": tab.context_id})


def wait_quiet(cdp: DevTools) -> None:
    """Until the browser's processes are quiet (:func:`browser_pool.wait_quiet`). A new
    context's tab answered DevTools after ~0.25 s while its window went on for ~1 s more
    (0.8-1.0 s of CPU on this 2-core machine, most of it the omnibox popup's WebUI, now off:
    chromium.options.DISABLED_FEATURES); a load begun meanwhile measured (20 trials of the
    demo page, h2s, cable, three runs each) plt 852-871 vs 796-803 ms, fcp 228-266 vs 200-206
    ms and SpeedIndex 621-640 vs 558-564 ms against a load begun 1.5 s later. What is left
    (the tab's own renderer, the window's first frames, the last context closing) is quiet
    about 0.2 s after the tab is made."""

    def cpu_seconds() -> float:
        info = cdp.call("SystemInfo.getProcessInfo", timeout_s=TAB_TIMEOUT_S)
        return sum(float(p.get("cpuTime", 0)) for p in info.get("processInfo", ()))

    browser_pool.wait_quiet(cpu_seconds)


# ---------------------------------------------------------------------- the measured load


def measure(
    tab: Tab,
    cdp: DevTools,
    url: str,
    page: Page,
    *,
    timeout_s: float,
    idle_ms: float,
    fail_on: str = "document",
    bodies: bool = False,
    tasks: bool = True,
) -> RawLoad:
    """The page load itself: tracing on, navigate, wait for load, tracing off. A load whose
    document fails (``fail_on="document"``), or in which any request for the page's own
    resources fails (``"any"``, :func:`~h2lab.clients.browser.log.failed_page_requests`),
    fails then, or after the load if it failed later; waiting for the load is no use, as it
    may never come (yahoo's document failing with ``net::ERR_HTTP2_PING_FAILED`` left
    requests waiting until the 900 s timeout). With ``bodies`` (option ``har_bodies``),
    the finished responses' bodies are read into the log once the trace is in
    (:func:`read_bodies`). ``tasks``: trace the threads' tasks too (:data:`TASKS_CATEGORY`,
    for TBT)."""
    left = time_left(timeout_s)
    s = tab.session

    def timed_out() -> TrialFailed:
        return no_load_event(url, timeout_s, tab.log)

    def check() -> None:
        if tab.closed:
            raise PipeClosed("browser closed the DevTools pipe")
        if tab.crashed:
            raise TrialFailed(f"chromium's renderer crashed while loading {url}")
        if tab.request_failed:
            tab.request_failed = False
            incomplete()

    def incomplete() -> None:
        browser_log.check_complete(tab.log, page, url, fail_on, tab.loaded)

    categories = (*TRACE_CATEGORIES, TASKS_CATEGORY) if tasks else TRACE_CATEGORIES
    cdp.call(
        "Tracing.start",
        {"transferMode": "ReturnAsStream", "categories": ",".join(categories)},
        s,
    )
    tracing = True
    try:
        tab.navigating()
        try:
            nav = cdp.call("Page.navigate", {"url": url}, s, timeout_s=left())
        except TimeoutError:
            raise timed_out() from None
        if nav.get("errorText"):
            raise TrialFailed(f"chromium could not load {url}: {nav['errorText']}")
        while not tab.loaded:
            check()
            if not tab.signal.wait(left()):
                raise timed_out()
            tab.signal.clear()
        check()
        wait_network_idle(tab, idle_ms, left)
        incomplete()
        connection.check_fault(cdp, "chromium")
        timing = after_load(cdp, s)
        tracing = False
        trace = _stop_tracing(tab, cdp)
        if bodies:
            read_bodies(tab, cdp)
    finally:
        if tracing and not tab.closed:
            with contextlib.suppress(Exception):
                _stop_tracing(tab, cdp)
    return RawLoad(trace, timing, tab.log)


def after_load(cdp: DevTools, session: str) -> dict[str, Any]:
    """The page's timing once it has painted after its load event (:data:`_AFTER_LOAD_JS`)."""
    value = evaluate(cdp, session, f"({_AFTER_LOAD_JS})({SCREENSHOT_SETTLE_MS}, {FCP_WAIT_MS})")
    return value if isinstance(value, dict) else {}


def evaluate(
    cdp: DevTools,
    session: str,
    expression: str,
    doing: str = "reading the page's timing",
    timeout_s: float | None = None,
) -> Any:
    """``expression``'s value in the page (a promise awaited); an exception in it fails the
    trial, saying what it was ``doing``. ``timeout_s``: the call's (default: DevTools')."""
    params = {"expression": expression, "awaitPromise": True, "returnByValue": True}
    timeout = {} if timeout_s is None else {"timeout_s": timeout_s}
    answer = cdp.call("Runtime.evaluate", params, session, **timeout)
    if "exceptionDetails" in answer:
        text = answer["exceptionDetails"].get("text", "exception")
        raise TrialFailed(f"chromium: {doing} failed: {text}")
    return answer.get("result", {}).get("value")


def read_bodies(tab: Tab, cdp: DevTools) -> None:
    """Every finished response's body (``Network.getResponseBody`` on the session that saw it
    finish: the page's or a frame's) into the tab's log, as :class:`browser_log.BodyRead`.
    Asked after the measured load, so that the asking costs the load nothing, and before the
    tab closes, which drops them. All are asked at once, then awaited; one the browser no
    longer holds (a response larger than its per-resource buffer, or evicted from it: the
    error answer "No resource with given identifier found") is left out, its HAR entry
    without ``content.text``."""
    asked = [
        (rid, cdp.send("Network.getResponseBody", {"requestId": rid}, session))
        for rid, session in list(tab.finished_on.items())
    ]
    for rid, reply in asked:
        try:
            answer = reply.result(TAB_TIMEOUT_S)
        except CdpError:
            continue
        body = browser_log.BodyRead(
            rid, str(answer.get("body", "")), bool(answer.get("base64Encoded"))
        )
        tab.log.add(body)


def _stop_tracing(tab: Tab, cdp: DevTools) -> bytes:
    """End the trace and read it back (one stream, in chunks)."""
    tab.signal.clear()
    cdp.call("Tracing.end", session=tab.session)
    while tab.trace_stream is None:
        if tab.closed:
            raise PipeClosed("browser closed the DevTools pipe")
        if not tab.signal.wait(TAB_TIMEOUT_S):
            raise TimeoutError(f"no trace within {TAB_TIMEOUT_S:g} s of Tracing.end")
        tab.signal.clear()
    stream, tab.trace_stream = tab.trace_stream, None
    chunks = []
    while True:
        part = cdp.call("IO.read", {"handle": stream, "size": 1 << 22}, tab.session)
        data = part.get("data", "")
        chunks.append(base64.b64decode(data) if part.get("base64Encoded") else data.encode())
        if part.get("eof"):
            break
    cdp.send("IO.close", {"handle": stream}, tab.session)
    return b"".join(chunks)
