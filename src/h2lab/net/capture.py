"""A packet capture of one trial: tcpdump (Debian's) on the client namespace's end of the
Rattan link, started after the link is up and before the client, stopped when the trial
ends, however it ends (``capture = ["pcap"]``; the runner owns it, so it works for every
client).

What it writes, in the trial's artifacts folder (:mod:`h2lab.artifacts`):
:data:`~h2lab.artifacts.CAPTURE_PCAP`, every packet whole (no snap length: TLS records must
be whole to be decrypted), and :data:`~h2lab.artifacts.CAPTURE_LOG`, tcpdump's own lines
(``listening on``, packets captured, packets dropped by the kernel) and h2lab's line on what
the file holds.

How it ends. tcpdump writes through a stdio buffer and flushes it when it exits on SIGINT
(or SIGTERM, or the death signal if h2lab dies); :meth:`PacketCapture.stop` sends SIGINT and
waits for it. ``--immediate-mode`` hands every packet to tcpdump as it arrives: without it,
libpcap's TPACKET_V3 ring hands them over in blocks, retired when full or after tcpdump's
1 s timeout, and the packets of a block not yet retired when SIGINT comes are never written
(the last ones of the trial). ``-Z root`` keeps tcpdump root: Debian's tcpdump otherwise
changes to user ``tcpdump`` once its socket is open, which could not write into a root
folder, and a change of user clears the death signal.

Rootless mode (docs/rootless.md) captures with dumpcap (Debian's, from Wireshark) instead:
tcpdump as uid 0 always changes its user (``-Z``, else Debian's ``tcpdump``), which calls
``setgroups``, denied in an unprivileged user namespace; dumpcap changes no user. dumpcap has
no immediate mode: libpcap hands it packets in blocks retired after its 250 ms read timeout,
so :meth:`PacketCapture.stop` waits :attr:`Capturer.settle_s` before SIGINT (measured: SIGINT
right after the last ping lost its 2 last packets of 10; after 0.3 s none).

The size cap. The file may grow to :data:`PCAP_CAP_BYTES`; the kernel holds tcpdump to it
(``RLIMIT_FSIZE``, with ``SIGXFSZ`` ignored so that a write past it fails instead of killing
tcpdump). Packets after the cap are not kept, and the capture log says how many; the trial
itself goes on, measured as before. The write that meets the cap leaves half a packet at the
end, cut off when tcpdump has exited (:func:`whole_records_bytes`): the file stays a valid
pcap whose packets are all whole.
"""

from __future__ import annotations

import contextlib
import re
import signal
import struct
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from h2lab import procs
from h2lab.errors import ProcessFailed
from h2lab.net import netns, userns

PCAP_CAP_BYTES = 64 * 1024 * 1024
"""Most bytes a trial's capture file may hold: 64 MiB, some 25 times the 2.6 MB of
``synthetic:httparchive2024`` (the HTTP Archive's median desktop page). On a cluster a trial's
artifacts travel back in an archive of at most as much
(:data:`h2lab.cluster.transfer.MAX_ARTIFACTS_BYTES`), which leaves out the largest files first
(named in its ``artifacts-left-out.txt``): a capture near the cap is left out there."""

START_TIMEOUT_S = 10.0
"""Longest wait for tcpdump's ``listening on`` line (it took 0.05 s here)."""
STOP_GRACE_S = 5.0
"""How long tcpdump may take to write what it holds and exit after SIGINT before it is
killed (it took some milliseconds)."""

LISTENING = re.compile(r"listening on (\S+),")
"""tcpdump's line once its socket is open and bound: packets from then on are captured."""
COUNTS = re.compile(r"^(\d+) packets? (captured|received by filter|dropped by kernel)$", re.M)
DUMPCAP_LISTENING = re.compile(r"^Capturing on '", re.M)
DUMPCAP_CAPTURED = re.compile(r"^Packets captured: (\d+)$", re.M)
DUMPCAP_DROPPED = re.compile(
    r"^Packets received/dropped on interface .*: \d+/\d+ \(pcap:(\d+)/", re.M
)

GLOBAL_HEADER_BYTES = 24
RECORD_HEADER_BYTES = 16
MAGICS = {
    b"\xd4\xc3\xb2\xa1": "<",  # microseconds, little-endian
    b"\x4d\x3c\xb2\xa1": "<",  # nanoseconds, little-endian
    b"\xa1\xb2\xc3\xd4": ">",
    b"\xa1\xb2\x3c\x4d": ">",
}
"""pcap's magic numbers as written, and the byte order of the fields after them."""


def tcpdump_argv(iface: str, pcap: Path, bpf: str = "") -> list[str]:
    """tcpdump on ``iface``, every packet whole (those ``bpf`` takes, if given), written to
    ``pcap`` (see the module's text)."""
    return [
        "tcpdump",
        "-i",
        iface,
        "-n",  # no name lookups (there is no resolver in the lab)
        "-p",  # the interface's flags stay as they are
        "--immediate-mode",
        "-Z",
        "root",
        "-w",
        str(pcap),
        *([bpf] if bpf else []),
    ]


def dumpcap_argv(iface: str, pcap: Path, bpf: str = "") -> list[str]:
    """dumpcap on ``iface``, every packet whole (those ``bpf`` takes, if given), written to
    ``pcap`` in pcap (not pcapng) format, its closing counts only (``-q``)."""
    return [
        "dumpcap", "-i", iface, "-p", "-P", "-q", "-w", str(pcap), *(["-f", bpf] if bpf else []),
    ]  # fmt: skip


@dataclass(frozen=True)
class PcapRecords:
    """What a pcap file's records are."""

    packets: int
    """whole packets in the file"""
    whole_bytes: int
    """the file's length up to the end of its last whole packet"""


def whole_records_bytes(f: BinaryIO) -> PcapRecords:
    """The whole packets of the pcap in ``f`` (from its start), and where the last one ends:
    a file cut mid-packet (by the size cap) is valid once truncated there. Raises
    :class:`ValueError` when ``f`` is not a pcap."""
    head = f.read(GLOBAL_HEADER_BYTES)
    order = MAGICS.get(head[:4])
    if order is None or len(head) < GLOBAL_HEADER_BYTES:
        raise ValueError("not a pcap file (no pcap global header)")
    packets, end = 0, GLOBAL_HEADER_BYTES
    while True:
        record = f.read(RECORD_HEADER_BYTES)
        if len(record) < RECORD_HEADER_BYTES:
            return PcapRecords(packets, end)
        (incl_len,) = struct.unpack(order + "I", record[8:12])
        data = f.read(incl_len)
        if len(data) < incl_len:
            return PcapRecords(packets, end)
        packets += 1
        end += RECORD_HEADER_BYTES + incl_len


def tcpdump_counts(log: str) -> dict[str, int]:
    """tcpdump's closing counts (``captured``, ``received by filter``, ``dropped by kernel``)
    from its output; the ones it did not print are missing."""
    return {what: int(n) for n, what in COUNTS.findall(log)}


def dumpcap_counts(log: str) -> dict[str, int]:
    """dumpcap's closing counts under tcpdump's names (``captured``, ``dropped by kernel``)."""
    counts = {}
    if m := DUMPCAP_CAPTURED.search(log):
        counts["captured"] = int(m.group(1))
    if m := DUMPCAP_DROPPED.search(log):
        counts["dropped by kernel"] = int(m.group(1))
    return counts


@dataclass(frozen=True)
class Capturer:
    """A capture program: how it is started, says it listens, and counts at its end."""

    name: str
    argv: Callable[[str, Path, str], list[str]]
    listening: re.Pattern[str]
    counts: Callable[[str], dict[str, int]]
    settle_s: float
    """how long the last packets may take to reach its file: waited before SIGINT"""


TCPDUMP = Capturer("tcpdump", tcpdump_argv, LISTENING, tcpdump_counts, settle_s=0.0)
DUMPCAP = Capturer("dumpcap", dumpcap_argv, DUMPCAP_LISTENING, dumpcap_counts, settle_s=0.5)


def capturer() -> Capturer:
    """tcpdump in root mode, dumpcap in rootless mode (see the module's text)."""
    return DUMPCAP if userns.active() else TCPDUMP


def cap_note(records: PcapRecords, counts: dict[str, int], cut: bool, cap_bytes: int) -> str:
    """h2lab's line in the capture log: packets in the file and, when the size cap was met,
    how many packets tcpdump captured that the file could not take."""
    line = f"h2lab: {records.packets} packets in the capture ({records.whole_bytes} bytes)"
    if cut:
        captured = counts.get("captured")
        lost = "" if captured is None else f": {max(0, captured - records.packets)} not kept"
        line += f"; the size cap of {cap_bytes} bytes was reached{lost}"
    dropped = counts.get("dropped by kernel")
    if dropped:
        line += f"; {dropped} packets dropped by the kernel (not captured)"
    return line


class PacketCapture:
    """tcpdump (dumpcap in rootless mode) on interface ``iface`` of namespace ``ns`` into
    ``pcap`` (its output in ``log``), for the span of a ``with`` block: entered once it
    listens, left once it has written everything and exited, the file cut to whole packets."""

    def __init__(
        self, ns: str, iface: str, pcap: Path, log: Path, cap_bytes: int = PCAP_CAP_BYTES,
        bpf: str = "",
    ) -> None:  # fmt: skip
        self.tool = capturer()
        self.ns = ns
        self.iface = iface
        self.pcap = pcap
        self.log = log
        self.cap_bytes = cap_bytes
        self.bpf = bpf
        """a capture filter: only the packets it takes ("": every packet)"""
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> PacketCapture:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        self.pcap.parent.mkdir(parents=True, exist_ok=True)
        tool = self.tool.argv(self.iface, self.pcap, self.bpf)
        argv = netns.exec_argv(self.ns, tool)
        proc = self._proc = procs.spawn(argv, log=self.log, file_cap_bytes=self.cap_bytes)

        def listening() -> bool:
            said = self.log.read_text(errors="replace")
            if proc.poll() is not None:
                raise ProcessFailed(tool, proc.returncode, said.strip()[-600:])
            return self.tool.listening.search(said) is not None

        procs.wait_until(f"{self.tool.name} listening", listening, timeout_s=START_TIMEOUT_S)

    def stop(self) -> None:
        """SIGINT (after :attr:`Capturer.settle_s`), and wait: the capture program writes what
        it holds and exits (killed after :data:`STOP_GRACE_S`); then the file is cut to whole
        packets and the log says what it holds. Idempotent; raises nothing (it ends a trial
        that may be failing already)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            time.sleep(self.tool.settle_s)
        procs.stop(proc, grace_s=STOP_GRACE_S, sig=signal.SIGINT, group=False)
        with contextlib.suppress(OSError), self.log.open("a") as out:
            out.write(self._finish() + "\n")

    def packets(self) -> int:
        """Packets in the file once stopped (0: none, or no file)."""
        try:
            with self.pcap.open("rb") as f:
                return whole_records_bytes(f).packets
        except (OSError, ValueError):
            return 0

    def _finish(self) -> str:
        """Cut the file to whole packets; h2lab's line on what it holds."""
        if not self.pcap.exists():
            return f"h2lab: {self.tool.name} wrote no {self.pcap.name}"
        size = self.pcap.stat().st_size
        try:
            with self.pcap.open("rb") as f:
                records = whole_records_bytes(f)
        except ValueError as exc:
            return f"h2lab: {self.pcap.name} ({size} bytes): {exc}"
        if size > records.whole_bytes:
            with self.pcap.open("r+b") as f:
                f.truncate(records.whole_bytes)
        counts = self.tool.counts(self.log.read_text(errors="replace"))
        cut = size >= self.cap_bytes or size > records.whole_bytes
        return cap_note(records, counts, cut, self.cap_bytes)
