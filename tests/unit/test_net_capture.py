"""h2lab.net.capture, its pure parts: pcap records cut to whole packets, tcpdump's counts and
h2lab's line on what a capture holds, tcpdump's command line."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest

from h2lab.net import userns
from h2lab.net.capture import (
    DUMPCAP,
    TCPDUMP,
    PcapRecords,
    cap_note,
    capturer,
    dumpcap_counts,
    tcpdump_argv,
    tcpdump_counts,
    whole_records_bytes,
)


def pcap(packets: list[bytes], order: str = "<", magic: int = 0xA1B2C3D4) -> bytes:
    """A pcap file (version 2.4, Ethernet) holding ``packets`` whole."""
    out = struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, 262144, 1)
    for i, data in enumerate(packets):
        out += struct.pack(order + "IIII", 1_700_000_000 + i, 0, len(data), len(data)) + data
    return out


PACKETS = [b"\x01" * 60, b"\x02" * 1514, b"\x03" * 54]
WHOLE = pcap(PACKETS)


@pytest.mark.parametrize(
    ("order", "magic"), [("<", 0xA1B2C3D4), (">", 0xA1B2C3D4), ("<", 0xA1B23C4D)]
)
def test_a_whole_file_is_every_packet_to_its_end(order: str, magic: int) -> None:
    data = pcap(PACKETS, order, magic)
    assert whole_records_bytes(io.BytesIO(data)) == PcapRecords(3, len(data))


@pytest.mark.parametrize(
    "cut_bytes",
    [
        1,  # inside the last packet's data
        54,  # right after the last packet's record header
        54 + 7,  # inside the last packet's record header
    ],
)
def test_a_file_cut_mid_packet_ends_at_the_last_whole_one(cut_bytes: int) -> None:
    data = WHOLE[:-cut_bytes]
    assert whole_records_bytes(io.BytesIO(data)) == PcapRecords(2, len(WHOLE) - 16 - 54)


def test_a_header_only_file_has_no_packets() -> None:
    assert whole_records_bytes(io.BytesIO(pcap([]))) == PcapRecords(0, 24)


@pytest.mark.parametrize("data", [b"", b"\x0a\x0d\x0d\x0a" + b"\x00" * 40, WHOLE[:20]])
def test_what_is_not_a_pcap_is_refused(data: bytes) -> None:
    """An empty file (tcpdump killed before it flushed), pcapng, a cut global header."""
    with pytest.raises(ValueError, match="not a pcap file"):
        whole_records_bytes(io.BytesIO(data))


TCPDUMP_END = """\
tcpdump: listening on vL1-L-gAaRCJ, link-type EN10MB (Ethernet), snapshot length 262144 bytes
183 packets captured
184 packets received by filter
1 packet dropped by kernel
"""


def test_tcpdump_counts_are_read_from_its_closing_lines() -> None:
    assert tcpdump_counts(TCPDUMP_END) == {
        "captured": 183,
        "received by filter": 184,
        "dropped by kernel": 1,
    }
    assert tcpdump_counts("tcpdump: listening on lo, ...\n") == {}


def test_the_note_says_what_the_file_holds_and_what_the_cap_or_the_kernel_lost() -> None:
    records = PcapRecords(18, 19068)
    assert cap_note(records, {"captured": 18, "dropped by kernel": 0}, False, 20_000) == (
        "h2lab: 18 packets in the capture (19068 bytes)"
    )
    assert cap_note(records, {"captured": 201, "dropped by kernel": 3}, True, 20_000) == (
        "h2lab: 18 packets in the capture (19068 bytes); the size cap of 20000 bytes was "
        "reached: 183 not kept; 3 packets dropped by the kernel (not captured)"
    )
    assert cap_note(records, {}, True, 20_000).endswith("the size cap of 20000 bytes was reached")


def test_tcpdump_takes_whole_packets_as_they_come_and_stays_root() -> None:
    argv = tcpdump_argv("vL1-L-x", Path("/out/capture.pcap"))
    assert argv[:3] == ["tcpdump", "-i", "vL1-L-x"]
    assert "--immediate-mode" in argv
    assert argv[argv.index("-Z") + 1] == "root"
    assert argv[-2:] == ["-w", "/out/capture.pcap"]
    assert "-s" not in argv and "-C" not in argv  # no snap length, no rotation


def test_dumpcap_counts_are_read_under_tcpdumps_names() -> None:
    log = (
        "Capturing on 'vL1-L-ab12'\nFile: /x/capture.pcap\nPackets captured: 31\n"
        "Packets received/dropped on interface 'vL1-L-ab12': 33/2 "
        "(pcap:2/dumpcap:0/flushed:0/ps_ifdrop:0) (93.9%)\n"
    )
    assert DUMPCAP.listening.search(log)
    assert dumpcap_counts(log) == {"captured": 31, "dropped by kernel": 2}
    assert dumpcap_counts("Capturing on 'lo'\n") == {}


def test_rootless_mode_captures_with_dumpcap(monkeypatch: pytest.MonkeyPatch) -> None:
    """tcpdump would change its user (setgroups, denied in a user namespace); dumpcap does
    not, and is given time for its last block of packets before SIGINT."""
    monkeypatch.delenv(userns.ENV, raising=False)
    assert capturer() is TCPDUMP and TCPDUMP.settle_s == 0
    monkeypatch.setenv(userns.ENV, "1000:1000")
    assert capturer() is DUMPCAP and DUMPCAP.settle_s >= 0.3
    assert DUMPCAP.argv("vL1", Path("/x.pcap"), "") == [
        "dumpcap", "-i", "vL1", "-p", "-P", "-q", "-w", "/x.pcap",
    ]  # fmt: skip
