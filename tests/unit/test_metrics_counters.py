# ruff: noqa: E501  (verbatim /proc text has long lines)
"""h2lab.metrics.counters: /proc/net/snmp and /proc/net/dev text."""

from __future__ import annotations

import pytest

from h2lab.metrics.counters import IfBytes, parse_dev, parse_snmp

SNMP = """\
Ip: Forwarding DefaultTTL InReceives InHdrErrors InAddrErrors ForwDatagrams InUnknownProtos InDiscards InDelivers OutRequests OutDiscards OutNoRoutes ReasmTimeout ReasmReqds ReasmOKs ReasmFails FragOKs FragFails FragCreates
Ip: 2 64 1523 0 0 0 0 0 1523 1498 0 0 0 0 0 0 0 0 0
Icmp: InMsgs InErrors InCsumErrors InDestUnreachs InTimeExcds InParmProbs InSrcQuenchs InRedirects InEchos InEchoReps InTimestamps InTimestampReps InAddrMasks InAddrMaskReps OutMsgs OutErrors OutRateLimitGlobal OutRateLimitHost OutDestUnreachs OutTimeExcds OutParmProbs OutSrcQuenchs OutRedirects OutEchos OutEchoReps OutTimestamps OutTimestampReps OutAddrMasks OutAddrMaskReps
Icmp: 21 0 0 0 0 0 0 0 0 21 0 0 0 0 21 0 0 0 0 0 0 0 0 21 0 0 0 0 0
IcmpMsg: InType0 OutType8
IcmpMsg: 21 21
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors
Tcp: 1 200 120000 -1 12 3 0 1 2 1450 1399 7 0 4 0
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
Udp: 52 0 0 52 0 0 0 0 0
UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
UdpLite: 9 9 9 9 9 9 9 9 9
"""

DEV = """\
Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:    5320      64    0    0    0     0          0         0     5320      64    0    0    0     0       0          0
vL1-L0: 1048576    812    0    0    0     0          0         0    65432     420    0    1    0     0       0          0
eth0:123 4 0 0 0 0 0 0 456 7 0 0 0 0 0 0
"""


def test_parse_snmp_tcp() -> None:
    tcp = parse_snmp(SNMP)
    assert tcp["ActiveOpens"] == 12
    assert tcp["PassiveOpens"] == 3
    assert tcp["RetransSegs"] == 7
    assert tcp["MaxConn"] == -1
    assert tcp["InSegs"] == 1450
    assert len(tcp) == 15
    assert next(iter(tcp)) == "RtoAlgorithm"


def test_parse_snmp_other_protocol_does_not_match_prefixes() -> None:
    # "Udp:" must not pick up the "UdpLite:" rows
    assert parse_snmp(SNMP, "Udp")["InDatagrams"] == 52
    assert parse_snmp(SNMP, "UdpLite")["InDatagrams"] == 9
    assert parse_snmp(SNMP, "Ip")["InReceives"] == 1523


def test_parse_snmp_missing_protocol() -> None:
    with pytest.raises(ValueError, match="no Tcp rows"):
        parse_snmp("Ip: Forwarding\nIp: 2\n")


def test_parse_snmp_header_value_mismatch() -> None:
    with pytest.raises(ValueError):
        parse_snmp("Tcp: A B\nTcp: 1\n")


def test_parse_dev() -> None:
    devs = parse_dev(DEV)
    assert devs == {
        "lo": IfBytes(rx_bytes=5320, tx_bytes=5320),
        "vL1-L0": IfBytes(rx_bytes=1048576, tx_bytes=65432),
        "eth0": IfBytes(rx_bytes=123, tx_bytes=456),
    }


def test_parse_dev_headers_only() -> None:
    assert parse_dev("\n".join(DEV.splitlines()[:2])) == {}


def test_cpu_times_and_busy_share() -> None:
    from h2lab.metrics.counters import busy_pct, parse_cpu_times

    a = parse_cpu_times("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8\n")
    b = parse_cpu_times("cpu  190 0 60 850 50 0 0 0 0 0\n")
    assert (a.busy_ticks, a.total_ticks) == (150, 1000)
    assert busy_pct(a, b) == 100.0 * 100 / 150
    assert busy_pct(a, a) is None
    with pytest.raises(ValueError, match="no aggregate"):
        parse_cpu_times("intr 1 2 3\n")
