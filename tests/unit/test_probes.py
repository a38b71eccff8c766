"""net check's UDP probes time each datagram's arrival as the kernel saw it, not when the
probe's reader got to it (a busy machine wakes the reader late)."""

from __future__ import annotations

import socket
import time

from h2lab.net.check.probes import SO_TIMESTAMPNS, STAMPS_ON_S, receive_stamped


def test_a_datagram_read_late_keeps_the_time_it_arrived() -> None:
    with (
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rx,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx,
    ):
        rx.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        time.sleep(STAMPS_ON_S)
        rx.bind(("127.0.0.1", 0))
        rx.settimeout(5)
        sent_ns = time.time_ns()
        tx.sendto(b"probe", rx.getsockname())
        time.sleep(0.3)  # the reader is late
        data, arrived_ns = receive_stamped(rx)
        read_ns = time.time_ns()
    assert data == b"probe"
    assert 0 <= arrived_ns - sent_ns < 100_000_000  # within 100 ms of sending
    assert read_ns - arrived_ns >= 300_000_000  # not when it was read


def test_a_socket_without_timestamps_gives_the_time_it_was_read() -> None:
    with (
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rx,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx,
    ):
        rx.bind(("127.0.0.1", 0))
        rx.settimeout(5)
        tx.sendto(b"probe", rx.getsockname())
        time.sleep(0.1)
        before = time.time_ns()
        _, arrived_ns = receive_stamped(rx)
    assert arrived_ns >= before
