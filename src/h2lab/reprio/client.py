"""A scripted HTTP/2 client for the reprioritization test (docs/servers.md, "Reprioritization").

No client h2lab drives can ask for one resource *later* than the others on the same connection
with priorities of its choosing: h2load sends no priorities, nghttp sends every URI it is given
at once (``-p`` only sets weights), and a browser's timing is the page's. This client opens one
HTTP/2 connection over TLS (ALPN ``h2``), asks for the low-priority resources at once, waits
until it has received ``late_after_bytes`` of their DATA, then asks for the high-priority one,
and records when every DATA frame of every stream arrived.

Priorities are RFC 7540 §5.3 priority fields on the HEADERS frames, as Chromium sends them for
a late high-priority request: the low-priority streams depend on the root, non-exclusively, with
weight :data:`LOW_WEIGHT`; the high-priority stream depends on the root *exclusively* with
weight 256, so every stream already open becomes its child (§5.3.3): a server that follows the
tree sends nothing of them while it has data of the high-priority one.

Windows as Chromium's (``SETTINGS_INITIAL_WINDOW_SIZE`` 6 MiB, connection window 15 MiB), so
flow control never holds a response back here, and the order on the wire is the server's.

The frame codec is pure (:func:`frame`, :func:`request_headers`, :class:`FrameReader`); only
:func:`fetch` does I/O, and it is meant to be called in the client namespace
(:func:`h2lab.net.netns.run_in_netns`).
"""

from __future__ import annotations

import socket
import ssl
import struct
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from h2lab.errors import H2LabError

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE = (
    0, 1, 2, 3, 4, 5, 6, 7, 8,
)  # fmt: skip
PRIORITY_UPDATE = 0x10
"""RFC 9218 §7.1"""
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY_FLAG = 0x1, 0x1, 0x4, 0x8, 0x20
SETTINGS_ENABLE_PUSH, SETTINGS_INITIAL_WINDOW_SIZE = 0x2, 0x4

STREAM_WINDOW_BYTES = 6 * 1024 * 1024
"""Chromium's SETTINGS_INITIAL_WINDOW_SIZE (net/spdy: kSpdyStreamMaxRecvWindowSize, 6 MiB)."""
CONNECTION_WINDOW_BYTES = 15 * 1024 * 1024
"""Chromium's connection receive window (kSpdySessionMaxRecvWindowSize, 15 MiB)."""
DEFAULT_WINDOW_BYTES = 65_535  # RFC 7540 §6.9.2
LOW_WEIGHT = 16
"""RFC 7540's default weight (§5.3.5): what a client that says nothing more gets."""
HIGH_WEIGHT = 256
STATUS_200 = 0x88
"""``:status: 200`` as the HPACK static table's index 8 (RFC 7541 Appendix A), how every
server here encodes it."""


def frame(kind: int, flags: int, stream_id: int, payload: bytes) -> bytes:
    """One HTTP/2 frame (RFC 7540 §4.1)."""
    return (
        struct.pack(">I", len(payload))[1:]
        + bytes([kind, flags])
        + struct.pack(">I", stream_id & 0x7FFFFFFF)
        + payload
    )


def _literal(text: bytes) -> bytes:
    """An HPACK string literal, not Huffman coded (RFC 7541 §5.2), lengths below 127."""
    if len(text) >= 127:
        raise ValueError(f"header text longer than 126 bytes: {text[:40]!r}")
    return bytes([len(text)]) + text


def request_headers(authority: str, path: str, priority: str | None = None) -> bytes:
    """The header block of a GET: literal fields without indexing, new names (RFC 7541
    §6.2.2), so the block needs no state shared with the server; with an RFC 9218 priority
    field if given."""
    fields = [
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", authority.encode()),
        (b":path", path.encode()),
    ]
    if priority is not None:
        fields.append((b"priority", priority.encode()))
    return b"".join(b"\x00" + _literal(k) + _literal(v) for k, v in fields)


def priority_field(depends_on: int, weight: int, exclusive: bool) -> bytes:
    """The 5-byte priority of a HEADERS or PRIORITY frame (RFC 7540 §6.2-6.3)."""
    if not 1 <= weight <= 256:
        raise ValueError(f"weight must be 1..256, got {weight}")
    return struct.pack(">I", depends_on | (0x80000000 if exclusive else 0)) + bytes([weight - 1])


def priority_update(stream_id: int, value: str) -> bytes:
    """A PRIORITY_UPDATE frame for ``stream_id`` (RFC 9218 §7.1)."""
    return frame(PRIORITY_UPDATE, 0, 0, struct.pack(">I", stream_id) + value.encode())


def settings(*pairs: tuple[int, int]) -> bytes:
    return frame(SETTINGS, 0, 0, b"".join(struct.pack(">HI", k, v) for k, v in pairs))


def window_update(stream_id: int, increment: int) -> bytes:
    return frame(WINDOW_UPDATE, 0, stream_id, struct.pack(">I", increment))


@dataclass(frozen=True)
class Frame:
    kind: int
    flags: int
    stream_id: int
    payload: bytes

    @property
    def data_bytes(self) -> int:
        """A DATA frame's data (without padding); 0 for other frames."""
        if self.kind != DATA:
            return 0
        if self.flags & PADDED and self.payload:
            return len(self.payload) - 1 - self.payload[0]
        return len(self.payload)


class FrameReader:
    """Bytes in, frames out."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> Iterator[Frame]:
        self._buf += data
        while len(self._buf) >= 9:
            length = int.from_bytes(self._buf[0:3], "big")
            if len(self._buf) < 9 + length:
                return
            kind, flags = self._buf[3], self._buf[4]
            stream_id = int.from_bytes(self._buf[5:9], "big") & 0x7FFFFFFF
            payload = bytes(self._buf[9 : 9 + length])
            del self._buf[: 9 + length]
            yield Frame(kind, flags, stream_id, payload)


@dataclass(frozen=True)
class Request:
    path: str
    weight: int
    exclusive: bool = False
    priority: str | None = None
    """RFC 9218 priority field, if any"""
    update: str | None = None
    """a PRIORITY_UPDATE sent right after the request, if any"""


@dataclass
class StreamLog:
    """One stream: when it was asked for and when its bytes came (ms from the first request)."""

    path: str
    stream_id: int
    weight: int
    exclusive: bool
    requested_ms: float
    late: bool = False
    """asked for once the early ones had sent ``late_after_bytes``"""
    headers_ms: float | None = None
    status_200: bool = False
    ended_ms: float | None = None
    bytes: int = 0
    arrivals: list[tuple[float, int]] = field(default_factory=list)
    """(ms, bytes) per DATA frame"""
    reset: int | None = None
    """the RST_STREAM error code, if the server reset it"""
    unacked_bytes: int = 0
    """DATA bytes not yet given back with a WINDOW_UPDATE"""

    @property
    def duration_ms(self) -> float:
        """Request sent -> last byte (END_STREAM)."""
        if self.ended_ms is None:
            raise H2LabError(f"stream {self.stream_id} ({self.path}) did not end")
        return self.ended_ms - self.requested_ms


@dataclass(frozen=True)
class Plan:
    """What the client asks for and when."""

    authority: str
    low: tuple[str, ...]
    """paths asked for at once, weight :data:`LOW_WEIGHT`"""
    high: str
    """the path asked for late, exclusive on the root, weight 256"""
    late_after_bytes: int
    """low-priority DATA bytes received before the high-priority request goes out"""
    stream_window_bytes: int = STREAM_WINDOW_BYTES
    """SETTINGS_INITIAL_WINDOW_SIZE; each stream's window is given back when half used"""
    also_high: tuple[str, ...] = ()
    """more paths asked for late, after :attr:`high`"""
    low_priority: str | None = None
    """the RFC 9218 priority field of the early requests (none: RFC 7540 weights only)"""
    high_priority: str | None = None
    """... of the late ones"""
    high_update: str | None = None
    """a PRIORITY_UPDATE for each late request, sent right after it"""
    rfc7540: bool = True
    """send RFC 7540 priority fields (weights, exclusive) on the HEADERS frames; False: none,
    so every stream has RFC 7540's default and only the RFC 9218 signals tell them apart"""

    def requests(self) -> tuple[list[Request], list[Request]]:
        low = [Request(p, LOW_WEIGHT, priority=self.low_priority) for p in self.low]
        # several late requests do not each take the others' place at the root (RFC 7540)
        exclusive = not self.also_high
        high = [
            Request(p, HIGH_WEIGHT, exclusive, self.high_priority, self.high_update)
            for p in (self.high, *self.also_high)
        ]
        return low, high


class Session:
    """The client's side of one connection, no I/O: frames in, bytes to send out."""

    def __init__(self, plan: Plan, now_ms: float) -> None:
        self.plan = plan
        self.t0_ms = now_ms
        self.streams: dict[int, StreamLog] = {}
        self._next_id = 1
        self.low_bytes = 0
        self.late_sent = False
        self.goaway: int | None = None
        self._unacked_bytes = 0

    def start(self) -> bytes:
        """Preface, SETTINGS, the connection window, and the low-priority requests."""
        out = PREFACE + settings(
            (SETTINGS_ENABLE_PUSH, 0),
            (SETTINGS_INITIAL_WINDOW_SIZE, self.plan.stream_window_bytes),
        )
        out += window_update(0, CONNECTION_WINDOW_BYTES - DEFAULT_WINDOW_BYTES)
        low, _ = self.plan.requests()
        return out + b"".join(self._request(r, self.t0_ms) for r in low)

    def _request(self, req: Request, now_ms: float, late: bool = False) -> bytes:
        sid = self._next_id
        self._next_id += 2
        self.streams[sid] = StreamLog(
            req.path, sid, req.weight, req.exclusive, now_ms - self.t0_ms, late
        )
        block = request_headers(self.plan.authority, req.path, req.priority)
        flags = END_STREAM | END_HEADERS
        if self.plan.rfc7540:
            block = priority_field(0, req.weight, req.exclusive) + block
            flags |= PRIORITY_FLAG
        out = frame(HEADERS, flags, sid, block)
        if req.update is not None:
            out += priority_update(sid, req.update)
        return out

    def receive(self, f: Frame, now_ms: float) -> bytes:
        """Handle one frame from the server; the bytes to send in answer."""
        t = now_ms - self.t0_ms
        s = self.streams.get(f.stream_id)
        out = b""
        if f.kind == SETTINGS and not f.flags & ACK:
            out += frame(SETTINGS, ACK, 0, b"")
        elif f.kind == PING and not f.flags & ACK:
            out += frame(PING, ACK, 0, f.payload)
        elif f.kind == GOAWAY:
            self.goaway = int.from_bytes(f.payload[4:8], "big")
        elif f.kind == RST_STREAM and s is not None:
            s.reset = int.from_bytes(f.payload[:4], "big")
        elif f.kind == HEADERS and s is not None and s.headers_ms is None:
            s.headers_ms = t
            s.status_200 = _status_is_200(f)
        elif f.kind == DATA and s is not None:
            n = f.data_bytes
            s.bytes += n
            s.arrivals.append((t, n))
            if s.weight == LOW_WEIGHT:
                self.low_bytes += n
            out += self._credit(s, len(f.payload))
        if s is not None and f.kind in (HEADERS, DATA) and f.flags & END_STREAM:
            s.ended_ms = t
        if not self.late_sent and self.low_bytes >= self.plan.late_after_bytes:
            self.late_sent = True
            out += b"".join(self._request(r, now_ms, True) for r in self.plan.requests()[1])
        return out

    def _credit(self, s: StreamLog, n: int) -> bytes:
        """Give the connection window back in 1 MiB steps, a stream's when half of it is used
        (with Chromium's 6 MiB, never here)."""
        out = b""
        self._unacked_bytes += n
        if self._unacked_bytes >= 1024 * 1024:
            out += window_update(0, self._unacked_bytes)
            self._unacked_bytes = 0
        s.unacked_bytes += n
        if s.unacked_bytes >= self.plan.stream_window_bytes // 2 and s.ended_ms is None:
            out += window_update(s.stream_id, s.unacked_bytes)
            s.unacked_bytes = 0
        return out

    @property
    def done(self) -> bool:
        every = len(self.streams) == len(self.plan.low) + 1 + len(self.plan.also_high)
        return every and all(
            s.ended_ms is not None or s.reset is not None for s in self.streams.values()
        )


def _status_is_200(f: Frame) -> bool:
    block = f.payload
    if f.flags & PADDED:
        block = block[1 : len(block) - block[0]]
    if f.flags & PRIORITY_FLAG:
        block = block[5:]
    return bool(block) and block[0] == STATUS_200


@dataclass(frozen=True)
class Target:
    ip: str
    port: int
    host: str
    """SNI and ``:authority``"""
    ca_file: Path


def fetch(target: Target, plan: Plan, timeout_s: float) -> list[StreamLog]:
    """Run ``plan`` over one TLS connection to ``target``; every stream's log, in stream
    order. Raises :class:`H2LabError` when the server does not negotiate h2, sends GOAWAY
    with an error, or the plan is not done within ``timeout_s``."""
    ctx = ssl.create_default_context(cafile=str(target.ca_file))
    ctx.set_alpn_protocols(["h2"])
    deadline = time.monotonic() + timeout_s
    with (
        socket.create_connection((target.ip, target.port), timeout=timeout_s) as raw,
        ctx.wrap_socket(raw, server_hostname=target.host) as sock,
    ):
        if sock.selected_alpn_protocol() != "h2":
            raise H2LabError(f"{target.host}: ALPN chose {sock.selected_alpn_protocol()!r}")
        session = Session(plan, _now_ms())
        sock.sendall(session.start())
        reader = FrameReader()
        while not session.done:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = sock.recv(256 * 1024)
            except TimeoutError:
                raise H2LabError(f"{target.host}: plan not done after {timeout_s} s") from None
            if not data:
                raise H2LabError(f"{target.host}: connection closed before every stream ended")
            now = _now_ms()
            out = b"".join(session.receive(f, now) for f in reader.feed(data))
            if session.goaway:
                raise H2LabError(f"{target.host}: GOAWAY with error {session.goaway}")
            if out:
                sock.sendall(out)
    return sorted(session.streams.values(), key=lambda s: s.stream_id)


def _now_ms() -> float:
    return time.monotonic() * 1000


def summary(streams: Sequence[StreamLog]) -> str:
    """One line per stream: path, weight, request -> last byte."""
    return "\n".join(
        f"{s.path} w{s.weight}{' excl' if s.exclusive else ''}: requested {s.requested_ms:.0f}, "
        f"done {s.ended_ms or float('nan'):.0f} ms, {s.bytes} B"
        for s in streams
    )
