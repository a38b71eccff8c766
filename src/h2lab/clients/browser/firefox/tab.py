"""One trial's tab in Firefox, over WebDriver BiDi: made, measured, closed.

A tab is a new user context (``browser.createUserContext``: a Firefox container, its own
``userContextId``) with one top-level browsing context. Firefox keys its HTTP cache, cookies,
connection pools (HTTP/1.1 and HTTP/2 connections, QUIC sessions), TLS session cache and
Alt-Svc entries by the request's origin attributes, which include the ``userContextId``;
every trial's id is new, so nothing of an earlier trial is found by a later one.
``browser.removeUserContext`` closes the tab and drops the context's data when the trial ends.

The measured load (:func:`measure`): ``browsingContext.navigate`` (not waiting), the
``browsingContext.load`` event of the tab; with option ``idle``, network silence; the page's
timing read after two animation frames (:data:`AFTER_LOAD_JS`).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import Any

from h2lab.clients.browser import connection
from h2lab.clients.browser import log as browser_log
from h2lab.clients.browser.firefox.bidi import (
    CONNECTION_CLOSED,
    Bidi,
    BidiError,
    ConnectionClosed,
    Reply,
)
from h2lab.clients.browser.firefox.events import BidiNetwork, RawLoad
from h2lab.clients.browser.load import no_load_event, time_left, wait_network_idle
from h2lab.clients.browser.options import Device
from h2lab.clients.browser.result import LAYOUT_SHIFTS_JS
from h2lab.errors import TrialFailed
from h2lab.pages import Page

TAB_TIMEOUT_S = 10.0
"""Longest wait for one step of making or closing a tab (they take 0.01-0.2 s here)."""

NAV_POLL_S = 0.05
"""How often the load's wait looks whether the navigation command failed."""

NETWORK_EVENTS = (
    "network.beforeRequestSent",
    "network.responseStarted",
    "network.responseCompleted",
    "network.fetchError",
)
"""The network events (option ``network``, on by default). Subscribing to any of them costs
the load: on loopback, a page of 500 stylesheets loaded in 0.79-0.87 s without them and
1.56 s with ``network.fetchError`` alone (which never came), 1.78-1.93 s with one of the
others (median of 5 each, firefox-esr 153): Firefox then watches every request in its parent
process."""
EVENTS = ("browsingContext.load", "browsingContext.navigationFailed")

RESOURCE_TIMING_JS = "() => { performance.setResourceTimingBufferSize(100000); }"
"""Run in every document of a trial's user context before its own scripts: the page's
Resource Timing buffer holds 250 entries by default (a page of 500 stylesheets kept 251)."""
"""What every browser's BiDi session subscribes to, once, for every context."""

# After the load event: two animation frames, so the paint the load triggers is in the paint
# timing; Firefox has no first-paint entry. A string, as BiDi's serialisation of objects is
# verbose.
AFTER_LOAD_JS = (
    """
new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(() => {
  const nav = performance.getEntriesByType('navigation')[0] || {};
  const paints = {};
  for (const p of performance.getEntriesByType('paint')) paints[p.name] = p.startTime;
  let lcp = null, lcps = [];
  try {
    const po = new PerformanceObserver(() => {});
    po.observe({type: 'largest-contentful-paint', buffered: true});
    const entries = po.takeRecords();
    if (entries.length) lcp = entries[entries.length - 1].startTime;
    lcps = entries.map(e => [e.url || e.id || '', e.startTime]);
    po.disconnect();
  } catch (e) {}
"""
    + LAYOUT_SHIFTS_JS
    + """  const rt = e => [e.name, e.startTime, e.responseStart, e.responseEnd, e.encodedBodySize,
                   e.nextHopProtocol, e.responseStatus || 0];
  resolve(JSON.stringify({
    resources: [rt(nav), ...performance.getEntriesByType('resource').map(rt)],
    timeOrigin: performance.timeOrigin,
    connectEnd: nav.connectEnd, responseStart: nav.responseStart,
    dcl: nav.domContentLoadedEventStart, loadEventEnd: nav.loadEventEnd,
    fcp: paints['first-contentful-paint'], lcp: lcp, lcps: lcps, layoutShifts: shifts,
  }));
})))
"""
)


class Tab:
    """One trial's user context and its tab. Events arrive on the reader thread
    (:meth:`on`): network events go to :attr:`log`, the tab's load event, a failed request
    and the connection closing set :attr:`signal`."""

    def __init__(self, user_context: str, context: str) -> None:
        self.user_context = user_context
        self.context = context
        self.network = BidiNetwork()
        self.log = self.network.log
        self.signal = threading.Event()
        self.loaded = False
        self.request_failed = False
        """a request failed since the load's wait last looked (it may be a cancel)"""
        self.closed = False
        self.last_network_s = time.monotonic()
        """host monotonic time of the last network event (for the network-idle wait)"""
        self.navigating = False
        self.navigation_failed = False
        """Firefox said the navigation failed (seen without network events too)"""

    def on(self, method: str, params: dict[str, Any]) -> None:
        if method.startswith("network."):
            self.last_network_s = time.monotonic()
            self.network.add(method, params)
            if method == "network.fetchError":
                self.request_failed = True
                self.signal.set()
        elif method == "browsingContext.load":
            if self.navigating and params.get("context") == self.context:
                self.loaded = True
                self.signal.set()
        elif method == "browsingContext.navigationFailed":
            if self.navigating and params.get("context") == self.context:
                self.navigation_failed = True
                self.signal.set()
        elif method == CONNECTION_CLOSED:
            self.closed = True
            self.signal.set()


def new_tab(bidi: Bidi, device: Device, version: str) -> Tab:
    """A new user context with one tab, the size of ``device``.

    A mobile device is, as far as Firefox ESR 153's BiDi goes: the viewport and the screen at
    the phone's size and device pixel ratio, portrait, and Firefox for Android's user agent
    (of the same ``version``). Not emulated: touch (``emulation.setTouchOverride`` is an
    unknown command there: ``navigator.maxTouchPoints`` stays 0, ``pointer: coarse`` false),
    the ``<meta name=viewport>`` rules of a mobile browser, and CPU speed."""
    user_context = bidi.call("browser.createUserContext", timeout_s=TAB_TIMEOUT_S)["userContext"]
    # Resource Timing keeps 250 entries unless told before the page loads (network=0 reads it)
    bidi.call(
        "script.addPreloadScript",
        {"functionDeclaration": RESOURCE_TIMING_JS, "userContexts": [user_context]},
        timeout_s=TAB_TIMEOUT_S,
    )
    context = bidi.call(
        "browsingContext.create",
        {"type": "tab", "userContext": user_context},
        timeout_s=TAB_TIMEOUT_S,
    )["context"]
    for method, params in tab_commands(device, version, context, user_context):
        bidi.call(method, params, timeout_s=TAB_TIMEOUT_S)
    return Tab(user_context, context)


def mobile_user_agent(version: str) -> str:
    """Firefox for Android's user agent, for Firefox ``version`` (``153.7.0esr``)."""
    major = version.split(".", 1)[0] or "128"
    return f"Mozilla/5.0 (Android 14; Mobile; rv:{major}.0) Gecko/{major}.0 Firefox/{major}.0"


def tab_commands(
    device: Device, version: str, context: str, user_context: str
) -> list[tuple[str, dict[str, Any]]]:
    """What a new tab is sent to be ``device``."""
    size = {"width": device.width, "height": device.height}
    commands: list[tuple[str, dict[str, Any]]] = [
        (
            "browsingContext.setViewport",
            {"context": context, "viewport": size, "devicePixelRatio": device.scale},
        )
    ]
    if device.mobile:
        contexts = {"userContexts": [user_context]}
        orientation = {"natural": "portrait", "type": "portrait-primary"}
        commands += [
            (
                "emulation.setUserAgentOverride",
                {"userAgent": mobile_user_agent(version), **contexts},
            ),
            (
                "emulation.setScreenOrientationOverride",
                {"screenOrientation": orientation, **contexts},
            ),
            ("emulation.setScreenSettingsOverride", {"screenArea": size, **contexts}),
        ]
    return commands


def dispose(bidi: Bidi, tab: Tab) -> None:
    """Remove the tab's user context (its tab, cache, cookies); errors are the next trial's."""
    with contextlib.suppress(TimeoutError, ConnectionClosed, BidiError):
        bidi.call("browser.removeUserContext", {"userContext": tab.user_context}, TAB_TIMEOUT_S)


def measure(
    tab: Tab,
    bidi: Bidi,
    url: str,
    page: Page,
    *,
    timeout_s: float,
    idle_ms: float,
    fail_on: str = "document",
) -> RawLoad:
    """The page load itself: navigate, wait for the tab's load event, read the timing. A load
    whose document fails (``fail_on="document"``), or in which any request for the page's
    own resources fails (``"any"``), fails then, or after the load if it failed later."""
    left = time_left(timeout_s)

    def check() -> None:
        if tab.closed:
            raise ConnectionClosed("browser closed the BiDi connection")
        if tab.request_failed or tab.navigation_failed:
            tab.request_failed = False
            incomplete()
        if tab.navigation_failed:
            raise TrialFailed(f"{url} failed to load (firefox: navigation failed)")

    def incomplete() -> None:
        browser_log.check_complete(tab.log, page, url, fail_on, tab.loaded)

    tab.signal.clear()
    tab.navigating = True
    nav = bidi.send(
        "browsingContext.navigate", {"context": tab.context, "url": url, "wait": "none"}
    )
    while not tab.loaded:
        check()
        if nav.done():
            _navigation_error(nav, url)
        if left() <= 0:
            raise no_load_event(url, timeout_s, tab.log)
        # the navigation's answer sets no signal: look at it every NAV_POLL_S
        if tab.signal.wait(min(left(), NAV_POLL_S)):
            tab.signal.clear()
    check()
    wait_network_idle(tab, idle_ms, left)
    incomplete()
    connection.check_fault(bidi, "firefox")
    return RawLoad(after_load(bidi, tab.context, left()), tab.log)


def _navigation_error(nav: Reply, url: str) -> None:
    """Raise the navigation's own error, if it answered with one."""
    try:
        nav.result(0)
    except BidiError as exc:
        raise TrialFailed(f"firefox could not load {url}: {exc.message or exc.error}") from None


def after_load(bidi: Bidi, context: str, timeout_s: float) -> dict[str, Any]:
    """The page's navigation and paint timing and its time origin."""
    doing = "reading the page's timing"
    timing = evaluate_json(bidi, context, AFTER_LOAD_JS, doing, max(timeout_s, TAB_TIMEOUT_S))
    return timing if isinstance(timing, dict) else {}


def evaluate_json(bidi: Bidi, context: str, expression: str, doing: str, timeout_s: float) -> Any:
    """The JSON text ``expression`` gives (a promise awaited), parsed; None when it gives no
    text. A BiDi error or an exception in the page fails the trial, saying what it was
    ``doing``."""
    params = {"expression": expression, "target": {"context": context}, "awaitPromise": True}
    try:
        answer = bidi.call("script.evaluate", params, timeout_s=timeout_s)
    except BidiError as exc:
        raise TrialFailed(f"firefox: {doing} failed: {exc.message or exc.error}") from None
    if answer.get("type") == "exception":
        text = answer.get("exceptionDetails", {}).get("text", "exception")
        raise TrialFailed(f"firefox: {doing} failed: {text}")
    value = answer.get("result", {}).get("value")
    return json.loads(value) if isinstance(value, str) else None
