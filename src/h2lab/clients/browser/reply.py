"""The answer to one command sent to a browser over its control connection (the DevTools pipe,
the WebDriver BiDi WebSocket), filled in by the connection's reader thread
(:class:`~h2lab.clients.browser.connection.Connection`). Each protocol says how its connection
closing and its error answers are raised (:mod:`~h2lab.clients.browser.chromium.cdp`,
:mod:`~h2lab.clients.browser.firefox.bidi`)."""

from __future__ import annotations

import abc
import threading
from typing import Any


class Reply(abc.ABC):
    """One command's answer: :meth:`set` by the reader, :meth:`result` by the caller."""

    def __init__(self, method: str) -> None:
        self.method = method
        self._done = threading.Event()
        self._message: dict[str, Any] | None = None

    def set(self, message: dict[str, Any] | None) -> None:
        """The answer (None: the connection closed before it came)."""
        self._message = message
        self._done.set()

    def done(self) -> bool:
        return self._done.is_set()

    def result(self, timeout_s: float) -> dict[str, Any]:
        """The answer's result (TimeoutError, or the protocol's closed and error exceptions)."""
        if not self._done.wait(timeout_s):
            raise TimeoutError(f"no answer to {self.method} within {timeout_s:g} s")
        if self._message is None:
            raise self.closed()
        error = self.error(self._message)
        if error is not None:
            raise error
        result: dict[str, Any] = self._message.get("result", {})
        return result

    connection_gone: type[Exception] = ConnectionError
    """What is raised when the connection closed before the answer..."""
    connection_name = "connection"
    """... naming the connection: ``browser closed the <connection_name> during <method>``."""

    def closed(self) -> Exception:
        """What is raised when the connection closed before the answer."""
        gone = f"browser closed the {self.connection_name} during {self.method}"
        return self.connection_gone(gone)

    @abc.abstractmethod
    def error(self, message: dict[str, Any]) -> Exception | None:
        """What is raised for an error answer (None: the answer is a result)."""
