"""h2lab.net.check.estimators: the pure helpers behind ``h2lab net check`` (no probes, no
namespaces)."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import pytest

from h2lab.net.check import CheckRow
from h2lab.net.check.estimators import (
    binomial_interval,
    delivered_per_step_bps,
    effective_rate_bps,
    goodput_bps,
    pearson,
    probe_rtt_ms,
)
from h2lab.spec.network import parse_network


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("H2LAB_CACHE", str(tmp_path / "cache"))


def _pmf(n: int, p: float) -> tuple[list[int], int]:
    """Binomial(n, p) by its definition, exactly: P(k) = comb(n, k) a^k (b-a)^(n-k) / b^n
    with p = a/b. Returns the numerators and the common denominator b^n."""
    q = Fraction(str(p))
    a, b = q.numerator, q.denominator
    # comb(n, k), a^k and (b-a)^k built up term by term (math.comb per term: ~0.5 s at n = 3000)
    combs, hits, misses = [1], [1], [1]
    for k in range(n):
        combs.append(combs[-1] * (n - k) // (k + 1))
        hits.append(hits[-1] * a)
        misses.append(misses[-1] * (b - a))
    assert [combs[k] for k in (1, n // 3, n)] == [math.comb(n, k) for k in (1, n // 3, n)]
    return [combs[k] * hits[k] * misses[n - k] for k in range(n + 1)], b**n


# --- binomial_interval ------------------------------------------------------------------------


def test_binomial_interval_no_loss_asked_allows_none() -> None:
    assert binomial_interval(1000, 0.0) == (0, 0)
    assert binomial_interval(3000, 0.0, confidence=0.5) == (0, 0)


def test_binomial_interval_certain_loss_is_all() -> None:
    assert binomial_interval(1000, 1.0) == (1000, 1000)
    assert binomial_interval(7, 1.0) == (7, 7)


@pytest.mark.parametrize(("n", "p"), [(1000, 0.01), (3000, 0.005), (200, 0.3)])
def test_binomial_interval_tails_hold_at_most_half_a_percent(n: int, p: float) -> None:
    lo, hi = binomial_interval(n, p)
    pmf, den = _pmf(n, p)
    assert sum(pmf) == den
    # tails as exact integers: sum / den <= 0.5%  <=>  200 * sum <= den
    below, above = sum(pmf[:lo]), sum(pmf[hi + 1 :])
    assert lo <= n * p <= hi
    assert 200 * below <= den
    assert 200 * above <= den
    # and it is the tightest such interval: one step in on either side breaks a tail bound
    assert 200 * (below + pmf[lo]) > den
    assert 200 * (above + pmf[hi]) > den


def test_binomial_interval_n1000_p1pct_contains_the_mean() -> None:
    lo, hi = binomial_interval(1000, 0.01)
    assert lo <= 10 <= hi
    assert 0 < lo < 10 < hi < 25


def test_binomial_interval_lower_confidence_is_narrower() -> None:
    lo99, hi99 = binomial_interval(1000, 0.01)
    lo90, hi90 = binomial_interval(1000, 0.01, confidence=0.90)
    assert lo99 <= lo90 <= hi90 <= hi99
    assert hi90 - lo90 < hi99 - lo99


# --- goodput_bps ------------------------------------------------------------------------------


def test_goodput_constant_rate() -> None:
    # 1 Mbit/s = 125,000 bytes per second, sampled every 100 ms for 10 s
    samples = [(k / 10, 12_500 * k) for k in range(101)]
    assert goodput_bps(samples) == pytest.approx(1e6)


def test_goodput_skips_the_first_40_percent_of_the_time() -> None:
    # 8 Mbit/s during slow start's overshoot (first 4 s), then 1 Mbit/s until 10 s
    samples = [(k / 10, 100_000 * k) for k in range(41)]
    samples += [(k / 10, 4_000_000 + 12_500 * (k - 40)) for k in range(41, 101)]
    assert goodput_bps(samples) == pytest.approx(1e6)
    # without the skip, the fast start shows
    assert goodput_bps(samples, skip_share=0.0) == pytest.approx(4_750_000 * 8 / 10)


def test_goodput_starts_at_the_first_sample_past_the_skip() -> None:
    # no sample at exactly 4 s: measured from the one at 5 s
    samples = [(0.0, 0), (1.0, 1000), (5.0, 2000), (10.0, 7000)]
    assert goodput_bps(samples) == pytest.approx((7000 - 2000) * 8 / 5)


def test_goodput_of_too_few_samples_is_zero() -> None:
    assert goodput_bps([]) == 0.0
    assert goodput_bps([(1.0, 1000)]) == 0.0
    # everything at t = 0: no time elapsed
    assert goodput_bps([(0.0, 0), (0.0, 5000)]) == 0.0


# --- pearson ----------------------------------------------------------------------------------


def test_pearson_known_values() -> None:
    assert pearson([1.0, 2.0, 3.0], [2.0, 4.0, 6.0]) == pytest.approx(1.0)
    assert pearson([1.0, 2.0, 3.0], [5.0, 3.0, 1.0]) == pytest.approx(-1.0)
    # means 2 and 2: sxy = 1, sxx = 2, syy = 2
    assert pearson([1.0, 2.0, 3.0], [1.0, 3.0, 2.0]) == pytest.approx(0.5)


def test_pearson_is_scale_and_shift_invariant() -> None:
    xs = [1.0, 4.0, 2.0, 8.0, 5.0]
    ys = [3.0, 1.0, 4.0, 1.0, 5.0]
    r = pearson(xs, ys)
    assert pearson([10 * x + 3 for x in xs], [0.5 * y - 7 for y in ys]) == pytest.approx(r)


def test_pearson_of_a_constant_series_is_zero() -> None:
    assert pearson([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) == 0.0
    assert pearson([1.0, 2.0, 3.0], [4.0, 4.0, 4.0]) == 0.0


def test_pearson_needs_equal_lengths() -> None:
    with pytest.raises(ValueError):
        pearson([1.0, 2.0, 3.0], [1.0, 2.0])


# --- probe_rtt_ms -----------------------------------------------------------------------------


def test_probe_rtt_adds_syn_and_rst_serialisation() -> None:
    # SYN 60 B up at 1 Mbit/s: 0.48 ms; RST 40 B down: 0.32 ms
    assert probe_rtt_ms(parse_network("rtt=20ms,rate=1Mbps")) == pytest.approx(20.8)


def test_probe_rtt_per_direction_rates() -> None:
    assert probe_rtt_ms(parse_network("rtt=20ms,up=1Mbps")) == pytest.approx(20.48)
    assert probe_rtt_ms(parse_network("rtt=20ms,down=1Mbps")) == pytest.approx(20.32)
    assert probe_rtt_ms(parse_network("rtt=20ms,up=1Mbps,down=2Mbps")) == pytest.approx(20.64)


def test_probe_rtt_of_an_unlimited_link_is_the_rtt() -> None:
    assert probe_rtt_ms(parse_network("rtt=20ms")) == 20.0
    assert probe_rtt_ms(parse_network("lan")) == 0.0


# --- effective_rate_bps -----------------------------------------------------------------------


def test_effective_rate_of_a_fixed_rate() -> None:
    p = parse_network("rtt=20ms,down=10Mbps,up=2Mbps")
    assert effective_rate_bps(p, "down") == 10_000_000
    assert effective_rate_bps(p, "up") == 2_000_000


def test_effective_rate_of_an_unlimited_link_is_none() -> None:
    p = parse_network("rtt=20ms")
    assert effective_rate_bps(p, "down") is None
    assert effective_rate_bps(p, "up") is None


def test_effective_rate_of_a_mahimahi_trace(tmp_path: Path) -> None:
    # one 1500-byte opportunity per ms: 12 Mbit/s
    trace = tmp_path / "flat.trace"
    trace.write_text("".join(f"{t}\n" for t in range(1, 1001)))
    p = parse_network(f"rtt=20ms,trace={trace}")
    assert effective_rate_bps(p, "down") == 12_000_000
    assert effective_rate_bps(p, "up") == 12_000_000


def test_effective_rate_trace_in_one_direction_only(tmp_path: Path) -> None:
    # one opportunity every 2 ms: 6 Mbit/s down; the uplink keeps its fixed rate
    trace = tmp_path / "half.trace"
    trace.write_text("".join(f"{t}\n" for t in range(2, 1001, 2)))
    p = parse_network(f"rtt=20ms,up=1Mbps,down_trace={trace}")
    assert effective_rate_bps(p, "down") == 6_000_000
    assert effective_rate_bps(p, "up") == 1_000_000


# --- delivered_per_step_bps -------------------------------------------------------------------


def test_delivered_per_step_without_delay() -> None:
    # step k (100 ms each) receives k + 1 packets of 1000 bytes, well inside the step
    step_s = 0.1
    arrivals = [(k * step_s + 0.005 + 0.01 * j, 1000) for k in range(5) for j in range(k + 1)]
    got = delivered_per_step_bps(arrivals, 0.0, step_s, [0.0] * 5, 0, 5)
    assert got == pytest.approx([(k + 1) * 1000 * 8 / step_s for k in range(5)])


def test_delivered_per_step_from_a_later_step() -> None:
    step_s = 0.1
    arrivals = [(k * step_s + 0.005 + 0.01 * j, 1000) for k in range(5) for j in range(k + 1)]
    got = delivered_per_step_bps(arrivals, 0.0, step_s, [0.0] * 5, 2, 3)
    assert got == pytest.approx([3 * 80_000, 4 * 80_000, 5 * 80_000])


def test_delivered_per_step_trace_offset_shifts_the_windows() -> None:
    # trace time = measurement time + offset: with offset 0.05 s, trace step k is measured
    # over [k * 0.1 - 0.05, (k + 1) * 0.1 - 0.05)
    arrivals = [(0.04, 100), (0.06, 200), (0.14, 400), (0.16, 800)]
    got = delivered_per_step_bps(arrivals, 0.05, 0.1, [0.0, 0.0], 0, 2)
    assert got == pytest.approx([100 * 8 / 0.1, (200 + 400) * 8 / 0.1])


def test_delivered_per_step_windows_follow_the_delay() -> None:
    # step 0.25 s, one-way delays per step d = [0, 0.125, 0.0625] (exact in binary).
    # Step k's bytes arrive in [T_k + d_{k-1}, T_{k+1} + d_k):
    #   k=1: [0.25, 0.625)   (delay rises 0 -> 0.125)
    #   k=2: [0.625, 0.8125) (delay falls 0.125 -> 0.0625)
    #   k=3: [0.8125, 1.0)   (d_3 wraps to d_0 = 0)
    arrivals = [
        (0.1, 128),  # before step 1's window
        (0.25, 1),  # at step 1's lower edge: counted
        (0.5, 2),
        (0.625, 4),  # at step 1's upper edge: step 2's
        (0.8, 8),
        (0.8125, 16),  # step 3's lower edge
        (0.99, 32),
        (1.0, 64),  # step 3's upper edge: not step 3's
    ]
    got = delivered_per_step_bps(arrivals, 0.0, 0.25, [0.0, 0.125, 0.0625], 1, 3)
    assert got == [(1 + 2) * 8 / 0.25, (4 + 8) * 8 / 0.25, (16 + 32) * 8 / 0.25]


def test_delivered_per_step_first_step_uses_the_last_delay_of_the_period() -> None:
    # k = 0: d_{-1} is the period's last delay (0.0625), so the window is [0.0625, 0.25)
    arrivals = [(0.05, 1), (0.0625, 2), (0.2, 4), (0.25, 8)]
    got = delivered_per_step_bps(arrivals, 0.0, 0.25, [0.0, 0.125, 0.0625], 0, 1)
    assert got == [(2 + 4) * 8 / 0.25]


def test_delivered_per_step_with_no_arrivals_is_zero() -> None:
    assert delivered_per_step_bps([], 0.0, 0.07, [0.01] * 4, 0, 3) == [0.0, 0.0, 0.0]


# --- CheckRow ---------------------------------------------------------------------------------


def test_check_row_as_dict() -> None:
    row = CheckRow("rtt", "both", 20.8, 20.9, "ms", "±0.5 ms", True)
    d = row.as_dict()
    assert list(d) == ["metric", "direction", "asked", "measured", "unit", "tolerance", "pass"]
    assert d == {
        "metric": "rtt",
        "direction": "both",
        "asked": 20.8,
        "measured": 20.9,
        "unit": "ms",
        "tolerance": "±0.5 ms",
        "pass": True,
    }


def test_check_row_as_dict_of_an_unjudged_row() -> None:
    d = CheckRow("emulator_cpu", "down", None, 12.5, "% of a core", "info", None).as_dict()
    assert d["pass"] is None
    assert d["asked"] is None
    assert "passed" not in d
