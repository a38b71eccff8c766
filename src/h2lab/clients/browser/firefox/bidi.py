"""WebDriver BiDi over a WebSocket: commands with their answers, events to one listener.

Firefox speaks BiDi natively (``--remote-debugging-port``, ``ws://127.0.0.1:PORT/session``):
no geckodriver. Messages are JSON (W3C WebDriver BiDi, "Transport"): a command
``{"id", "method", "params"}``, its answer ``{"type": "success", "id", "result"}`` or
``{"type": "error", "id", "error", "message"}``, an event ``{"type": "event", "method",
"params"}``. Nothing here knows a command or event by name but :data:`CONNECTION_CLOSED`,
the one event of our own. The commands' ids, their waiting answers and the reader thread are
:class:`~h2lab.clients.browser.connection.Connection`'s.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from h2lab.clients.browser import connection, reply
from h2lab.clients.browser.connection import Listener
from h2lab.clients.browser.firefox.websocket import WebSocket, WebSocketClosed

__all__ = [
    "CONNECTION_CLOSED",
    "Bidi",
    "BidiConnection",
    "BidiError",
    "ConnectionClosed",
    "Listener",
    "Reply",
]


class ConnectionClosed(Exception):
    """The browser's end of the BiDi connection is gone (it exited or crashed)."""


class BidiError(Exception):
    """The browser answered a BiDi command with an error."""

    def __init__(self, method: str, error: str, message: str) -> None:
        super().__init__(f"{method}: {error}: {message}")
        self.error = error
        """the BiDi error code, e.g. ``unknown error``, ``no such frame``"""
        self.message = message
        """the browser's text (Firefox: often an NS_ERROR_ name for a failed navigation)"""


CONNECTION_CLOSED = connection.CLOSED
"""The event the listener gets once when the connection closes."""


class Reply(reply.Reply):
    """The answer to one BiDi command, filled in by the reader thread."""

    connection_gone = ConnectionClosed
    connection_name = "BiDi connection"

    def error(self, message: dict[str, Any]) -> Exception | None:
        if message.get("type") != "error":
            return None
        return BidiError(
            self.method, str(message.get("error", "?")), str(message.get("message", ""))
        )


class Bidi(Protocol):
    """What a trial needs of a BiDi connection: :class:`BidiConnection`, or a fake in tests."""

    def send(self, method: str, params: Mapping[str, Any] | None = None) -> Reply:
        """Send a command without waiting: its answer comes to the :class:`Reply`."""
        ...

    def call(
        self, method: str, params: Mapping[str, Any] | None = None, timeout_s: float = 30.0
    ) -> dict[str, Any]:
        """Send a command and wait for its result."""
        return self.send(method, params).result(timeout_s)


class BidiConnection(connection.Connection, Bidi):
    """BiDi over an open :class:`WebSocket`, as a
    :class:`~h2lab.clients.browser.connection.Connection` with one listener for every event."""

    def __init__(self, ws: WebSocket) -> None:
        self._ws = ws
        super().__init__("firefox-bidi")

    def send(self, method: str, params: Mapping[str, Any] | None = None) -> Reply:
        return self._send(Reply(method), {"method": method, "params": dict(params or {})})

    def listen(self, listener: Listener | None) -> None:
        """Hand every event to ``listener`` from now on (None: drop them)."""
        self._set_listener("", listener)

    def close(self) -> None:
        """Close the connection (the reader ends; the browser goes on running)."""
        self._ws.close()

    def _write(self, message: dict[str, Any]) -> bool:
        try:
            self._ws.send(json.dumps(message))
        except WebSocketClosed:
            return False
        return True

    def _receive(self) -> Iterator[dict[str, Any]]:
        while True:
            try:
                text = self._ws.receive()
                message = json.loads(text)
            except WebSocketClosed as exc:
                if exc.fault:
                    self._note_fault(None, ValueError(str(exc)))
                return
            except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, too deep
                self._note_fault(None, exc)
                continue
            yield message

    def _reader_done(self) -> None:
        with contextlib.suppress(OSError):
            self._ws.close()

    def _answer_to(self, message: dict[str, Any]) -> int | None:
        if message.get("type") == "event":
            return None
        command_id: int = message.get("id", -1)
        return command_id

    def _event(self, message: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
        return "", str(message.get("method", "")), message.get("params", {})
