"""A browser's control connection reads hostile bytes: a message that is not JSON or lacks
its fields is dropped and named in ``fault`` (the reader goes on, the trial fails with it),
and a message past the size bound ends the connection."""

from __future__ import annotations

import json
import os
import socket
import struct

import pytest

from h2lab.clients.browser import connection
from h2lab.clients.browser.chromium.cdp import CdpPipe
from h2lab.clients.browser.chromium.tab import Tab
from h2lab.clients.browser.firefox import websocket
from h2lab.clients.browser.firefox.bidi import BidiConnection
from h2lab.clients.browser.firefox.events import BidiNetwork
from h2lab.errors import TrialFailed


def cdp_fault(data: bytes) -> str | None:
    """Feed ``data`` to a DevTools pipe with a tab listening; its fault."""
    to_browser_r, to_browser_w = os.pipe()
    from_browser_r, from_browser_w = os.pipe()
    cdp = CdpPipe(to_browser_w, from_browser_r)
    tab = Tab("context", "s")
    cdp.listen("s", tab.on)
    with os.fdopen(from_browser_w, "wb") as feed:
        feed.write(data)
    assert cdp.closed.wait(10)
    os.close(to_browser_r)
    cdp.close()
    return cdp.fault


def test_cdp_reader_goes_on_past_a_bad_message() -> None:
    good = {"sessionId": "s", "method": "Page.loadEventFired", "params": {}}
    bad = {"sessionId": "s", "method": "Network.requestWillBeSent", "params": {"x": 1}}
    to_browser_r, to_browser_w = os.pipe()
    from_browser_r, from_browser_w = os.pipe()
    cdp = CdpPipe(to_browser_w, from_browser_r)
    tab = Tab("context", "s")
    tab.navigating()
    cdp.listen("s", tab.on)
    with os.fdopen(from_browser_w, "wb") as feed:
        feed.write(json.dumps(bad).encode() + b"\0" + json.dumps(good).encode() + b"\0")
    assert cdp.closed.wait(10)
    assert tab.loaded  # the message after the bad one was read
    assert cdp.fault == "Network.requestWillBeSent: KeyError: 'request'"
    with pytest.raises(TrialFailed, match="chromium sent a message h2lab could not read"):
        connection.check_fault(cdp, "chromium")
    os.close(to_browser_r)
    cdp.close()


def test_a_cdp_message_past_the_bound_ends_the_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("h2lab.clients.browser.chromium.cdp.MAX_MESSAGE_BYTES", 1000)
    fault = cdp_fault(b"x" * 5000)
    assert fault == "a message: ValueError: a message over 1000 bytes"


def _frame(payload: bytes, opcode: int = 1) -> bytes:
    return struct.pack("!BBH", 0x80 | opcode, 126, len(payload)) + payload


def test_bidi_reader_goes_on_past_a_bad_message_and_ends_at_a_huge_frame() -> None:
    ours, theirs = socket.socketpair()
    events = BidiNetwork()
    conn = BidiConnection(websocket.WebSocket(ours))
    conn.listen(events.add)
    sent = {"request": {"request": "1", "url": "https://a.test/x"}, "timestamp": 1000.0}
    good = {"type": "event", "method": "network.beforeRequestSent", "params": sent}
    theirs.sendall(_frame(b"\xff\xfe") + _frame(json.dumps(good).encode()))
    theirs.sendall(struct.pack("!BBQ", 0x81, 127, 1 << 40))  # a frame of 1 TB
    assert conn.closed.wait(10)
    assert list(events.log.requests) == ["1"]
    assert conn.fault is not None and conn.fault.startswith("a message: UnicodeDecodeError")
    conn.close()
    theirs.close()
