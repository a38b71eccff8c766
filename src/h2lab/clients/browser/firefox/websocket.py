"""A small synchronous WebSocket client (RFC 6455): what WebDriver BiDi needs and no more.

Text messages only (BiDi sends JSON), no extensions, no subprotocol; pings are answered, a
fragmented message is reassembled, a close frame ends the connection. The framing is pure
(:func:`encode_frame`, :func:`handshake_request`, :func:`accept_key`) and unit-tested; the
socket is the caller's (h2lab opens it inside the client namespace, where the browser's
loopback port is). h2lab has no WebSocket library among its dependencies, and BiDi's use of
one is small enough not to add it.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import socket
import struct
import threading

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
"""RFC 6455 section 1.3: what the server appends to the key before hashing it."""

TEXT, BINARY, CLOSE, PING, PONG, CONTINUATION = 0x1, 0x2, 0x8, 0x9, 0xA, 0x0
MAX_HEADER_BYTES = 16_384
"""Longest handshake answer read (Firefox's is about 200 bytes)."""


class WebSocketClosed(Exception):
    """The connection ended (a close frame, EOF or a socket error); ``fault``: because the
    peer sent what no browser would (a message past :data:`MAX_MESSAGE_BYTES`)."""

    def __init__(self, reason: str, *, fault: bool = False) -> None:
        super().__init__(reason)
        self.fault = fault


MAX_MESSAGE_BYTES = 512 << 20
"""Longest message read (frames of one message together); past it the connection ends."""


def accept_key(key: str) -> str:
    """The ``Sec-WebSocket-Accept`` a server must answer ``key`` with (RFC 6455 4.2.2)."""
    return base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()


def handshake_request(host: str, path: str, key: str) -> bytes:
    """The opening GET of a WebSocket client, without Origin (Firefox's remote agent refuses
    requests that carry one)."""
    return (
        f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    ).encode()


def encode_frame(opcode: int, payload: bytes, mask: bytes) -> bytes:
    """One final frame from the client: masked with the 4-byte ``mask`` (RFC 6455 5.3)."""
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
    return head + mask + _masked(payload, mask)


def _masked(payload: bytes, mask: bytes) -> bytes:
    n = len(payload)
    key = (mask * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(n, "big")


class WebSocket:
    """A client connection over ``sock``, after :meth:`open`. Any thread may :meth:`send`;
    one thread calls :meth:`receive`."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._lock = threading.Lock()
        self._buffer = b""

    @classmethod
    def open(cls, sock: socket.socket, host: str, path: str) -> WebSocket:
        """Do the opening handshake on a connected ``sock`` (WebSocketClosed if refused)."""
        ws = cls(sock)
        key = base64.b64encode(os.urandom(16)).decode()
        sock.sendall(handshake_request(host, path, key))
        while b"\r\n\r\n" not in ws._buffer:
            if len(ws._buffer) > MAX_HEADER_BYTES:
                raise WebSocketClosed("handshake answer too long")
            ws._fill()
        head, ws._buffer = ws._buffer.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        if " 101 " not in f"{lines[0]} ":
            raise WebSocketClosed(f"handshake refused: {lines[0]}")
        headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines)}
        if headers.get("sec-websocket-accept") != accept_key(key):
            raise WebSocketClosed("handshake answer has the wrong Sec-WebSocket-Accept")
        return ws

    def send(self, text: str) -> None:
        """Send one text message (WebSocketClosed when the connection is gone)."""
        self._write(TEXT, text.encode())

    def _write(self, opcode: int, payload: bytes) -> None:
        frame = encode_frame(opcode, payload, os.urandom(4))
        with self._lock:
            try:
                self._sock.sendall(frame)
            except OSError as exc:
                raise WebSocketClosed(str(exc)) from None

    def receive(self) -> str:
        """The next text message, pings answered on the way (WebSocketClosed at the end)."""
        parts: list[bytes] = []
        size = 0
        while True:
            fin, opcode, payload = self._frame()
            size += len(payload)
            if size > MAX_MESSAGE_BYTES:
                raise WebSocketClosed(f"a message over {MAX_MESSAGE_BYTES} bytes", fault=True)
            if opcode == PING:
                self._write(PONG, payload)
            elif opcode == CLOSE:
                raise WebSocketClosed("closed by the peer")
            elif opcode in (TEXT, BINARY, CONTINUATION):
                parts.append(payload)
                if fin:
                    return b"".join(parts).decode()

    def close(self) -> None:
        """Close the socket (a reader blocked in :meth:`receive` gets WebSocketClosed)."""
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()

    def _frame(self) -> tuple[bool, int, bytes]:
        b0, b1 = self._take(2)
        n = b1 & 0x7F
        if n == 126:
            (n,) = struct.unpack("!H", self._take(2))
        elif n == 127:
            (n,) = struct.unpack("!Q", self._take(8))
        if n > MAX_MESSAGE_BYTES:
            raise WebSocketClosed(f"a frame of {n} bytes", fault=True)
        mask = self._take(4) if b1 & 0x80 else b""
        payload = self._take(n)
        return bool(b0 & 0x80), b0 & 0x0F, _masked(payload, mask) if mask else payload

    def _take(self, n: int) -> bytes:
        while len(self._buffer) < n:
            self._fill()
        data, self._buffer = self._buffer[:n], self._buffer[n:]
        return data

    def _fill(self) -> None:
        try:
            chunk = self._sock.recv(1 << 20)
        except OSError as exc:
            raise WebSocketClosed(str(exc)) from None
        if not chunk:
            raise WebSocketClosed("connection closed")
        self._buffer += chunk
