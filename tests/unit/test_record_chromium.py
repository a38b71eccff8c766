"""h2lab.record.chromium: the browser's command line, and a recorded load's DevTools
sequence (child targets attached, bodies asked where the response completed, the load and
idle waits, failures) against a fake DevTools connection that plays a script."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from h2lab.clients.browser.chromium.cdp import DevTools, Listener, Reply
from h2lab.clients.browser.chromium.options import BASE_FLAGS
from h2lab.errors import SpecError
from h2lab.record.chromium import _argv, _Recorder
from h2lab.record.log import build_recording

URL = "https://www.a.test/"
Event = tuple[str, str, dict[str, Any]]  # (session, method, params)


class FakePipe(DevTools):
    """Plays ``events`` to the listeners when ``Page.navigate`` is sent; answers bodies from
    ``bodies`` ((session, request id) -> body text; missing: an error answer)."""

    def __init__(
        self,
        events: list[Event],
        bodies: Mapping[tuple[str, str], str],
        navigate: Mapping[str, Any] | None = None,
    ) -> None:
        self.events = events
        self.bodies = bodies
        self.navigate = {"loaderId": "doc"} if navigate is None else navigate
        self.sent: list[tuple[str, str]] = []
        self.listeners: dict[str, Listener] = {}
        self.closed = threading.Event()

    def send(
        self, method: str, params: Mapping[str, Any] | None = None, session: str = ""
    ) -> Reply:
        self.sent.append((method, session))
        reply = Reply(method)
        answers: dict[str, Callable[[], dict[str, Any]]] = {
            "Target.createTarget": lambda: {"targetId": "t"},
            "Target.attachToTarget": lambda: {"sessionId": "page"},
        }
        if method == "Network.getResponseBody":
            body = self.bodies.get((session, str((params or {})["requestId"])))
            error = {"error": {"message": "No resource with given identifier found"}}
            reply.set(error if body is None else {"result": {"body": body}})
            return reply
        if method == "Page.navigate":
            for s, m, p in self.events:
                self.listeners[s](m, p)
            reply.set({"result": dict(self.navigate)})
            return reply
        reply.set({"result": answers[method]() if method in answers else {}})
        return reply

    def listen(self, session: str, listener: Listener | None) -> None:
        if listener is not None:
            self.listeners[session] = listener


def _get(session: str, rid: str, url: str) -> list[Event]:
    request = {"url": url, "method": "GET", "headers": {}}
    response = {"status": 200, "headers": {"content-type": "text/plain"}}
    return [
        (session, "Network.requestWillBeSent", {"requestId": rid, "request": request}),
        (session, "Network.responseReceived", {"requestId": rid, "response": response}),
        (session, "Network.loadingFinished", {"requestId": rid}),
    ]


def _attach(child: str) -> Event:
    return ("page", "Target.attachedToTarget", {"sessionId": child})


LOADED: Event = ("page", "Page.loadEventFired", {})


def test_a_load_with_a_worker_is_recorded_with_every_body() -> None:
    sent_by_page = ("page", "Network.requestWillBeSent",
                    {"requestId": "w1", "request": {"url": f"{URL}data.json"}})  # fmt: skip
    events = [*_get("page", "doc", URL), _attach("worker"), sent_by_page,
              *_get("worker", "w1", f"{URL}data.json")[1:], LOADED]  # fmt: skip
    # the worker's session cannot give its body: it is asked on the page's, which saw it too
    pipe = FakePipe(events, {("page", "doc"): "<p>hi</p>", ("page", "w1"): '{"n":1}'})
    recorder = _Recorder(pipe, URL)  # type: ignore[arg-type]
    log, notes = recorder.run(timeout_s=5, idle_s=0.05)
    assert notes == ()
    worker = [m for m, s in pipe.sent if s == "worker"]
    assert worker[:3] == ["Network.enable", "Target.setAutoAttach",
                          "Runtime.runIfWaitingForDebugger"]  # fmt: skip
    asked = [s for m, s in pipe.sent if m == "Network.getResponseBody"]
    assert asked == ["page", "worker", "page"]  # doc; w1 where it finished, then where it began
    rec = build_recording(URL, log)
    assert [(r.url, r.body) for r in rec.responses] == [
        (URL, b"<p>hi</p>"),
        (f"{URL}data.json", b'{"n":1}'),
    ]
    assert log.document_id == "doc"


def test_a_navigation_error_is_refused_with_the_url() -> None:
    pipe = FakePipe([], {}, navigate={"errorText": "net::ERR_CONNECTION_REFUSED"})
    with pytest.raises(SpecError, match=r"URL: https://www.a.test/: the server refused"):
        _Recorder(pipe, URL).run(timeout_s=5, idle_s=0.05)  # type: ignore[arg-type]


def test_no_load_event_in_time_is_refused_naming_what_was_unfinished() -> None:
    hanging = _get("page", "img", f"{URL}x.png")[:1]
    pipe = FakePipe([*_get("page", "doc", URL), *hanging], {("page", "doc"): "x"})
    with pytest.raises(SpecError) as info:
        _Recorder(pipe, URL).run(timeout_s=0.2, idle_s=0.05)  # type: ignore[arg-type]
    assert info.value.reason == (
        f"{URL}: no load event within 0.2 s; 1 request(s) unfinished: {URL}x.png"
    )


def test_a_network_never_idle_ends_at_the_timeout_with_a_note() -> None:
    hanging = _get("page", "poll", f"{URL}poll")[:1]
    pipe = FakePipe([*_get("page", "doc", URL), LOADED, *hanging], {("page", "doc"): "x"})
    log, notes = _Recorder(pipe, URL).run(timeout_s=0.3, idle_s=0.05)  # type: ignore[arg-type]
    assert notes == (f"the network was not idle when the timeout came: 1 request(s) "
                     f"unfinished: {URL}poll",)  # fmt: skip
    assert [r.url for r in build_recording(URL, log).responses] == [URL]


def test_the_command_line_outside_and_inside_the_lab(tmp_path: Path) -> None:
    outside = _argv(tmp_path, None, None, None)
    assert outside[0] == "/usr/lib/chromium/chromium"
    assert all(flag in outside for flag in BASE_FLAGS)
    assert "--headless" in outside and f"--user-data-dir={tmp_path / 'profile'}" in outside
    assert not any(a.startswith(("--host-resolver-rules", "--ignore-cert")) for a in outside)
    inside = _argv(tmp_path, "ns1", {"www.a.test": "10.2.0.1"}, "PIN")
    assert inside[:5] == ["ip", "netns", "exec", "ns1", "/usr/lib/chromium/chromium"]
    assert "--host-resolver-rules=MAP www.a.test 10.2.0.1, MAP * ~NOTFOUND" in inside
    assert "--ignore-certificate-errors-spki-list=PIN" in inside
