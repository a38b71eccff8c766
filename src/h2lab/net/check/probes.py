"""The probes of ``h2lab net check``: TCP bulk flows (ours and iperf3), UDP loss probes and
floods, run between the lab's namespaces (sockets made by threads inside the client or servers
namespace, :func:`h2lab.net.netns.run_in_netns`, then used from ordinary threads)."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from h2lab import procs
from h2lab.errors import H2LabError
from h2lab.net import netns

TCP_PORT = 5201
UDP_PORT = 5202
SO_TIMESTAMPNS = 35
"""Linux's option (and control message type) for each datagram's arrival time as the kernel
saw it, on CLOCK_REALTIME (not in Python's socket module)."""
_TIMESPEC = struct.Struct("=qq")
STAMPS_ON_S = 0.05
"""Linux turns receive timestamps on for the machine in a deferred work item when the first
socket asks: until it ran, a datagram is stamped when it is read."""


def _socket_in(ns: str, kind: int) -> socket.socket:
    return netns.run_in_netns(ns, lambda: socket.socket(socket.AF_INET, kind))


def bulk_tcp(
    sender_ns: str, receiver_ns: str, receiver_ip: str, seconds: float
) -> list[tuple[float, int]]:
    """Send as fast as TCP allows for ``seconds``; return the receiver's (time, bytes) samples.

    Both ends stop at the deadline (the sender resets the connection rather than draining its
    buffers, which would take tens of seconds on a slow link).
    """
    listener = _socket_in(receiver_ns, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((receiver_ip, TCP_PORT))
    listener.listen(1)
    sender = _socket_in(sender_ns, socket.SOCK_STREAM)
    samples: list[tuple[float, int]] = []
    deadline = time.monotonic() + seconds + 5  # set again once connected

    def receive() -> None:
        conn, _ = listener.accept()
        conn.settimeout(0.2)
        buf = bytearray(1 << 20)
        total = 0
        t0 = time.perf_counter()
        with conn:
            while time.perf_counter() - t0 < seconds:
                try:
                    n = conn.recv_into(buf)
                except TimeoutError:
                    continue
                except OSError:
                    break
                if n == 0:
                    break
                total += n
                samples.append((time.perf_counter() - t0, total))

    rx = threading.Thread(target=receive)
    rx.start()
    try:
        sender.settimeout(10)
        sender.connect((receiver_ip, TCP_PORT))
        sender.settimeout(0.2)
        deadline = time.monotonic() + seconds
        chunk = memoryview(b"\0" * (1 << 16))
        while time.monotonic() < deadline:
            try:
                sender.send(chunk)
            except TimeoutError:
                continue
            except OSError:
                break
    finally:
        # linger 0: close with RST, dropping what is still buffered
        sender.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sender.close()
        rx.join(timeout=seconds + 30)
        listener.close()
    return samples


def iperf_goodput_bps(
    client_ns: str, servers_ns: str, server_ip: str, seconds: float, *, download: bool
) -> float:
    """TCP goodput of one iperf3 flow (``download``: servers -> client), excluding the first
    40% of the flow (slow start), as iperf3 received it."""
    omit = max(1, round(seconds * 0.4))
    server = procs.spawn(
        netns.exec_argv(servers_ns, ["iperf3", "-s", "-1", "-B", server_ip, "-p", str(TCP_PORT)])
    )
    try:
        procs.wait_until(
            "iperf3 server listening",
            lambda: netns.is_listening(servers_ns, server_ip, TCP_PORT),
            timeout_s=10,
        )
        argv = ["iperf3", "-c", server_ip, "-p", str(TCP_PORT), "-J", "-t", f"{seconds:g}"]
        argv += ["-O", str(omit), *(["-R"] if download else [])]
        out = procs.run(netns.exec_argv(client_ns, argv), timeout_s=seconds + omit + 30)
    finally:
        procs.stop(server, grace_s=2)
    result = json.loads(out)
    if "error" in result or "sum_received" not in result.get("end", {}):
        raise H2LabError(f"iperf3 failed: {result.get('error', 'no result')}")
    return float(result["end"]["sum_received"]["bits_per_second"])


@dataclass(frozen=True)
class UdpProbe:
    sent: int
    lost_seq: tuple[int, ...]
    send_times_s: tuple[float, ...]
    """send time of each sequence number, seconds since the probe started"""
    arrivals: tuple[tuple[int, float], ...] = ()
    """(sequence number, one-way delay ms) of each datagram received, in arrival order: the
    kernel's arrival time less the send time, both of the machine's CLOCK_REALTIME (the
    namespaces share it)"""


@contextmanager
def _udp_pair(
    sender_ns: str,
    receiver_ns: str,
    receiver_ip: str,
    on_datagram: Callable[[bytes, int], None],
    rcvbuf_bytes: int,
) -> Iterator[socket.socket]:
    """A UDP receiver bound in ``receiver_ns`` (each datagram to ``on_datagram`` with its arrival
    time, on its own thread) and a sender socket in ``sender_ns``; both closed on exit.

    The arrival time is the kernel's (``SO_TIMESTAMPNS``, ns since the epoch), not when this
    thread got to read it: on a busy machine the reader wakes late, and one 50 ms wait held 50
    datagrams of a 1000/s probe that long, which doubled a 2 ms delay spread."""
    rx = _socket_in(receiver_ns, socket.SOCK_DGRAM)
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf_bytes)
    rx.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    time.sleep(STAMPS_ON_S)
    rx.bind((receiver_ip, UDP_PORT))
    rx.settimeout(0.2)
    tx = _socket_in(sender_ns, socket.SOCK_DGRAM)
    done = threading.Event()

    def receive() -> None:
        while not done.is_set():
            try:
                on_datagram(*receive_stamped(rx))
            except TimeoutError:
                continue

    t = threading.Thread(target=receive)
    t.start()
    try:
        yield tx
    finally:
        done.set()
        t.join(timeout=5)
        rx.close()
        tx.close()


def receive_stamped(rx: socket.socket) -> tuple[bytes, int]:
    """A datagram and when it arrived (ns since the epoch), from a socket with
    ``SO_TIMESTAMPNS`` set: the kernel's time, now should a datagram come without it."""
    data, ancillary, _, _ = rx.recvmsg(2048, socket.CMSG_SPACE(_TIMESPEC.size))
    for level, kind, stamp in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(stamp) >= _TIMESPEC.size:
            sec, nsec = _TIMESPEC.unpack_from(stamp)
            return data, sec * 1_000_000_000 + nsec
    return data, time.time_ns()


def _pace_until(target: float, slice_s: float) -> float:
    """Sleep in slices until ``time.perf_counter()`` reaches ``target``; return the time."""
    while (now := time.perf_counter()) < target:
        time.sleep(min(slice_s, target - now))
    return now


def udp_probe(
    sender_ns: str,
    receiver_ns: str,
    receiver_ip: str,
    count: int,
    pps: float,
    payload_bytes: int = 64,
    settle_s: float = 1.5,
) -> UdpProbe:
    """``count`` numbered datagrams at ``pps``: which never arrived, and the one-way delay and
    arrival order of the others."""
    received: set[int] = set()
    arrivals: list[tuple[int, float]] = []
    times: list[float] = []

    def on_datagram(data: bytes, arrived_ns: int) -> None:
        seq, sent_ns = struct.unpack_from("!Iq", data)
        received.add(seq)
        arrivals.append((seq, (arrived_ns - sent_ns) / 1e6))

    with _udp_pair(sender_ns, receiver_ns, receiver_ip, on_datagram, 4 << 20) as tx:
        pad = b"\0" * max(0, payload_bytes - 12)
        t0 = time.perf_counter()
        for seq in range(count):
            sent = _pace_until(t0 + seq / pps, 0.002)
            times.append(sent - t0)
            tx.sendto(struct.pack("!Iq", seq, time.time_ns()) + pad, (receiver_ip, UDP_PORT))
        time.sleep(settle_s)
    return UdpProbe(
        sent=count,
        lost_seq=tuple(s for s in range(count) if s not in received),
        send_times_s=tuple(times),
        arrivals=tuple(arrivals),
    )


def udp_flood_receive(
    sender_ns: str, receiver_ns: str, receiver_ip: str, rate_bps: float, seconds: float
) -> tuple[float, list[tuple[float, int]]]:
    """Send 1200-byte datagrams at ``rate_bps`` for ``seconds``.

    Returns (monotonic start time, [(arrival s since start, IP bytes)]); the start is the first
    datagram's send (a cellular trace's clock starts at the first packet through it).
    """
    arrived: list[tuple[int, int]] = []

    def on_datagram(data: bytes, arrived_ns: int) -> None:
        arrived.append((arrived_ns, len(data) + 28))  # + IP/UDP headers

    with _udp_pair(sender_ns, receiver_ns, receiver_ip, on_datagram, 8 << 20) as tx:
        payload = b"\0" * 1200
        interval = (len(payload) + 28) * 8 / rate_bps
        start = time.perf_counter()
        start_mono = time.monotonic()
        start_ns = time.time_ns()
        for i in range(int(seconds / interval)):
            _pace_until(start + i * interval, 0.001)
            tx.sendto(payload, (receiver_ip, UDP_PORT))
        time.sleep(1.0)
    return start_mono, [((ns - start_ns) / 1e9, size) for ns, size in arrived]


def process_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime + stime
    return ticks / 100.0  # USER_HZ is 100 on Linux
