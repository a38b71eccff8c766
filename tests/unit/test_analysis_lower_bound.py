"""h2lab.analysis.lower_bound: handshake round trips and the slow-start fetch floor.

Expected values are worked out by hand in each test's comment (IW10 × 1448 B = 14 480 B;
a window of W payload bytes takes W × 1500/1448 × 8 / rate seconds to serialise).
"""

from __future__ import annotations

import itertools

import pytest

from h2lab.analysis.lower_bound import (
    fetch_lower_bound_ms,
    first_window_control_packets,
    handshake_rtts,
)
from h2lab.errors import SpecError

MBIT = 1_000_000


def wire_ms(payload_bytes: int, rate_bps: int) -> float:
    """Hand formula: payload bytes as 1500 B packets per 1448 B, in ms at ``rate_bps``."""
    return payload_bytes * 1500 / 1448 * 8 / rate_bps * 1000


@pytest.mark.parametrize(
    ("protocol", "tls", "rtts"),
    [
        ("h1c", "1.3", 1),
        ("h1p", "1.3", 1),
        ("h2c", "1.3", 1),
        ("h1c", "1.2", 1),  # no TLS: the version does not matter
        ("h1s", "1.3", 2),
        ("h2s", "1.3", 2),
        ("h1s", "1.2", 3),
        ("h2s", "1.2", 3),
        ("h3", "1.3", 1),
    ],
)
def test_handshake_rtts_per_protocol(protocol: str, tls: str, rtts: int) -> None:
    assert handshake_rtts(protocol, tls) == rtts


def test_handshake_rtts_default_is_tls_1_3() -> None:
    assert handshake_rtts("h2s") == 2


def test_handshake_rtts_rejects_unknown_protocol_naming_the_known_ones() -> None:
    with pytest.raises(SpecError, match=r"unknown protocol 'spdy'.*h1c.*h3"):
        handshake_rtts("spdy")


def test_handshake_rtts_rejects_unknown_tls_version() -> None:
    with pytest.raises(SpecError, match=r"unknown TLS version '1.1'"):
        handshake_rtts("h1s", "1.1")


@pytest.mark.parametrize(("hs", "expected_ms"), [(1, 200.0), (2, 300.0), (3, 400.0)])
def test_14kb_fits_the_initial_window_so_one_rtt_after_the_handshakes(
    hs: int, expected_ms: float
) -> None:
    # 14 000 B <= 14 480 B: request one way + response one way = 1 RTT after hs × 100 ms.
    assert fetch_lower_bound_ms(14_000, 100.0, None, handshake_rtts=hs) == pytest.approx(
        expected_ms
    )


def test_one_byte_over_the_initial_window_costs_one_more_rtt() -> None:
    # 14 481 B: round 1 carries 14 480 B, the last byte goes one RTT later.
    assert fetch_lower_bound_ms(14_480, 100.0, None, handshake_rtts=1) == pytest.approx(200.0)
    assert fetch_lower_bound_ms(14_481, 100.0, None, handshake_rtts=1) == pytest.approx(300.0)


def test_100kb_unlimited_rate_takes_three_slow_start_rounds() -> None:
    # Windows 14 480, 28 960, 57 920 B: cumulative 101 360 >= 100 000 in the third round.
    # 1 (TCP) + 0.5 (request) + 2 full rounds + 0.5 (last byte) = 4 RTT.
    assert fetch_lower_bound_ms(100_000, 100.0, None, handshake_rtts=1) == pytest.approx(400.0)


def test_100kb_at_10mbit_rtt_100_ends_in_a_partial_third_window() -> None:
    # Windows of 12 ms and 24 ms < 100 ms: two full rounds, then 56 560 B serialised.
    # 100 + 50 + 200 + 46.87 + 50 = 446.87 ms.
    expected = 100 + 50 + 200 + wire_ms(100_000 - 14_480 - 28_960, 10 * MBIT) + 50
    assert expected == pytest.approx(446.87, abs=0.01)
    got = fetch_lower_bound_ms(100_000, 100.0, 10 * MBIT, handshake_rtts=1)
    assert got == pytest.approx(expected)


def test_1mb_at_10mbit_rtt_20_is_dominated_by_serialisation() -> None:
    # BDP 25 000 B on the wire. Round 1: 14 480 B take 12 ms < 20 ms, so a full RTT;
    # round 2: 28 960 B take 24 ms >= 20 ms, so the link stays busy for the other 985 520 B.
    # 20 (TCP) + 10 (request) + 20 (round 1) + 816.73 + 10 (last byte) = 876.73 ms.
    expected = 20 + 10 + 20 + wire_ms(1_000_000 - 14_480, 10 * MBIT) + 10
    assert expected == pytest.approx(876.73, abs=0.01)
    got = fetch_lower_bound_ms(1_000_000, 20.0, 10 * MBIT, handshake_rtts=1)
    assert got == pytest.approx(expected)
    # ≈ the whole body's serialisation (1e6 × 1500/1448 × 8 / 1e7 s = 828.7 ms) plus 2.4 RTT
    assert got == pytest.approx(1e6 * 1500 / 1448 * 8 / 1e7 * 1000 + 48.0, abs=0.01)


def test_1mb_at_10mbit_rtt_100_leaves_slow_start_in_round_five() -> None:
    # Windows 12, 24, 48, 96 ms < 100 ms: four full rounds carry 217 200 B; the fifth window
    # (192 ms) covers the BDP, so the remaining 782 800 B go back to back. With TLS 1.3:
    # 200 + 50 + 400 + 648.73 + 50 = 1348.73 ms.
    expected = 200 + 50 + 400 + wire_ms(1_000_000 - 217_200, 10 * MBIT) + 50
    assert expected == pytest.approx(1348.73, abs=0.01)
    got = fetch_lower_bound_ms(1_000_000, 100.0, 10 * MBIT, handshake_rtts=2)
    assert got == pytest.approx(expected)


def test_smaller_initial_window_needs_more_rounds() -> None:
    # IW4 = 5 792 B: 14 000 B needs windows 5 792 + 11 584, i.e. one extra RTT over IW10.
    iw4 = fetch_lower_bound_ms(14_000, 100.0, None, handshake_rtts=1, initcwnd_packets=4)
    assert iw4 == pytest.approx(300.0)


def test_mss_and_mtu_set_the_wire_overhead() -> None:
    # No header overhead (mtu == mss) and RTT 0: exactly the body's bits over the rate.
    got = fetch_lower_bound_ms(
        1_000_000, 0.0, 8 * MBIT, handshake_rtts=1, mss_bytes=1500, mtu_bytes=1500
    )
    assert got == pytest.approx(1000.0)


def test_empty_body_is_handshakes_plus_one_rtt() -> None:
    assert fetch_lower_bound_ms(0, 50.0, 10 * MBIT, handshake_rtts=2) == pytest.approx(150.0)


def test_zero_rtt_unlimited_rate_is_instant() -> None:
    assert fetch_lower_bound_ms(5_000_000, 0.0, None, handshake_rtts=2) == 0.0


SIZES = [0, 1, 1_000, 14_000, 14_480, 14_481, 50_000, 100_000, 300_000, 1_000_000, 5_000_000]
RTTS_MS = [0.0, 1.0, 20.0, 100.0, 200.0, 800.0]
RATES = [None, 256_000, 1_600_000, 10 * MBIT, 100 * MBIT, 10_000 * MBIT]


@pytest.mark.parametrize("rate_bps", RATES)
@pytest.mark.parametrize("rtt_ms", RTTS_MS)
def test_monotonic_in_size(rate_bps: int | None, rtt_ms: float) -> None:
    sizes = sorted({*SIZES, *range(0, 400_000, 997)})
    bounds = [fetch_lower_bound_ms(s, rtt_ms, rate_bps, handshake_rtts=2) for s in sizes]
    assert all(a <= b for a, b in itertools.pairwise(bounds))


@pytest.mark.parametrize("rate_bps", RATES)
@pytest.mark.parametrize("size_bytes", SIZES)
def test_monotonic_in_rtt(rate_bps: int | None, size_bytes: int) -> None:
    rtts = [r / 4 for r in range(0, 1200)]
    bounds = [fetch_lower_bound_ms(size_bytes, r, rate_bps, handshake_rtts=1) for r in rtts]
    assert all(a <= b for a, b in itertools.pairwise(bounds))


@pytest.mark.parametrize("rtt_ms", RTTS_MS)
@pytest.mark.parametrize("size_bytes", SIZES)
def test_faster_link_is_never_slower(rtt_ms: float, size_bytes: int) -> None:
    rates: list[int | None] = [*range(100_000, 200 * MBIT, 997_000), None]
    bounds = [fetch_lower_bound_ms(size_bytes, rtt_ms, r, handshake_rtts=1) for r in rates]
    assert all(a >= b for a, b in itertools.pairwise(bounds))


def test_never_below_handshakes_plus_one_rtt_plus_serialisation() -> None:
    for size_bytes, rtt_ms, rate_bps, hs in itertools.product(SIZES, RTTS_MS, RATES, [1, 2, 3]):
        got = fetch_lower_bound_ms(size_bytes, rtt_ms, rate_bps, handshake_rtts=hs)
        serial = 0.0 if rate_bps is None else wire_ms(size_bytes, rate_bps)
        case = (size_bytes, rtt_ms, rate_bps, hs)
        assert got >= hs * rtt_ms + rtt_ms - 1e-9, case
        assert got >= hs * rtt_ms + rtt_ms + serial - 1e-6, case


def test_each_handshake_rtt_adds_exactly_one_rtt() -> None:
    one = fetch_lower_bound_ms(300_000, 70.0, 5 * MBIT, handshake_rtts=1)
    three = fetch_lower_bound_ms(300_000, 70.0, 5 * MBIT, handshake_rtts=3)
    assert three - one == pytest.approx(140.0)


def test_the_h2_preface_packet_pushes_70_packets_into_a_fourth_round() -> None:
    # 100 KB is 70 packets: the 10 + 20 + 40 of three slow-start rounds, the third costing only
    # its serialisation; with the server's SETTINGS in a packet of the first ten, 69 fit
    hs = handshake_rtts("h2s")
    plain = fetch_lower_bound_ms(100_000, 200.0, 10 * MBIT, handshake_rtts=hs)
    h2 = fetch_lower_bound_ms(
        100_000, 200.0, 10 * MBIT, handshake_rtts=hs,
        control_packets=first_window_control_packets("h2s"),
    )  # fmt: skip
    assert plain == pytest.approx(1046.9, abs=0.1)
    # two handshake round trips, three rounds, two one-way trips and the last 88 bytes
    assert h2 == pytest.approx(200.0 * 5 + 2 * 100.0 + 88 * 1500 / 1448 * 8 / 10_000, abs=0.01)
    # a body the first window holds even without the slot costs no round more
    assert fetch_lower_bound_ms(
        10_000, 200.0, 10 * MBIT, handshake_rtts=hs, control_packets=1
    ) == fetch_lower_bound_ms(10_000, 200.0, 10 * MBIT, handshake_rtts=hs)


@pytest.mark.parametrize(
    ("protocol", "packets"), [("h2s", 1), ("h1s", 0), ("h1c", 0), ("h2c", 0), ("h3", 0)]
)
def test_only_h2_over_tls_starts_with_a_control_packet(protocol: str, packets: int) -> None:
    assert first_window_control_packets(protocol) == packets


@pytest.mark.parametrize(
    "kwargs",
    [
        {"size_bytes": -1},
        {"rtt_ms": -1.0},
        {"rate_bps": 0},
        {"handshake_rtts": -1},
        {"initcwnd_packets": 0},
        {"mss_bytes": 0},
        {"mss_bytes": 1501},
        {"control_packets": -1},
        {"control_packets": 10},
    ],
)
def test_rejects_impossible_inputs(kwargs: dict[str, float]) -> None:
    args: dict[str, object] = {
        "size_bytes": 1000,
        "rtt_ms": 10.0,
        "rate_bps": MBIT,
        "handshake_rtts": 1,
        **kwargs,
    }
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        fetch_lower_bound_ms(**args)  # type: ignore[arg-type]
