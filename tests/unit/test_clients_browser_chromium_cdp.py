"""h2lab.clients.browser.chromium.cdp: the DevTools pipe against a stand-in browser on the other
end of two real pipes (NUL-ended JSON messages both ways)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from h2lab.clients.browser.chromium.cdp import PIPE_CLOSED, CdpError, CdpPipe, PipeClosed


class StandIn:
    """The browser's end: reads commands, answers each one; ``events`` go out first."""

    def __init__(self) -> None:
        cmd_read, self.cmd_write = os.pipe()
        self.out_read, out_write = os.pipe()
        self.commands: list[dict[str, Any]] = []
        self._in, self._out = cmd_read, out_write
        self.events: list[dict[str, Any]] = []

    def write(self, message: dict[str, Any]) -> None:
        os.write(self._out, json.dumps(message).encode() + b"\0")

    def serve(self) -> None:
        """Until our end is closed or told ``Browser.close``; then it closes its ends."""
        try:
            buffer = b""
            while chunk := os.read(self._in, 1 << 16):
                *messages, buffer = (buffer + chunk).split(b"\0")
                for raw in messages:
                    if not self.answer(json.loads(raw)):
                        return
        finally:
            os.close(self._out)
            os.close(self._in)

    def answer(self, command: dict[str, Any]) -> bool:
        self.commands.append(command)
        if command["method"] == "Browser.close":
            return False
        for event in self.events:
            self.write(event)
        if command["method"] == "Bad.method":
            self.write({"id": command["id"], "error": {"message": "not found"}})
        elif command["method"] != "Never.answered":
            self.write({"id": command["id"], "result": {"echo": command.get("params")}})
        return True


@pytest.fixture
def browser() -> Iterator[tuple[StandIn, CdpPipe]]:
    stand_in = StandIn()
    thread = threading.Thread(target=stand_in.serve, daemon=True)
    thread.start()
    cdp = CdpPipe(stand_in.cmd_write, stand_in.out_read)
    yield stand_in, cdp
    cdp.close()
    thread.join(5)


def test_commands_get_their_answers_and_sessions_their_events(
    browser: tuple[StandIn, CdpPipe],
) -> None:
    stand_in, cdp = browser
    got: list[tuple[str, dict[str, Any]]] = []
    cdp.listen("s1", lambda method, params: got.append((method, params)))
    stand_in.events = [
        {"method": "Page.loadEventFired", "params": {"t": 1}, "sessionId": "s1"},
        {"method": "Page.loadEventFired", "params": {"t": 2}, "sessionId": "other"},
    ]
    assert cdp.call("Page.navigate", {"url": "x"}, "s1", timeout_s=5) == {"echo": {"url": "x"}}
    assert got == [("Page.loadEventFired", {"t": 1})]
    assert stand_in.commands == [
        {"id": 1, "method": "Page.navigate", "params": {"url": "x"}, "sessionId": "s1"}
    ]
    cdp.listen("s1", None)
    cdp.call("Browser.getVersion", timeout_s=5)
    assert len(got) == 1
    assert stand_in.commands[-1] == {"id": 2, "method": "Browser.getVersion"}


def test_an_error_answer_and_no_answer_are_errors(browser: tuple[StandIn, CdpPipe]) -> None:
    _, cdp = browser
    with pytest.raises(CdpError, match=r"^Bad\.method: not found$"):
        cdp.call("Bad.method", timeout_s=5)
    with pytest.raises(TimeoutError, match=r"^no answer to Never\.answered within 0\.05 s$"):
        cdp.call("Never.answered", timeout_s=0.05)


def test_the_pipe_closing_ends_every_wait_and_tells_listeners(
    browser: tuple[StandIn, CdpPipe],
) -> None:
    _, cdp = browser
    told: list[str] = []
    cdp.listen("s1", lambda method, params: told.append(method))
    waiting = cdp.send("Never.answered")
    cdp.send("Browser.close")
    assert cdp.closed.wait(5)
    with pytest.raises(PipeClosed, match=r"during Never\.answered$"):
        waiting.result(5)
    assert told == [PIPE_CLOSED]
    with pytest.raises(PipeClosed):
        cdp.call("Page.navigate", timeout_s=5)
