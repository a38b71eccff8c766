"""h2lab.spec.presets: the named network presets, each with its values and its source."""

from __future__ import annotations

import pytest

from h2lab.spec import cellular
from h2lab.spec.network import parse_network
from h2lab.spec.presets import CELLULAR, PRESETS


def test_every_preset_is_keyed_by_its_name_and_cites_a_source() -> None:
    for key, preset in PRESETS.items():
        assert preset.name == key
        assert preset.spec.strip()
        assert preset.source.strip(), f"{key} has no source"


def test_preset_counts_per_family() -> None:
    names = list(PRESETS)
    assert sum(n.startswith("s001-") for n in names) == 24  # 3 RTTs x 2 rates x 4 losses
    assert sum(n.startswith("s002-") for n in names) == 60  # 10 delays x 6 losses
    assert sum(n.startswith("cell-") for n in names) == 9


def test_s001_grid_is_seed_001_table_i() -> None:
    expected = {
        f"s001-{rtt}ms-{mbps}mbps-{loss}pct"
        for rtt in (20, 100, 200)
        for mbps in (1, 10)
        for loss in ("0", "0.5", "1", "2")
    }
    assert {n for n in PRESETS if n.startswith("s001-")} == expected


def test_s001_values() -> None:
    p = parse_network("s001-200ms-10mbps-2pct")
    assert p.rtt_ms == 200.0
    assert (p.up_delay_ms, p.down_delay_ms) == (100.0, 100.0)
    assert (p.up_rate_bps, p.down_rate_bps) == (10_000_000, 10_000_000)
    assert p.up_loss_ratio == pytest.approx(0.02)
    assert p.down_loss_ratio == pytest.approx(0.02)
    q = parse_network("s001-20ms-1mbps-0.5pct")
    assert (q.rtt_ms, q.up_rate_bps, q.down_rate_bps) == (20.0, 1_000_000, 1_000_000)
    assert q.down_loss_ratio == pytest.approx(0.005)
    assert parse_network("s001-100ms-1mbps-0pct").down_loss_ratio == 0.0


def test_s002_values_are_one_way_delays() -> None:
    p = parse_network("s002-1000ms-5pct")
    assert (p.up_delay_ms, p.down_delay_ms) == (1000.0, 1000.0)
    assert p.rtt_ms == 2000.0
    assert p.up_loss_ratio == pytest.approx(0.05)
    assert p.down_loss_ratio == pytest.approx(0.05)
    assert (p.up_rate_bps, p.down_rate_bps) == (None, None)
    q = parse_network("s002-10ms-0.1pct")
    assert q.rtt_ms == 20.0
    assert q.down_loss_ratio == pytest.approx(0.001)


def test_s002_source_names_the_use_case() -> None:
    assert "optical fiber" in PRESETS["s002-10ms-0.1pct"].source
    assert "very long delay" in PRESETS["s002-1000ms-5pct"].source


def test_webpagetest_presets() -> None:
    p = parse_network("3g-fast")
    assert (p.down_rate_bps, p.up_rate_bps) == (1_600_000, 768_000)
    assert p.rtt_ms == 150.0
    fiber = parse_network("fiber")
    assert (fiber.rtt_ms, fiber.down_rate_bps, fiber.up_rate_bps) == (4.0, 20_000_000, 5_000_000)
    assert "WebPageTest" in PRESETS["fiber"].source


def test_cellular_presets_cover_the_packaged_profiles() -> None:
    assert set(CELLULAR) == set(cellular.PROFILE_NAMES)
    assert set(CELLULAR) == set(cellular.cellular_profiles())
    for name in CELLULAR:
        p = parse_network(f"cell-{name}")
        assert p.cellular == name
        assert "Akamai" in PRESETS[f"cell-{name}"].source
