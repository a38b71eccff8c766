"""What a trial captures on the client's end of its link besides the client's own figures: the
whole packet capture (``capture = ["pcap"]``, with the TLS keys beside it), and a repeat view's
QUIC 0-RTT packets (``early_data_packets``); and on the server's end, its QUIC connections'
packets sent and lost and their qlog files (``capture = ["qlog"]``)."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Protocol

from h2lab.artifacts import (
    CAPTURE_KEYLOG,
    CAPTURE_LOG,
    CAPTURE_PCAP,
    EARLY_DATA_LOG,
    EARLY_DATA_PCAP,
    QLOG_DIR,
)
from h2lab.errors import H2LabError
from h2lab.metrics.counters import parse_dev
from h2lab.net import netns
from h2lab.net.capture import PacketCapture
from h2lab.runner.matrix import TrialSpec
from h2lab.servers import Serving
from h2lab.servers.quic import QUIC_GO_NAMES, QuicTotals, counted, tcp_congestion
from h2lab.spec.experiment import Capture
from h2lab.spec.protocols import QUIC, TLS_OVER_TCP


class ClientSide(Protocol):
    @property
    def client_ns(self) -> str:
        """the client namespace, where the link's client end is"""
        ...


def client_iface(devs: Mapping[str, object]) -> str:
    """The client namespace's end of the Rattan link among its devices (its one ``vL1-L*``)."""
    names = [n for n in devs if n.startswith("vL1-L")]
    if len(names) != 1:
        raise H2LabError(f"client namespace has no single Rattan veth: {sorted(devs)}")
    return names[0]


def trial_keylog(artifacts: Path, protocol: str, capture: tuple[Capture, ...]) -> Path | None:
    """Where a trial's client leaves its TLS keys: beside its capture, when it has one and
    speaks TLS (over TCP or QUIC); None otherwise."""
    if "pcap" in capture and protocol in TLS_OVER_TCP | QUIC:
        return artifacts / CAPTURE_KEYLOG
    return None


def trial_qlog_dir(artifacts: Path, protocol: str, capture: tuple[Capture, ...]) -> Path | None:
    """Where an h3 trial's qlog files go (``"qlog"`` captured); None otherwise."""
    return artifacts / QLOG_DIR if "qlog" in capture and protocol in QUIC else None


class ServerCounts:
    """What a trial's server tells of its connections during the load (read before and after
    it: :class:`~h2lab.servers.quic.QuicLedger`): over h3 the QUIC packets sent and lost and
    what its QUIC stack ran, the congestion control of the TCP connections it accepted; and
    its qlog files, moved into the trial's (the client's own go there too). A server that
    tells nothing gives the namespace's TCP congestion control (the kernel's, which every
    socket it accepts takes: no h2lab server sets its own) for a trial over TCP."""

    def __init__(self, serving: Serving | None, protocol: str) -> None:
        self.ledger = serving.quic if serving is not None else None
        self.protocol = protocol
        self.before: QuicTotals | None = None if self.ledger is None else self.ledger.totals()
        self.after: QuicTotals | None = None
        if self.ledger is not None:
            self.ledger.watch()

    def end(self, since_s: float, qlog_dir: Path | None) -> None:
        """After the load: the totals again (which flushes the server's qlog files), then the
        files written since ``since_s`` into ``qlog_dir`` (when qlog is captured)."""
        if self.ledger is None:
            return
        self.ledger.unwatch()
        self.after = self.ledger.totals()
        if qlog_dir is not None:
            self.ledger.take_qlogs(since_s, qlog_dir)

    def metrics(self, namespace_tcp_cc: str | None) -> dict[str, object]:
        """The trial's ``quic_*`` metrics and ``server_tcp_cc``, ``server_quic_cc``
        (``namespace_tcp_cc``: the servers namespace's, :func:`namespace_congestion`)."""
        quic = self.protocol in QUIC and self.after is not None
        sent, lost = counted(self.before, self.after) if quic else (None, None)
        ran = self.after if quic and self.after is not None and self.after.cc else None
        tcp = tcp_congestion(self.before, self.after)
        if tcp is None and self.protocol not in QUIC:
            tcp = namespace_tcp_cc
        return {
            "quic_sent_packets": sent,
            "quic_lost_packets": lost,
            "quic_initial_window_bytes": None if ran is None else ran.initial_window_bytes or None,
            "server_quic_cc": None if ran is None else QUIC_GO_NAMES.get(ran.cc, ran.cc),
            "server_tcp_cc": tcp,
        }


def namespace_congestion(ns: str) -> str | None:
    """The TCP congestion control namespace ``ns`` gives a socket (its sysctl, read there)."""
    path = Path("/proc/sys/net/ipv4/tcp_congestion_control")
    try:
        return netns.run_in_netns(ns, path.read_text).strip()[:20] or None
    except (OSError, H2LabError):
        return None


EARLY_DATA_BPF = "udp dst port 443 and udp[8] & 0xf0 = 0xd0"
"""QUIC v1 0-RTT packets (RFC 9000 §17.2.3): long header form, fixed bit, type 01, the first
byte's four high bits, which header protection leaves as they are (§5.4.1 masks the low four)."""


def early_data_capture(link: ClientSide, artifacts: Path, t: TrialSpec) -> PacketCapture | None:
    """The 0-RTT packets the client sends in a repeat view over HTTP/3 (the trial's
    ``early_data_packets``), or None: no other trial looks for them."""
    if t.protocol not in QUIC or t.factors.view != "repeat":
        return None
    iface = client_iface(parse_dev(netns.read_proc_net(link.client_ns, "dev")))
    return PacketCapture(
        link.client_ns, iface, artifacts / EARLY_DATA_PCAP, artifacts / EARLY_DATA_LOG,
        bpf=EARLY_DATA_BPF,
    )  # fmt: skip


def packet_capture(
    link: ClientSide, artifacts: Path, capture: tuple[Capture, ...]
) -> AbstractContextManager[object]:
    """tcpdump on the client's end of ``link`` into the trial's artifacts for the span of a
    ``with`` block (``"pcap"`` in ``capture``; :mod:`h2lab.net.capture`), else nothing."""
    if "pcap" not in capture:
        return nullcontext()
    iface = client_iface(parse_dev(netns.read_proc_net(link.client_ns, "dev")))
    return PacketCapture(link.client_ns, iface, artifacts / CAPTURE_PCAP, artifacts / CAPTURE_LOG)
