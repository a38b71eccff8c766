"""What a server tells a trial of its connections: the packets its QUIC connections sent and
lost, the congestion control and initial window its QUIC stack ran, the congestion control the
kernel gave each TCP connection it accepted, and the qlog files it wrote. The origin answers on
a Unix socket in its state folder (``control.sock``, origin/quicstats.go): one JSON line of
totals since it started, its open qlog files flushed before it answers. A trial reads the
totals before and after its load, as it reads TCP's retransmits from the kernel
(:mod:`h2lab.runner.trial`).
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from h2lab.metrics.qlog import take_written_since

CONTROL_SOCKET = "control.sock"
QLOG_DIR = "qlog"
"""The folder of the server's qlog files in its state folder, one per QUIC connection."""
ANSWER_MAX_BYTES = 4096
TIMEOUT_S = 2.0
"""Longest wait for the answer (a server too busy to answer in it leaves the count None)."""


@dataclass(frozen=True)
class QuicTotals:
    """A server's counts since it started, over all its QUIC connections; what its QUIC stack's
    last sender was made with; its accepted TCP connections by congestion control."""

    connections: int
    sent_packets: int | None
    """None: the server does not count them (ngtcp2's example server: its qlog files are
    buffered until a connection closes)"""
    lost_packets: int | None
    cc: str = ""
    """``reno`` or ``cubic`` (quic-go's names); "": no connection yet"""
    initial_window_bytes: int = 0
    tcp_cc: tuple[tuple[str, int], ...] = ()
    """(algorithm, connections accepted with it so far), by name"""


class QuicLedger:
    """A server's QUIC counts and qlog files, read over its control socket at ``state_dir``."""

    def __init__(self, state_dir: Path) -> None:
        self.socket = state_dir / CONTROL_SOCKET
        self.qlog_dir = state_dir / QLOG_DIR

    def totals(self) -> QuicTotals | None:
        """The totals now (the open qlog files flushed); None when the server does not answer
        (no socket: its path too long for one; or not in :data:`TIMEOUT_S`)."""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(TIMEOUT_S)
                s.connect(str(self.socket))
                data = b""
                while len(data) < ANSWER_MAX_BYTES and not data.endswith(b"\n"):
                    chunk = s.recv(ANSWER_MAX_BYTES)
                    if not chunk:
                        break
                    data += chunk
            return _totals(json.loads(data))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def watch(self) -> None:
        """Called after the reading before a load: a server whose connections are gone once
        they close (HAProxy's) starts watching them; the others need nothing."""

    def unwatch(self) -> None:
        """Called before the reading after the load: the watch ends."""

    def take_qlogs(self, since_s: float, into: Path) -> list[Path]:
        """Move the qlog files written since ``since_s`` (a ``time.time()``) into ``into``: a
        trial's connections'. Call :meth:`totals` first: it flushes them."""
        return take_written_since(self.qlog_dir, since_s, into)


class QlogOnly(QuicLedger):
    """A server that writes qlog files into ``state_dir/qlog`` and tells no counts (Caddy
    2.11: no control socket, its files flushed as each connection closes)."""

    def totals(self) -> QuicTotals | None:
        return None


def _totals(answer: dict[str, Any]) -> QuicTotals:
    tcp = answer.get("tcp_cc") or {}
    return QuicTotals(
        int(answer["connections"]), int(answer["sent_packets"]), int(answer["lost_packets"]),
        cc=str(answer.get("cc", ""))[:20],
        initial_window_bytes=int(answer.get("initial_window_bytes", 0)),
        tcp_cc=tuple(sorted((str(k)[:20], int(v)) for k, v in dict(tcp).items()))[:16],
    )  # fmt: skip


def tcp_congestion(before: QuicTotals | None, after: QuicTotals | None) -> str | None:
    """The congestion controls of the TCP connections accepted between two readings, joined
    by ``+`` (``cubic``); None unless both were read and some were accepted."""
    if before is None or after is None:
        return None
    earlier = dict(before.tcp_cc)
    names = [name for name, n in after.tcp_cc if n > earlier.get(name, 0)]
    return "+".join(names) or None


QUIC_GO_NAMES = {"reno": "newreno", "cubic": "cubic"}
"""quic-go's senders by the names h2lab uses (its Reno is NewReno as RFC 9002 gives it)."""


def counted(before: QuicTotals | None, after: QuicTotals | None) -> tuple[int | None, int | None]:
    """(sent, lost) packets between two readings; (None, None) unless both were read and
    counted them. Lost can fall (quic-go takes back a loss when the packet was only late): it
    stays at least 0."""
    if before is None or after is None:
        return None, None
    sent_0, sent_1 = before.sent_packets, after.sent_packets
    lost_0, lost_1 = before.lost_packets, after.lost_packets
    if sent_0 is None or sent_1 is None or lost_0 is None or lost_1 is None:
        return None, None
    return max(0, sent_1 - sent_0), max(0, lost_1 - lost_0)
