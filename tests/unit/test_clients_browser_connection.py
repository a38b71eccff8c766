"""h2lab.clients.browser.connection: ids, answers, events and the close fan-out of one
connection, over an in-memory transport (the message shape of BiDi's events, one session)."""

from __future__ import annotations

import queue
from collections.abc import Iterator
from typing import Any

import pytest

from h2lab.clients.browser.connection import CLOSED, Connection
from h2lab.clients.browser.reply import Reply

END = {"end": True}


class Gone(Exception):
    pass


class _Reply(Reply):
    connection_gone = Gone
    connection_name = "test connection"

    def error(self, message: dict[str, Any]) -> Exception | None:
        return ValueError(message["error"]) if "error" in message else None


class Fake(Connection):
    """Commands written go to :attr:`sent`; what the test puts in :attr:`incoming` is read."""

    def __init__(self, writable: bool = True) -> None:
        self.sent: list[dict[str, Any]] = []
        self.incoming: queue.Queue[dict[str, Any]] = queue.Queue()
        self.writable = writable
        self.reader_done = False
        super().__init__("test-connection")

    def send(self, method: str) -> _Reply:
        return self._send(_Reply(method), {"method": method})

    def _write(self, message: dict[str, Any]) -> bool:
        self.sent.append(message)
        return self.writable

    def _receive(self) -> Iterator[dict[str, Any]]:
        while (message := self.incoming.get(timeout=5)) is not END:
            yield message

    def _reader_done(self) -> None:
        self.reader_done = True

    def _answer_to(self, message: dict[str, Any]) -> int | None:
        return None if message.get("type") == "event" else int(message["id"])

    def _event(self, message: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
        return "", str(message["method"]), message.get("params", {})


def test_commands_get_ids_in_order_and_their_own_answers() -> None:
    fake = Fake()
    first, second = fake.send("a"), fake.send("b")
    assert fake.sent == [{"id": 1, "method": "a"}, {"id": 2, "method": "b"}]
    fake.incoming.put({"id": 2, "result": {"n": 2}})
    fake.incoming.put({"id": 1, "error": "no"})
    assert second.result(5) == {"n": 2}
    with pytest.raises(ValueError, match=r"^no$"):
        first.result(5)
    fake.incoming.put(END)


def test_events_go_to_the_listener_and_the_end_fails_every_waiting_command() -> None:
    fake = Fake()
    told: list[tuple[str, dict[str, Any]]] = []
    fake._set_listener("", lambda method, params: told.append((method, params)))
    waiting = fake.send("never")
    fake.incoming.put({"type": "event", "method": "e", "params": {"x": 1}})
    fake.incoming.put(END)
    assert fake.closed.wait(5)
    with pytest.raises(Gone, match=r"^browser closed the test connection during never$"):
        waiting.result(5)
    assert told == [("e", {"x": 1}), (CLOSED, {})]
    assert fake.reader_done
    with pytest.raises(Gone):
        fake.send("after").result(5)
    assert [m["method"] for m in fake.sent] == ["never"]


def test_a_command_the_transport_cannot_write_fails_at_once() -> None:
    fake = Fake(writable=False)
    with pytest.raises(Gone):
        fake.send("a").result(0)
    fake.incoming.put(END)
