"""h2lab.analysis.factors: numeric features from the page and network specs of a cell."""

from __future__ import annotations

import math

import pytest

from h2lab.analysis.factors import (
    Cell,
    NetworkFeatures,
    PageFeatures,
    cell_factors,
    network_features,
    page_features,
)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("synthetic:n=64,size=10KB,origins=2", PageFeatures(64, 10_000, 2)),
        ("synthetic:n=8,size=1.5KB,origins=1", PageFeatures(8, 1_500, 1)),
        ("synthetic:images:n=16,size=10KB", PageFeatures(16, 10_000, 1)),
        # a sprite is one object carrying all the tiles' bytes
        ("synthetic:images:n=16,size=10KB,variant=sprite", PageFeatures(1, 160_000, 1)),
        ("synthetic:cssjs:files=4", PageFeatures(None, None, None)),  # no single object size
        ("synthetic:n=0,size=10KB", PageFeatures(None, None, None)),  # does not parse
        ("har:site.har", PageFeatures(None, None, None)),
    ],
)
def test_page_features(spec: str, expected: PageFeatures) -> None:
    assert page_features(spec) == expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("rtt=100ms,down=10Mbps,up=2Mbps,loss=1%", NetworkFeatures(100.0, 1e7, 2e6, 0.01, 0.0)),
        ("cable", NetworkFeatures(28.0, 5e6, 1e6, 0.0, 0.0)),  # the preset's values
        ("cable,loss=2%", NetworkFeatures(28.0, 5e6, 1e6, 0.02, 0.0)),
        ("rtt=50ms", NetworkFeatures(50.0, math.inf, math.inf, 0.0, 0.0)),  # no rate: unlimited
        ("rtt=50ms,down_loss=3%", NetworkFeatures(50.0, math.inf, math.inf, 0.03, 0.0)),
        ("cell-poor", NetworkFeatures(None, None, None, None)),  # cellular traces drive it
        ("rtt=50ms,down_trace=/nonexistent", NetworkFeatures(None, None, None, None)),
        ("bogus", NetworkFeatures(None, None, None, None)),
        ("rtt=100ms,rate=10Mbps,jitter=5ms", NetworkFeatures(100.0, 1e7, 1e7, 0.0, 5.0)),
    ],
)
def test_network_features(spec: str, expected: NetworkFeatures) -> None:
    assert network_features(spec) == expected


def test_features_use_names_only_where_numbers_are_unknown() -> None:
    known = cell_factors(
        Cell.of(
            page="synthetic:n=64,size=10KB,origins=1",
            network="cable",
            server="nginx",
            client="h2load",
        )
    ).features()
    assert known == {
        "object_count": 64.0,
        "object_size_bytes": 10_000.0,
        "origins": 1.0,
        "rtt_ms": 28.0,
        "down_rate_bps": 5e6,
        "up_rate_bps": 1e6,
        "loss_fraction": 0.0,
        "jitter_ms": 0.0,
        "server": "nginx",
        "client": "h2load",
        "congestion_control": "cubic",
        "initcwnd_packets": 10.0,
        "tls": "1.3",
        "view": "first",
        "discovery": "forced",
        "h3_origins": "all",
    }
    unknown = cell_factors(
        Cell.of(
            page="synthetic:cssjs:files=4",
            network="cell-poor",
            server="nginx",
            client="chromium",
            congestion_control="bbr",
            initcwnd_packets=10,
        )
    ).features()
    assert unknown["page"] == "synthetic:cssjs:files=4"
    assert unknown["network"] == "cell-poor"
    assert unknown["object_count"] is None and unknown["rtt_ms"] is None
