"""The reordering knob: ``jitter`` in a network spec, Rattan's ``DelayPerPacket`` cell it
becomes, and what ``net check`` expects of it (pure)."""

from __future__ import annotations

import random
import statistics
import tomllib
from pathlib import Path
from typing import Any

import pytest

from h2lab.errors import SpecError
from h2lab.net.check.estimators import (
    clamped_normal_sd_share,
    clamped_sd_from_quartiles,
    clamped_sd_in_windows,
    expected_reordered_share,
    reordered_in_arrival_order,
    reordered_share,
)
from h2lab.net.rattan import CLAMPED_SD_SHARE, build_config, calibrated_delay_ms, jitter_seed
from h2lab.spec.network import MAX_JITTER_SHARE, parse_network

STATE = Path("/run/h2lab/h2lab-abc123/link")


def _cells(spec: str, seed: int = 42) -> dict[str, Any]:
    files = build_config(parse_network(spec), seed, STATE, STATE / "holder.pid")
    cells: dict[str, Any] = tomllib.loads(files.config_toml)["cells"]
    return cells


def _error(text: str) -> SpecError:
    with pytest.raises(SpecError) as info:
        parse_network(text, "exp.toml", field="factors.network[0]")
    return info.value


def test_jitter_sets_both_directions_and_per_direction_overrides() -> None:
    p = parse_network("rtt=100ms,jitter=5ms")
    assert (p.up_jitter_ms, p.down_jitter_ms) == (5.0, 5.0)
    p = parse_network("rtt=100ms,jitter=5ms,down_jitter=2ms")
    assert (p.up_jitter_ms, p.down_jitter_ms) == (5.0, 2.0)
    assert p.describe() == "rtt=100ms,up_jitter=5ms,down_jitter=2ms,queue=1000p"
    assert parse_network("rtt=100ms,jitter=5ms").describe() == "rtt=100ms,jitter=5ms,queue=1000p"
    assert parse_network("rtt=100ms").up_jitter_ms == 0.0


def test_a_preset_takes_jitter_and_a_jitter_override_replaces_the_directions() -> None:
    p = parse_network("cable,jitter=3ms")
    assert p.down_rate_bps == 5_000_000 and p.up_jitter_ms == p.down_jitter_ms == 3.0
    p = parse_network("rtt=100ms,up_jitter=1ms,down_jitter=2ms,jitter=4ms")
    assert (p.up_jitter_ms, p.down_jitter_ms) == (1.0, 2.0)


@pytest.mark.parametrize(
    ("text", "key", "reason"),
    [
        ("rtt=20ms,jitter=5ms", "jitter", "5 ms cannot be emulated over a 10 ms one-way delay"),
        ("rtt=100ms,down_jitter=30ms", "down_jitter", "at most 24 ms (48% of it)"),
        ("rtt=100ms,jitter=-1ms", "jitter", ""),
        ("rtt=100ms,jitter=fast", "jitter", ""),
        ("cellular=good,jitter=1ms", "jitter", "replays its own delays; jitter needs a fixed"),
        ("jitter=1ms", "jitter", "over a 0 ms one-way delay"),
    ],
)
def test_jitter_the_link_cannot_emulate_names_the_key(text: str, key: str, reason: str) -> None:
    e = _error(text)
    assert e.source == "exp.toml"
    assert e.field == f"factors.network[0].{key}"
    assert reason in e.reason


def test_the_largest_jitter_keeps_every_delay_positive() -> None:
    delay = 50.0
    p = parse_network(f"delay={delay}ms,jitter={delay * MAX_JITTER_SHARE:.3f}ms")
    cell = _cells(p.describe())["up_delay"]["config"]["delay"]["NormalizedDelayPerPacketConfig"]
    assert int(cell["lower_bound"].removesuffix("us")) >= 0
    assert pytest.approx(1.0, abs=1e-3) == MAX_JITTER_SHARE * 2 / CLAMPED_SD_SHARE


def test_without_jitter_the_delay_cell_is_unchanged() -> None:
    cells = _cells("rtt=100ms,rate=10Mbps")
    assert cells["up_delay"] == {
        "type": "Delay",
        "delay": f"{calibrated_delay_ms(50) * 1000:.0f}us",
    }


def test_jitter_is_a_per_packet_delay_cell_clamped_at_two_deviations() -> None:
    cells = _cells("rtt=100ms,rate=10Mbps,up_jitter=5ms,down_jitter=2ms", seed=7)
    up = cells["up_delay"]
    assert up["type"] == "DelayPerPacket"
    normal = up["config"]["delay"]["NormalizedDelayPerPacketConfig"]
    mean = calibrated_delay_ms(50) * 1000
    sd = 5000 / CLAMPED_SD_SHARE
    assert normal == {
        "mean": f"{mean:.0f}us",
        "std_dev": f"{sd:.0f}us",
        "lower_bound": f"{mean - 2 * sd:.0f}us",
        "upper_bound": f"{mean + 2 * sd:.0f}us",
        "seed": jitter_seed(7, "up"),
    }
    down = cells["down_delay"]["config"]["delay"]["NormalizedDelayPerPacketConfig"]
    assert down["std_dev"] == f"{2000 / CLAMPED_SD_SHARE:.0f}us"
    assert down["seed"] == jitter_seed(7, "down") != normal["seed"]
    # the bandwidth cell still comes first
    assert cells["up_bw"]["type"] == "Bw"


def test_jitter_seeds_are_reproducible_and_differ_by_trial_seed() -> None:
    assert jitter_seed(1, "up") == jitter_seed(1, "up")
    assert len({jitter_seed(s, d) for s in range(50) for d in ("up", "down")}) == 100
    assert all(0 <= jitter_seed(s, "up") < 2**63 for s in range(50))


def test_clamped_normal_keeps_the_share_of_its_deviation_rattan_is_given() -> None:
    assert clamped_normal_sd_share(2.0) == pytest.approx(CLAMPED_SD_SHARE, abs=1e-4)
    assert clamped_normal_sd_share(50.0) == pytest.approx(1.0)
    rng = random.Random(1)
    draws = [min(max(rng.gauss(0, 1), -2), 2) for _ in range(200_000)]
    assert statistics.pstdev(draws) == pytest.approx(CLAMPED_SD_SHARE, abs=0.005)


def test_the_quartiles_tell_the_clamped_deviation_and_ignore_a_few_held_up_datagrams() -> None:
    rng = random.Random(2)
    sd = 2.0 / CLAMPED_SD_SHARE  # Rattan's cell for 2 ms of jitter
    delays = [50 + min(max(rng.gauss(0, sd), -2 * sd), 2 * sd) for _ in range(1000)]
    assert statistics.stdev(delays) == pytest.approx(2.0, abs=0.15)
    assert clamped_sd_from_quartiles(delays) == pytest.approx(2.0, abs=0.15)
    held_up = delays[:-10] + [50 + 60.0] * 10  # 1 %: a sender preempted before sending
    assert statistics.stdev(held_up) > 3.0  # the plain deviation failed the check (±0.4 ms)
    assert clamped_sd_from_quartiles(held_up) == pytest.approx(2.0, abs=0.2)
    assert clamped_sd_from_quartiles([1.0, 3.0]) == pytest.approx(statistics.stdev([1.0, 3.0]))


def test_windows_the_host_held_up_are_left_out_and_a_clean_probe_keeps_them_all() -> None:
    rng = random.Random(3)
    sd = 2.0 / CLAMPED_SD_SHARE
    delays = [50 + min(max(rng.gauss(0, sd), -2 * sd), 2 * sd) for _ in range(1000)]
    whole, used = clamped_sd_in_windows(delays)
    assert used == 1000 and whole == clamped_sd_from_quartiles(delays)
    # a burst: the emulator held up for the datagrams of the second window, up to 30 ms
    burst = [d + (rng.uniform(0, 30) if 200 <= k < 400 else 0) for k, d in enumerate(delays)]
    assert clamped_sd_from_quartiles(burst) > 2.5  # outside the check's ±0.4 ms
    sd_kept, used = clamped_sd_in_windows(burst)
    assert sd_kept == pytest.approx(2.0, abs=0.15) and used == 800
    assert clamped_sd_in_windows([1.0, 3.0]) == (statistics.stdev([1.0, 3.0]), 2)


def test_reordered_share_counts_packets_that_arrive_after_a_later_one() -> None:
    assert reordered_share([0, 1, 2, 3]) == 0.0
    # arrival times in sending order: packets 1 and 2 arrive after packet 0, sent before them
    assert reordered_share([10, 5, 6, 20]) == pytest.approx(2 / 4)
    assert reordered_in_arrival_order([0, 2, 1, 3, 5, 4]) == pytest.approx(2 / 6)
    assert reordered_in_arrival_order([]) == 0.0


def test_expected_reordering_falls_with_spacing_and_is_none_without_jitter() -> None:
    shares = [expected_reordered_share(5.0, [i * s for i in range(2000)]) for s in (1, 2.5, 10)]
    assert shares[0] > shares[1] > shares[2] > 0
    assert shares[1] == pytest.approx(0.49, abs=0.03)
    assert expected_reordered_share(0.0, [0.0, 1.0]) == 0.0
    # pure: the same answer every time
    assert expected_reordered_share(5.0, [i * 2.5 for i in range(500)]) == (
        expected_reordered_share(5.0, [i * 2.5 for i in range(500)])
    )
