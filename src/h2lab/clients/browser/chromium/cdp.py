"""The Chrome DevTools protocol over a browser's ``--remote-debugging-pipe``: commands with
their answers, and each flat session's events handed to its listener. Nothing here knows a
command or event by name but :data:`PIPE_CLOSED`, the one event of our own."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from h2lab.clients.browser import reply


class PipeClosed(Exception):
    """The browser's end of the DevTools pipe is gone (it exited or crashed)."""


class CdpError(Exception):
    """The browser answered a DevTools command with an error."""


PIPE_CLOSED = "h2lab.pipeClosed"
"""The event every session listener gets once when the pipe closes."""

Listener = Callable[[str, dict[str, Any]], None]
"""``listener(method, params)``: one event of a session, called on the reader thread."""


class Reply(reply.Reply):
    """The answer to one DevTools command, filled in by the reader thread."""

    def closed(self) -> Exception:
        return PipeClosed(f"browser closed the DevTools pipe during {self.method}")

    def error(self, message: dict[str, Any]) -> Exception | None:
        if "error" not in message:
            return None
        return CdpError(f"{self.method}: {message['error'].get('message', '?')}")


class DevTools(Protocol):
    """What a tab needs of a DevTools connection: :class:`CdpPipe`, or a fake in tests."""

    def send(
        self, method: str, params: Mapping[str, Any] | None = None, session: str = ""
    ) -> Reply:
        """Send a command without waiting: its answer comes to the :class:`Reply`."""
        ...

    def listen(self, session: str, listener: Listener | None) -> None:
        """Hand the session's events to ``listener`` from now on (None: drop them)."""
        ...

    def call(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        session: str = "",
        timeout_s: float = 30.0,
    ) -> dict[str, Any]:
        """Send a command and wait for its result."""
        return self.send(method, params, session).result(timeout_s)


class CdpPipe(DevTools):
    """The DevTools protocol over Chromium's ``--remote-debugging-pipe`` (fd 3: commands in, fd
    4: answers and events out; JSON messages ended by NUL). A reader thread hands each answer
    to its command's :class:`Reply` and each event to the listener of its session (flat
    sessions: ``sessionId`` on the message). Any thread may send."""

    def __init__(self, to_browser: int, from_browser: int) -> None:
        self._out = to_browser
        self._in = from_browser
        self._lock = threading.Lock()
        self._next_id = 0
        self._waiting: dict[int, Reply] = {}
        self._listeners: dict[str, Listener] = {}
        self.closed = threading.Event()
        threading.Thread(target=self._read, name="chromium-devtools", daemon=True).start()

    def send(
        self, method: str, params: Mapping[str, Any] | None = None, session: str = ""
    ) -> Reply:
        reply = Reply(method)
        with self._lock:
            if self.closed.is_set():
                reply.set(None)
                return reply
            self._next_id += 1
            message: dict[str, Any] = {"id": self._next_id, "method": method}
            if params:
                message["params"] = params
            if session:
                message["sessionId"] = session
            self._waiting[self._next_id] = reply
            data = json.dumps(message).encode() + b"\0"
            try:
                while data:
                    data = data[os.write(self._out, data) :]
            except OSError:
                self._waiting.pop(self._next_id, None)
                reply.set(None)
        return reply

    def listen(self, session: str, listener: Listener | None) -> None:
        with self._lock:
            if listener is None:
                self._listeners.pop(session, None)
            else:
                self._listeners[session] = listener

    def close(self) -> None:
        """Close our end of the pipe (the browser exits when it reads EOF)."""
        with self._lock, contextlib.suppress(OSError):
            os.close(self._out)

    def _read(self) -> None:
        buffer = b""
        try:
            while chunk := os.read(self._in, 1 << 20):
                *messages, buffer = (buffer + chunk).split(b"\0")
                for raw in messages:
                    self._dispatch(json.loads(raw))
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                os.close(self._in)
            with self._lock:
                self.closed.set()
                waiting, self._waiting = self._waiting, {}
                listeners = list(self._listeners.values())
            for reply in waiting.values():
                reply.set(None)
            for listener in listeners:
                listener(PIPE_CLOSED, {})

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "id" in message:
            with self._lock:
                reply = self._waiting.pop(message["id"], None)
            if reply is not None:
                reply.set(message)
            return
        listener = self._listeners.get(message.get("sessionId", ""))
        if listener is not None:
            listener(message.get("method", ""), message.get("params", {}))
