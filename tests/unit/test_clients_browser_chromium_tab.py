"""h2lab.clients.browser.chromium.tab: DevTools events -> the browser log, a tab's session, and the
measured load's sequence, against a fake DevTools connection that answers from a script."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from h2lab.clients.browser import log as browser_log
from h2lab.clients.browser.chromium.cdp import PIPE_CLOSED, DevTools, Listener, Reply
from h2lab.clients.browser.chromium.tab import (
    CHILD_COMMANDS,
    Tab,
    dispose,
    measure,
    network_event,
    new_tab,
    phases,
    wait_quiet,
)
from h2lab.clients.browser.options import DEVICES
from h2lab.errors import TrialFailed
from h2lab.pages import Page
from h2lab.pages.synthetic import layout, parse

Answer = Callable[[Mapping[str, Any], str], dict[str, Any]]


class FakeDevTools(DevTools):
    """Answers each command from ``answers`` (method -> answer(params, session); {} when not
    listed, an error answer for a method in ``failing``) and records what was sent."""

    def __init__(
        self, answers: Mapping[str, Answer] | None = None, failing: tuple[str, ...] = ()
    ) -> None:
        self.answers = dict(answers or {})
        self.failing = failing
        self.sent: list[tuple[str, dict[str, Any], str]] = []
        self.listeners: dict[str, Listener] = {}

    def send(
        self, method: str, params: Mapping[str, Any] | None = None, session: str = ""
    ) -> Reply:
        self.sent.append((method, dict(params or {}), session))
        reply = Reply(method)
        if method in self.failing:
            reply.set({"error": {"message": "no such thing"}})
        else:
            answer = self.answers.get(method)
            reply.set({"result": {} if answer is None else answer(params or {}, session)})
        return reply

    def listen(self, session: str, listener: Listener | None) -> None:
        if listener is None:
            self.listeners.pop(session, None)
        else:
            self.listeners[session] = listener

    def methods(self, session: str | None = None) -> list[str]:
        return [m for m, _, s in self.sent if session is None or s == session]


def synthetic_page(spec: str) -> Page:
    origins, resources, _ = layout(parse(spec))
    return Page(name=spec, origins=origins, resources=resources, docroot=Path("/x"), digest="d")


# ------------------------------------------------------------------ DevTools -> browser log


def test_network_events_translate_to_browser_log_events() -> None:
    req = {"url": "https://a.test/new", "initialPriority": "High", "headers": {"a": "b"}}
    redirect = {"status": 301, "protocol": "h2", "connectionId": 7}
    sent = {"requestId": "1", "timestamp": 1.5, "request": req, "redirectResponse": redirect}
    sent["wallTime"] = 1_795_000_000.5
    assert network_event("Network.requestWillBeSent", sent) == browser_log.RequestSent(
        "1", "https://a.test/new", 1.5, "High", {"a": "b"}, browser_log.Redirect(301, "h2", "7"),
        wall_s=1_795_000_000.5,
    )  # fmt: skip
    resp = {
        "status": 200,
        "protocol": "h2",
        "connectionId": 42,
        "remoteIPAddress": "10.2.0.1",
        "fromPrefetchCache": True,
        "timing": {"requestTime": 10.0, "receiveHeadersEnd": 30.0},
    }
    got = network_event("Network.responseReceived", {"requestId": "1", "response": resp})
    assert got == browser_log.ResponseStarted(
        "1", 200, "h2", "42", "10.2.0.1", True, {}, 10.03, phases=browser_log.Phases()
    )
    no_timing = network_event("Network.responseReceived", {"requestId": "1", "response": {}})
    assert isinstance(no_timing, browser_log.ResponseStarted) and no_timing.ttfb_s is None
    extra = {"requestId": "1", "headersText": "HTTP/1.1 200 OK\r\n\r\n"}
    assert network_event(
        "Network.responseReceivedExtraInfo", extra
    ) == browser_log.ResponseHeaderBytes("1", 19)
    assert network_event("Network.responseReceivedExtraInfo", {"requestId": "1"}) is None
    assert network_event(
        "Network.requestServedFromCache", {"requestId": "1"}
    ) == browser_log.ServedFromCache("1")
    data = {"requestId": "1", "dataLength": 600}
    assert network_event("Network.dataReceived", data) == browser_log.DataReceived("1", 600)
    done = {"requestId": "1", "timestamp": 2.0, "encodedDataLength": 700}
    assert network_event("Network.loadingFinished", done) == browser_log.RequestFinished(
        "1", 2.0, 700
    )
    assert network_event("Network.webSocketCreated", {"requestId": "1"}) is None


def test_priority_field_and_changes_become_the_requests_priority_signals() -> None:
    extra = {"requestId": "1", "headers": {":path": "/a.css", "priority": "u=0"}}
    assert network_event("Network.requestWillBeSentExtraInfo", extra) == (
        browser_log.PrioritySignals("1", field="u=0")
    )
    h1 = {"requestId": "2", "headers": {"Host": "o1", "Accept": "*/*"}}
    assert network_event("Network.requestWillBeSentExtraInfo", h1) is None
    changed = {"requestId": "1", "newPriority": "High", "timestamp": 1.5}
    assert network_event("Network.resourceChangedPriority", changed) == (
        browser_log.PrioritySignals("1", update="High")
    )
    log = browser_log.NetworkLog()
    # Chromium may send the extra info before the request itself
    log.add(network_event("Network.requestWillBeSentExtraInfo", extra))  # type: ignore[arg-type]
    log.add(browser_log.RequestSent("1", "https://o1/a.css", 1.0, "VeryHigh"))
    log.add(network_event("Network.resourceChangedPriority", changed))  # type: ignore[arg-type]
    log.add(browser_log.RequestFinished("1", 2.0, 100))
    (row,) = log.resources(1.0)
    assert (row.priority, row.priority_field, row.priority_update) == ("VeryHigh", "u=0", "High")


def test_resource_timing_becomes_the_phases_of_a_request() -> None:
    """DevTools' ``ResourceTiming`` (ms from ``requestTime``): a new TLS connection's DNS,
    connect (TLS in it) and TLS spans; a reused connection's are -1 there."""
    opened = {
        "requestTime": 10.0, "dnsStart": 0.5, "dnsEnd": 1.5, "connectStart": 1.5,
        "connectEnd": 61.5, "sslStart": 21.5, "sslEnd": 61.5, "sendStart": 62.0,
        "sendEnd": 62.25, "receiveHeadersEnd": 100.0,
    }  # fmt: skip
    assert phases(opened) == browser_log.Phases(
        dns_ms=1.0, connect_ms=60.0, ssl_ms=40.0, send_start_s=10.062, send_end_s=10.06225
    )
    reused = {
        "requestTime": 10.0, "dnsStart": -1, "dnsEnd": -1, "connectStart": -1,
        "connectEnd": -1, "sslStart": -1, "sslEnd": -1, "sendStart": 0.2, "sendEnd": 0.3,
    }  # fmt: skip
    assert phases(reused) == browser_log.Phases(send_start_s=10.0002, send_end_s=10.0003)
    assert phases({}) is None


def test_only_chromiums_aborted_is_a_cancel_by_the_page() -> None:
    aborted = {"requestId": "1", "timestamp": 2.0, "errorText": "net::ERR_ABORTED"}
    assert network_event("Network.loadingFailed", aborted) == browser_log.RequestFailed(
        "1", 2.0, "net::ERR_ABORTED", cancelled=True
    )
    reset = {"requestId": "1", "timestamp": 2.0}
    assert network_event("Network.loadingFailed", reset) == browser_log.RequestFailed(
        "1", 2.0, "failed"
    )


# ------------------------------------------------------------------------------- the tab


def test_a_failed_request_wakes_the_loads_wait() -> None:
    tab = Tab("ctx", "page")
    sent = {"requestId": "1", "timestamp": 1.0, "request": {"url": "https://a.test/x.png"}}
    tab.on("Network.requestWillBeSent", sent)
    assert not tab.signal.is_set() and not tab.request_failed
    tab.on("Network.loadingFailed", {"requestId": "1", "timestamp": 2.0, "errorText": "net::X"})
    assert tab.signal.is_set() and tab.request_failed
    assert tab.log.requests["1"].failed == "net::X"


def test_only_the_navigations_load_event_counts() -> None:
    tab = Tab("ctx", "page")
    tab.on("Page.loadEventFired", {})  # the blank page's
    assert not tab.loaded and not tab.signal.is_set()
    tab.navigating()
    tab.on("Page.loadEventFired", {})
    assert tab.loaded and tab.signal.is_set()
    tab.on(PIPE_CLOSED, {})
    assert tab.closed


def test_a_child_target_attaches_and_its_requests_join_the_log() -> None:
    cdp = FakeDevTools()
    tab = Tab("ctx", "page", cdp)
    tab.on("Target.attachedToTarget", {"sessionId": "frame"})
    assert tab.children == ["frame"]
    assert cdp.methods("frame") == [m for m, _ in CHILD_COMMANDS]
    sent = {"requestId": "9", "timestamp": 1.0, "request": {"url": "https://b.test/f.html"}}
    cdp.listeners["frame"]("Network.requestWillBeSent", sent)
    assert tab.log.requests["9"].url == "https://b.test/f.html"
    cdp.listeners["frame"]("Target.attachedToTarget", {"sessionId": "worker"})
    assert tab.children == ["frame", "worker"]
    dispose(cdp, tab)
    assert not {"page", "frame", "worker"} & set(cdp.listeners)
    assert cdp.sent[-1] == ("Target.disposeBrowserContext", {"browserContextId": "ctx"}, "")


def new_tab_answers() -> dict[str, Answer]:
    return {
        "Target.createBrowserContext": lambda p, s: {"browserContextId": "c1"},
        "Target.createTarget": lambda p, s: {"targetId": "t1"},
        "Browser.getWindowForTarget": lambda p, s: {"windowId": 5},
        "Target.attachToTarget": lambda p, s: {"sessionId": "s1"},
    }


def test_new_tab_emulates_the_device_in_a_new_context() -> None:
    cdp = FakeDevTools(new_tab_answers())
    tab = new_tab(cdp, DEVICES["mobile"], cpu_slowdown=4)
    assert (tab.context_id, tab.session) == ("c1", "s1")
    assert cdp.listeners["s1"] == tab.on
    sent = {m: p for m, p, s in cdp.sent if s == "s1"}
    metrics = sent["Emulation.setDeviceMetricsOverride"]
    assert (metrics["width"], metrics["height"], metrics["deviceScaleFactor"]) == (412, 823, 1.75)
    assert metrics["screenOrientation"]["type"] == "portraitPrimary"
    assert sent["Emulation.setCPUThrottlingRate"] == {"rate": 4}
    assert "Emulation.setTouchEmulationEnabled" in sent
    bounds = next(p for m, p, _ in cdp.sent if m == "Browser.setWindowBounds")
    assert bounds == {"windowId": 5, "bounds": {"width": 412, "height": 823}}


def test_new_tab_without_a_window_still_emulates_the_device() -> None:
    cdp = FakeDevTools(new_tab_answers(), failing=("Browser.getWindowForTarget",))
    new_tab(cdp, DEVICES["desktop"], cpu_slowdown=1)
    assert "Browser.setWindowBounds" not in cdp.methods()
    assert "Emulation.setTouchEmulationEnabled" not in cdp.methods("s1")
    assert "Emulation.setCPUThrottlingRate" not in cdp.methods("s1")


# -------------------------------------------------------------------------- quiet browser


class CpuTimes(FakeDevTools):
    """Answers SystemInfo.getProcessInfo with the browser's summed CPU seconds in turn."""

    def __init__(self, cpu_s: list[float]) -> None:
        super().__init__({"SystemInfo.getProcessInfo": self._info})
        self.cpu_s = cpu_s

    def _info(self, params: Mapping[str, Any], session: str) -> dict[str, Any]:
        value = self.cpu_s[min(len(self.sent) - 1, len(self.cpu_s) - 1)]
        return {"processInfo": [{"type": "browser", "id": 1, "cpuTime": value}]}


def test_wait_quiet_returns_after_two_quiet_polls_in_a_row() -> None:
    # a renderer starting: 40 ms of CPU per 50 ms poll, then 1 ms, a burst, then quiet
    cdp = CpuTimes([0.0, 0.04, 0.08, 0.12, 0.121, 0.16, 0.161, 0.162])
    wait_quiet(cdp)
    assert len(cdp.sent) == 8  # the lone quiet poll after 0.12 s did not count


def test_wait_quiet_gives_up_at_its_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("h2lab.clients.browser.pool.QUIET_TIMEOUT_S", 0.3)
    cdp = CpuTimes([0.04 * i for i in range(100)])
    t0 = time.monotonic()
    wait_quiet(cdp)
    # busy at every poll: it waited its whole timeout, polling at 50 ms (at most 7 polls; a
    # process at the idle scheduling class beside the alone tests slept long enough for 3)
    assert time.monotonic() - t0 >= 0.3 and 2 <= len(cdp.sent) <= 8


# ---------------------------------------------------------------------- the measured load

TRACE = b'{"traceEvents": []}'


class Browser(FakeDevTools):
    """A page load as Chromium tells it: ``on_navigate`` plays the events a navigation brings
    to the tab; the trace comes back in two chunks; the bodies of ``unknown_bodies`` (request
    ids) are no longer held."""

    def __init__(self, tab: Tab, on_navigate: Callable[[Tab], None]) -> None:
        super().__init__(
            {
                "Page.navigate": self._navigate,
                "Runtime.evaluate": lambda p, s: {"result": {"value": {"loadEventEnd": 80.0}}},
                "Tracing.end": self._end_tracing,
                "IO.read": lambda p, s: self.chunks.pop(0),
            }
        )
        self.tab = tab
        self.on_navigate = on_navigate
        self.unknown_bodies: set[str] = set()
        self.chunks = [
            {"data": base64.b64encode(TRACE[:5]).decode(), "base64Encoded": True},
            {"data": TRACE[5:].decode(), "eof": True},
        ]

    def send(
        self, method: str, params: Mapping[str, Any] | None = None, session: str = ""
    ) -> Reply:
        if method == "Network.getResponseBody" and (params or {}).get("requestId") in (
            self.unknown_bodies
        ):
            self.sent.append((method, dict(params or {}), session))
            reply = Reply(method)
            reply.set({"error": {"message": "No resource with given identifier found"}})
            return reply
        return super().send(method, params, session)

    def _navigate(self, params: Mapping[str, Any], session: str) -> dict[str, Any]:
        self.on_navigate(self.tab)
        return {"frameId": "f"}

    def _end_tracing(self, params: Mapping[str, Any], session: str) -> dict[str, Any]:
        self.tab.on("Tracing.tracingComplete", {"stream": "t"})
        return {}


def request(tab: Tab, rid: str, url: str, failed: str | None = None) -> None:
    tab.on(
        "Network.requestWillBeSent", {"requestId": rid, "timestamp": 1.0, "request": {"url": url}}
    )
    if failed is None:
        tab.on("Network.loadingFinished", {"requestId": rid, "timestamp": 1.2})
    else:
        tab.on("Network.loadingFailed", {"requestId": rid, "timestamp": 1.2, "errorText": failed})


def test_measure_traces_the_navigation_to_its_load_event() -> None:
    page = synthetic_page("synthetic:n=2,size=1KB,origins=1")
    url = page.resources[0].url()

    def navigate(tab: Tab) -> None:
        request(tab, "1", url)
        request(tab, "2", "https://tracker.example/x.gif", failed="net::ERR_NAME_NOT_RESOLVED")
        tab.on("Page.loadEventFired", {})

    tab = Tab("ctx", "s1")
    cdp = Browser(tab, navigate)
    raw = measure(tab, cdp, url, page, timeout_s=5, idle_ms=0)
    assert raw.trace == TRACE
    assert raw.timing == {"loadEventEnd": 80.0}
    assert [r.url for r in raw.log.finished()] == [url]
    assert cdp.methods() == [
        "Tracing.start",
        "Page.navigate",
        "Runtime.evaluate",
        "Tracing.end",
        "IO.read",
        "IO.read",
        "IO.close",
    ]


def test_measure_fails_when_a_page_resource_fails_and_stops_tracing() -> None:
    page = synthetic_page("synthetic:n=2,size=1KB,origins=1")
    urls = [r.url() for r in page.resources]

    def navigate(tab: Tab) -> None:  # no load event: it would never come
        request(tab, "1", urls[0])
        request(tab, "2", urls[1], failed="net::ERR_HTTP2_PING_FAILED")

    tab = Tab("ctx", "s1")
    cdp = Browser(tab, navigate)
    with pytest.raises(TrialFailed, match="failed to load: 1 of 2 requests for the page's"):
        measure(tab, cdp, urls[0], page, timeout_s=5, idle_ms=0, fail_on="any")
    assert "Tracing.end" in cdp.methods()


def test_measure_by_default_fails_for_the_document_only() -> None:
    """A subresource that fails (ORB, a connection error) is the page's, recorded with its
    error; the document failing is the load failing."""
    page = synthetic_page("synthetic:n=2,size=1KB,origins=1")
    urls = [r.url() for r in page.resources]

    def sub_fails(tab: Tab) -> None:
        request(tab, "1", urls[0])
        request(tab, "2", urls[1], failed="net::ERR_BLOCKED_BY_ORB")
        tab.on("Page.loadEventFired", {})

    tab = Tab("ctx", "s1")
    raw = measure(tab, Browser(tab, sub_fails), urls[0], page, timeout_s=5, idle_ms=0)
    assert [(r.url, r.failed) for r in raw.log.failed()] == [(urls[1], "net::ERR_BLOCKED_BY_ORB")]
    rows = raw.log.resources(1.0)
    assert [(r.url, r.error) for r in rows] == [
        (urls[0], None),
        (urls[1], "net::ERR_BLOCKED_BY_ORB"),
    ]

    def document_fails(tab: Tab) -> None:  # no load event: it would never come
        request(tab, "1", urls[0], failed="net::ERR_CONNECTION_RESET")

    tab = Tab("ctx", "s1")
    with pytest.raises(
        TrialFailed, match=r"failed to load: 1 of 1 requests .*ERR_CONNECTION_RESET"
    ):
        measure(tab, Browser(tab, document_fails), urls[0], page, timeout_s=5, idle_ms=0)


def test_measure_times_out_naming_what_it_waited_for() -> None:
    page = synthetic_page("synthetic:n=2,size=1KB,origins=1")
    url = page.resources[0].url()

    def navigate(tab: Tab) -> None:
        tab.on("Network.requestWillBeSent", {"requestId": "1", "timestamp": 1.0,
                                             "request": {"url": url}})  # fmt: skip

    tab = Tab("ctx", "s1")
    with pytest.raises(TrialFailed, match=r"timeout of 0\.05 s \(no load event .*1 of 1 requests"):
        measure(tab, Browser(tab, navigate), url, page, timeout_s=0.05, idle_ms=0)


def test_measure_names_a_renderer_crash() -> None:
    page = synthetic_page("synthetic:n=2,size=1KB,origins=1")
    url = page.resources[0].url()
    tab = Tab("ctx", "s1")
    cdp = Browser(tab, lambda t: t.on("Inspector.targetCrashed", {}))
    with pytest.raises(TrialFailed, match="renderer crashed while loading"):
        measure(tab, cdp, url, page, timeout_s=5, idle_ms=0)


def test_measure_reads_the_bodies_after_the_trace_with_har_bodies() -> None:
    """Option ``har_bodies``: each finished response's body is asked for on the session that
    saw it finish, after the trace; one the browser no longer holds is left out."""
    page = synthetic_page("synthetic:n=2,size=1KB,origins=1")
    urls = [r.url() for r in page.resources]

    def navigate(tab: Tab) -> None:
        request(tab, "1", urls[0])
        request(tab, "2", urls[1])
        tab.on("Page.loadEventFired", {})

    tab = Tab("ctx", "s1")
    cdp = Browser(tab, navigate)
    cdp.answers["Network.getResponseBody"] = lambda p, s: {"body": "<html>"}
    cdp.unknown_bodies = {"2"}
    raw = measure(tab, cdp, urls[0], page, timeout_s=5, idle_ms=0, bodies=True)
    assert cdp.methods()[-2:] == ["Network.getResponseBody", "Network.getResponseBody"]
    assert cdp.methods().index("IO.close") < cdp.methods().index("Network.getResponseBody")
    first, second = raw.log.finished()
    assert first.body == browser_log.BodyRead("1", "<html>", base64=False)
    assert second.body is None
    plain = Browser(Tab("ctx", "s1"), navigate)
    measure(plain.tab, plain, urls[0], page, timeout_s=5, idle_ms=0)
    assert "Network.getResponseBody" not in plain.methods()
