"""The Chrome DevTools protocol over a browser's ``--remote-debugging-pipe``: commands with
their answers, and each flat session's events handed to its listener. Nothing here knows a
command or event by name but :data:`PIPE_CLOSED`, the one event of our own."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from h2lab.clients.browser import connection, reply
from h2lab.clients.browser.connection import Listener

__all__ = ["PIPE_CLOSED", "CdpError", "CdpPipe", "DevTools", "Listener", "PipeClosed", "Reply"]


MAX_MESSAGE_BYTES = 512 << 20
"""Longest DevTools message read (a full-page screenshot or a trace chunk is a few MB); past
it the connection is dropped with a fault."""


class PipeClosed(Exception):
    """The browser's end of the DevTools pipe is gone (it exited or crashed)."""


class CdpError(Exception):
    """The browser answered a DevTools command with an error."""


PIPE_CLOSED = connection.CLOSED
"""The event every session listener gets once when the pipe closes."""


class Reply(reply.Reply):
    """The answer to one DevTools command, filled in by the reader thread."""

    connection_gone = PipeClosed
    connection_name = "DevTools pipe"

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


class CdpPipe(connection.Connection, DevTools):
    """The DevTools protocol over Chromium's ``--remote-debugging-pipe`` (fd 3: commands in, fd
    4: answers and events out; JSON messages ended by NUL), as a
    :class:`~h2lab.clients.browser.connection.Connection`: each event goes to the listener of
    its session (flat sessions: ``sessionId`` on the message)."""

    def __init__(self, to_browser: int, from_browser: int) -> None:
        self._out = to_browser
        self._in = from_browser
        super().__init__("chromium-devtools")

    def send(
        self, method: str, params: Mapping[str, Any] | None = None, session: str = ""
    ) -> Reply:
        message: dict[str, Any] = {"method": method}
        if params:
            message["params"] = params
        if session:
            message["sessionId"] = session
        return self._send(Reply(method), message)

    def listen(self, session: str, listener: Listener | None) -> None:
        self._set_listener(session, listener)

    def close(self) -> None:
        """Close our end of the pipe (the browser exits when it reads EOF)."""
        with self._lock, contextlib.suppress(OSError):
            os.close(self._out)

    def _write(self, message: dict[str, Any]) -> bool:
        data = json.dumps(message).encode() + b"\0"
        try:
            while data:
                data = data[os.write(self._out, data) :]
        except OSError:
            return False
        return True

    def _receive(self) -> Iterator[dict[str, Any]]:
        buffer = bytearray()
        try:
            while chunk := os.read(self._in, 1 << 20):
                scan, start = len(buffer), 0
                buffer += chunk
                while (end := buffer.find(b"\0", scan)) >= 0:
                    raw, start = bytes(buffer[start:end]), end + 1
                    scan = start
                    try:
                        yield json.loads(raw)
                    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError too
                        self._note_fault(raw[:80], exc)
                del buffer[:start]
                if len(buffer) > MAX_MESSAGE_BYTES:
                    self._note_fault(None, ValueError(f"a message over {MAX_MESSAGE_BYTES} bytes"))
                    return
        except OSError:
            pass

    def _reader_done(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._in)

    def _answer_to(self, message: dict[str, Any]) -> int | None:
        command_id: int | None = message.get("id")
        return command_id

    def _event(self, message: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
        return message.get("sessionId", ""), message.get("method", ""), message.get("params", {})
