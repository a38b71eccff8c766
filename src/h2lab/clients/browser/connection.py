"""A browser's control connection: commands with their answers, events to listeners.

Chromium's DevTools pipe (:class:`~h2lab.clients.browser.chromium.cdp.CdpPipe`) and Firefox's
WebDriver BiDi WebSocket (:class:`~h2lab.clients.browser.firefox.bidi.BidiConnection`) work
alike: each command gets the next id, waits in a map for the answer with that id, which a
reader thread hands to its :class:`~h2lab.clients.browser.reply.Reply`; every other message is
an event, handed to the listener of its session (one session, ``""``, where the protocol has
no sessions). When the connection ends, every command still waiting fails and every listener
gets :data:`CLOSED` once. :class:`Connection` does all that; an engine's connection says only
how its messages travel (its transport: :meth:`Connection._write`, :meth:`Connection._receive`)
and look (:meth:`Connection._answer_to`, :meth:`Connection._event`).
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from h2lab.clients.browser.reply import Reply
from h2lab.errors import TrialFailed

CLOSED = "h2lab.connectionClosed"
"""The event every listener gets once when the connection closes (our own, not the
browser's)."""

Listener = Callable[[str, dict[str, Any]], None]
"""``listener(method, params)``: one event, called on the reader thread."""

R = TypeVar("R", bound=Reply)

UNREADABLE = (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError)
"""What a message unlike the protocol's raises as it is read (a field missing or of another
type): the message is dropped and noted in :attr:`Connection.fault`; the reader goes on."""


def check_fault(conn: object, engine: str) -> None:
    """A trial fails when its connection dropped a message it could not read (fakes in tests
    have no :attr:`Connection.fault`)."""
    fault = getattr(conn, "fault", None)
    if fault is not None:
        raise TrialFailed(f"{engine} sent a message h2lab could not read: {fault}")


class Connection(abc.ABC):
    """Commands and their answers over one transport, read by a thread of its own. Any thread
    may send. A subclass sets up its transport before calling ``__init__``, which starts the
    reader."""

    def __init__(self, thread_name: str) -> None:
        self._lock = threading.Lock()
        self._next_id = 0
        self._waiting: dict[int, Reply] = {}
        self._listeners: dict[str, Listener] = {}
        self.closed = threading.Event()
        """set once the browser's end is gone (every waiting command failed by then)"""
        self.fault: str | None = None
        """the first message h2lab could not read, in one line (the message was dropped; a
        trial that sees a fault fails with it, :func:`check_fault`)"""
        threading.Thread(target=self._read, name=thread_name, daemon=True).start()

    def _send(self, reply: R, message: dict[str, Any]) -> R:
        """Send ``message`` (a command but its id) without waiting: its answer comes to
        ``reply`` (set to None at once when the connection is closed)."""
        with self._lock:
            if self.closed.is_set():
                reply.set(None)
                return reply
            self._next_id += 1
            command_id = self._next_id
            self._waiting[command_id] = reply
            if not self._write({"id": command_id, **message}):
                self._waiting.pop(command_id, None)
                reply.set(None)
        return reply

    def _set_listener(self, session: str, listener: Listener | None) -> None:
        """Hand the session's events to ``listener`` from now on (None: drop them)."""
        with self._lock:
            if listener is None:
                self._listeners.pop(session, None)
            else:
                self._listeners[session] = listener

    def _read(self) -> None:
        try:
            for message in self._receive():
                try:
                    self._dispatch(message)
                except UNREADABLE as exc:
                    self._note_fault(message, exc)
        finally:
            self._reader_done()
            with self._lock:
                self.closed.set()
                waiting, self._waiting = self._waiting, {}
                listeners = list(self._listeners.values())
            for reply in waiting.values():
                reply.set(None)
            for listener in listeners:
                listener(CLOSED, {})

    def _dispatch(self, message: dict[str, Any]) -> None:
        command_id = self._answer_to(message)
        if command_id is not None:
            with self._lock:
                reply = self._waiting.pop(command_id, None)
            if reply is not None:
                reply.set(message)
            return
        session, method, params = self._event(message)
        listener = self._listeners.get(session)
        if listener is not None:
            listener(method, params)

    def _note_fault(self, message: object, exc: BaseException) -> None:
        """Keep the first message that could not be read, as one line."""
        method = message.get("method") if isinstance(message, dict) else None
        what = method if isinstance(method, str) else "a message"
        line = f"{what[:80]}: {type(exc).__name__}: {exc}"
        if self.fault is None:
            self.fault = " ".join(line.split())[:300]

    # -- the engine's part

    @abc.abstractmethod
    def _write(self, message: dict[str, Any]) -> bool:
        """Send one message (called under the lock); False: the transport is closed."""

    @abc.abstractmethod
    def _receive(self) -> Iterator[dict[str, Any]]:
        """The messages from the browser, each as it comes, until the transport ends."""

    @abc.abstractmethod
    def _reader_done(self) -> None:
        """Release the reading end once :meth:`_receive` is over."""

    @abc.abstractmethod
    def _answer_to(self, message: dict[str, Any]) -> int | None:
        """The id of the command ``message`` answers (None: it is an event)."""

    @abc.abstractmethod
    def _event(self, message: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
        """An event's session, method and parameters."""
