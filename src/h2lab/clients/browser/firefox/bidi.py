"""WebDriver BiDi over a WebSocket: commands with their answers, events to one listener.

Firefox speaks BiDi natively (``--remote-debugging-port``, ``ws://127.0.0.1:PORT/session``):
no geckodriver. Messages are JSON (W3C WebDriver BiDi, "Transport"): a command
``{"id", "method", "params"}``, its answer ``{"type": "success", "id", "result"}`` or
``{"type": "error", "id", "error", "message"}``, an event ``{"type": "event", "method",
"params"}``. Nothing here knows a command or event by name but :data:`CONNECTION_CLOSED`,
the one event of our own.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from h2lab.clients.browser import reply
from h2lab.clients.browser.firefox.websocket import WebSocket, WebSocketClosed


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


CONNECTION_CLOSED = "h2lab.connectionClosed"
"""The event the listener gets once when the connection closes."""

Listener = Callable[[str, dict[str, Any]], None]
"""``listener(method, params)``: one event, called on the reader thread."""


class Reply(reply.Reply):
    """The answer to one BiDi command, filled in by the reader thread."""

    def closed(self) -> Exception:
        return ConnectionClosed(f"browser closed the BiDi connection during {self.method}")

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


class BidiConnection(Bidi):
    """BiDi over an open :class:`WebSocket`. A reader thread hands each answer to its
    command's :class:`Reply` and each event to the listener. Any thread may send."""

    def __init__(self, ws: WebSocket) -> None:
        self._ws = ws
        self._lock = threading.Lock()
        self._next_id = 0
        self._waiting: dict[int, Reply] = {}
        self._listener: Listener | None = None
        self.closed = threading.Event()
        threading.Thread(target=self._read, name="firefox-bidi", daemon=True).start()

    def send(self, method: str, params: Mapping[str, Any] | None = None) -> Reply:
        reply = Reply(method)
        with self._lock:
            if self.closed.is_set():
                reply.set(None)
                return reply
            self._next_id += 1
            message = {"id": self._next_id, "method": method, "params": dict(params or {})}
            self._waiting[self._next_id] = reply
            try:
                self._ws.send(json.dumps(message))
            except WebSocketClosed:
                self._waiting.pop(self._next_id, None)
                reply.set(None)
        return reply

    def listen(self, listener: Listener | None) -> None:
        """Hand every event to ``listener`` from now on (None: drop them)."""
        with self._lock:
            self._listener = listener

    def close(self) -> None:
        """Close the connection (the reader ends; the browser goes on running)."""
        self._ws.close()

    def _read(self) -> None:
        try:
            while True:
                self._dispatch(json.loads(self._ws.receive()))
        except (WebSocketClosed, ValueError):
            pass
        finally:
            with contextlib.suppress(OSError):
                self._ws.close()
            with self._lock:
                self.closed.set()
                waiting, self._waiting = self._waiting, {}
                listener = self._listener
            for reply in waiting.values():
                reply.set(None)
            if listener is not None:
                listener(CONNECTION_CLOSED, {})

    def _dispatch(self, message: dict[str, Any]) -> None:
        if message.get("type") == "event":
            listener = self._listener
            if listener is not None:
                listener(str(message.get("method", "")), message.get("params", {}))
            return
        with self._lock:
            reply = self._waiting.pop(message.get("id", -1), None)
        if reply is not None:
            reply.set(message)
