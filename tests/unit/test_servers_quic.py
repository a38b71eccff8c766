"""A server's QUIC counts and qlog files as a trial reads them (h2lab.servers.quic), against a
control socket answering as the origin's does (origin/quicstats.go)."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from h2lab.servers.quic import QuicLedger, QuicTotals, counted


@pytest.fixture
def answering(tmp_path: Path) -> Iterator[tuple[Path, list[bytes]]]:
    """A control socket in ``tmp_path`` that answers each connection with the next answer."""
    answers: list[bytes] = []
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(tmp_path / "control.sock"))
    server.listen()
    server.settimeout(5)

    def serve() -> None:
        while True:
            try:
                c, _ = server.accept()
            except OSError:
                return
            with c:
                c.sendall(answers.pop(0) if answers else b"")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield tmp_path, answers
    server.shutdown(socket.SHUT_RDWR)  # wakes the accept
    server.close()
    thread.join(6)


def test_totals_are_read_and_counted_between_two_readings(
    answering: tuple[Path, list[bytes]],
) -> None:
    state, answers = answering
    answers += [
        b'{"connections":1,"sent_packets":100,"lost_packets":3,"qlog_files":1}\n',
        b'{"connections":2,"sent_packets":765,"lost_packets":15,"qlog_files":2}\n',
    ]
    ledger = QuicLedger(state)
    before, after = ledger.totals(), ledger.totals()
    assert before == QuicTotals(1, 100, 3) and after == QuicTotals(2, 765, 15)
    assert counted(before, after) == (665, 12)


@pytest.mark.parametrize("answer", [b"", b"{oops\n", b'{"connections":1}\n', b"[1]\n"])
def test_an_answer_not_understood_counts_nothing(
    answering: tuple[Path, list[bytes]], answer: bytes
) -> None:
    state, answers = answering
    answers.append(answer)
    ledger = QuicLedger(state)
    assert ledger.totals() is None
    assert counted(ledger.totals(), QuicTotals(1, 2, 3)) == (None, None)


def test_no_socket_counts_nothing(tmp_path: Path) -> None:
    assert QuicLedger(tmp_path).totals() is None


def test_a_loss_taken_back_never_counts_below_zero() -> None:
    assert counted(QuicTotals(1, 10, 5), QuicTotals(1, 20, 4)) == (10, 0)


def test_the_qlogs_written_since_the_trial_began_move_into_it(tmp_path: Path) -> None:
    ledger = QuicLedger(tmp_path / "server")
    ledger.qlog_dir.mkdir(parents=True)
    old, new = ledger.qlog_dir / "a_server.sqlog", ledger.qlog_dir / "b_server.sqlog"
    old.write_text("old")
    os.utime(old, (time.time() - 60, time.time() - 60))
    since = time.time() - 1
    new.write_text("new")
    moved = ledger.take_qlogs(since, tmp_path / "trial" / "qlog")
    assert [p.name for p in moved] == ["b_server.sqlog"]
    assert (tmp_path / "trial" / "qlog" / "b_server.sqlog").read_text() == "new"
    assert sorted(p.name for p in ledger.qlog_dir.iterdir()) == ["a_server.sqlog"]
    assert QuicLedger(tmp_path / "none").take_qlogs(since, tmp_path / "x") == []


def test_the_answer_is_json_of_the_origins_fields() -> None:
    fields = {"connections", "sent_packets", "lost_packets", "qlog_files"}
    go = (Path(__file__).parents[2] / "origin" / "quicstats.go").read_text()
    assert all(f'json:"{f}"' in go for f in fields)
