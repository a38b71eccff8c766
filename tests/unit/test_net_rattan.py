"""h2lab.net.rattan: the Rattan config built from a NetworkProfile and a seed (pure)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from h2lab.errors import MissingTool
from h2lab.net.rattan import (
    DELAY_OVERHEAD_MS,
    RATTAN_VERSION,
    LinkFiles,
    build_config,
    calibrated_delay_ms,
    direction_seed,
    rattan_binary,
)
from h2lab.spec.network import parse_network

STATE = Path("/run/h2lab/h2lab-abc123/link")
HOLDER = STATE / "holder.pid"


def _build(spec: str, seed: int = 42) -> tuple[dict[str, Any], LinkFiles]:
    files = build_config(parse_network(spec), seed, STATE, HOLDER)
    return tomllib.loads(files.config_toml), files


def _delay(ms: float) -> str:
    """The Delay cell value for a one-way delay of ``ms`` (Rattan's own latency taken off)."""
    return f"{calibrated_delay_ms(ms) * 1000:.0f}us"


def _chain(links: dict[str, str], start: str, end: str) -> list[str]:
    path = [start]
    while path[-1] != end:
        path.append(links[path[-1]])
        assert len(path) <= len(links) + 1, "loop in [links]"
    return path


def test_full_profile_cells() -> None:
    cfg, files = _build("rtt=100ms,down=10Mbps,up=2Mbps,loss=1%,queue=500", seed=42)
    assert cfg["env"] == {"mode": "Compatible", "left_veth_count": 1}
    cells = cfg["cells"]
    assert set(cells) == {"up_bw", "up_delay", "up_loss", "down_bw", "down_delay", "down_loss"}
    assert cells["down_bw"] == {
        "type": "Bw",
        "bandwidth": "10000000bps",
        "queue": "DropTail",
        "queue_config": {"packet_limit": 500},
    }
    assert cells["up_bw"]["bandwidth"] == "2000000bps"
    assert cells["up_bw"]["queue_config"] == {"packet_limit": 500}
    assert cells["up_delay"] == {"type": "Delay", "delay": _delay(50.0)}
    assert cells["down_delay"] == {"type": "Delay", "delay": _delay(50.0)}
    assert _delay(50.0) == f"{round((50.0 - DELAY_OVERHEAD_MS) * 1000)}us"
    assert cells["up_loss"] == {
        "type": "LossReplay",
        "trace": str(STATE / "loss-up.json"),
        "seed": direction_seed(42, "up"),
    }
    assert cells["down_loss"] == {
        "type": "LossReplay",
        "trace": str(STATE / "loss-down.json"),
        "seed": direction_seed(42, "down"),
    }
    assert set(files.files) == {"loss-up.json", "loss-down.json"}
    assert json.loads(files.files["loss-up.json"]) == {
        "RepeatedLossPatternConfig": {
            "pattern": [{"StaticLossConfig": {"loss": [0.01], "duration": "86400s"}}],
            "count": 0,
        }
    }


def test_links_chain_left_to_right_and_back() -> None:
    cfg, _ = _build("rtt=100ms,down=10Mbps,up=2Mbps,loss=1%")
    links = cfg["links"]
    assert _chain(links, "left", "right") == ["left", "up_bw", "up_delay", "up_loss", "right"]
    assert _chain(links, "right", "left") == [
        "right",
        "down_bw",
        "down_delay",
        "down_loss",
        "left",
    ]
    assert len(links) == 8


def test_no_loss_cell_when_loss_is_zero() -> None:
    cfg, files = _build("rtt=40ms,rate=5Mbps")
    assert set(cfg["cells"]) == {"up_bw", "up_delay", "down_bw", "down_delay"}
    assert files.files == {}
    assert _chain(cfg["links"], "left", "right") == ["left", "up_bw", "up_delay", "right"]
    assert _chain(cfg["links"], "right", "left") == ["right", "down_bw", "down_delay", "left"]


def test_loss_only_in_one_direction() -> None:
    cfg, files = _build("rtt=40ms,down_loss=2%")
    assert "down_loss" in cfg["cells"]
    assert "up_loss" not in cfg["cells"]
    assert set(files.files) == {"loss-down.json"}
    loss = json.loads(files.files["loss-down.json"])
    assert loss["RepeatedLossPatternConfig"]["pattern"][0]["StaticLossConfig"]["loss"] == [0.02]


def test_unlimited_rate_has_no_bw_cell() -> None:
    cfg, _ = _build("lan")
    assert set(cfg["cells"]) == {"up_delay", "down_delay"}
    assert cfg["cells"]["up_delay"]["delay"] == "0us"
    assert _chain(cfg["links"], "left", "right") == ["left", "up_delay", "right"]


def test_asymmetric_delay() -> None:
    cfg, _ = _build("up_delay=10ms,down_delay=0.5ms")
    assert cfg["cells"]["up_delay"]["delay"] == _delay(10.0)
    assert cfg["cells"]["down_delay"]["delay"] == _delay(0.5)
    assert _delay(10.0) != _delay(0.5)


def test_calibrated_delay() -> None:
    assert calibrated_delay_ms(0.0) == 0.0
    assert calibrated_delay_ms(100.0) == pytest.approx(100.0 - DELAY_OVERHEAD_MS)
    previous = 0.0
    for ms in (0.1, 0.5, 1.0, 1.75, 2.0, 10.0, 75.0, 400.0):
        cal = calibrated_delay_ms(ms)
        assert 0.0 < cal <= ms
        assert ms - cal <= DELAY_OVERHEAD_MS + 1e-9
        assert cal > previous  # more delay asked, more delay set
        previous = cal


@pytest.mark.parametrize(
    ("rate", "bandwidth"),
    [
        ("768kbps", "768000bps"),
        ("1Gbps", "1Gbps"),
        ("2500Mbps", "2Gbps 500000000bps"),
        ("999999999bps", "999999999bps"),
    ],
)
def test_bandwidth_formatting(rate: str, bandwidth: str) -> None:
    cfg, _ = _build(f"rate={rate}")
    assert cfg["cells"]["up_bw"]["bandwidth"] == bandwidth
    assert cfg["cells"]["down_bw"]["bandwidth"] == bandwidth


def test_queue_limits() -> None:
    packets, _ = _build("rtt=100ms,rate=10Mbps,queue=64")
    assert packets["cells"]["up_bw"]["queue_config"] == {"packet_limit": 64}
    default, _ = _build("rtt=100ms,rate=10Mbps")
    assert default["cells"]["up_bw"]["queue_config"] == {"packet_limit": 1000}
    size, _ = _build("rtt=100ms,rate=10Mbps,queue=64KB")
    assert size["cells"]["down_bw"]["queue_config"] == {"byte_limit": 64_000}
    # one BDP per direction with its own rate: 10 Mbit/s * 100 ms = 125 kB, 2 Mbit/s -> 25 kB
    bdp, _ = _build("rtt=100ms,down=10Mbps,up=2Mbps,queue=1bdp")
    assert bdp["cells"]["down_bw"]["queue_config"] == {"byte_limit": 125_000}
    assert bdp["cells"]["up_bw"]["queue_config"] == {"byte_limit": 25_000}
    tiny, _ = _build("rtt=1ms,rate=1Mbps,queue=1bdp")
    assert tiny["cells"]["up_bw"]["queue_config"] == {"byte_limit": 1500}


def test_direction_seed() -> None:
    assert direction_seed(42, "up") == 84
    assert direction_seed(42, "down") == 85
    assert direction_seed(2**63 - 1, "down") < 2**63
    seeds = {direction_seed(s, d) for s in range(50) for d in ("up", "down")}
    assert len(seeds) == 100


def test_seed_changes_only_loss_seeds() -> None:
    a, _ = _build("rtt=20ms,loss=1%", seed=1)
    b, _ = _build("rtt=20ms,loss=1%", seed=2)
    assert a["cells"]["up_loss"]["seed"] == 2
    assert b["cells"]["up_loss"]["seed"] == 4
    a["cells"]["up_loss"].pop("seed")
    a["cells"]["down_loss"].pop("seed")
    b["cells"]["up_loss"].pop("seed")
    b["cells"]["down_loss"].pop("seed")
    assert a == b


def test_holder_command() -> None:
    cfg, _ = _build("lan")
    assert cfg["commands"]["left"] == [
        "/bin/sh",
        "-c",
        f"echo $$ > {HOLDER}.tmp && mv {HOLDER}.tmp {HOLDER} && exec sleep infinity",
    ]


def test_rattan_binary_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("H2LAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("H2LAB_RATTAN", raising=False)
    with pytest.raises(MissingTool) as exc:
        rattan_binary()
    assert exc.value.tool == "rattan"

    on_path = tmp_path / "bin" / "rattan"
    on_path.parent.mkdir()
    on_path.write_text("#!/bin/sh\n")
    on_path.chmod(0o755)
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert rattan_binary() == on_path

    cached = tmp_path / "cache" / f"rattan-{RATTAN_VERSION}" / "bin" / "rattan"
    cached.parent.mkdir(parents=True)
    cached.write_text("")
    assert rattan_binary() == cached

    monkeypatch.setenv("H2LAB_RATTAN", "/opt/rattan")
    assert rattan_binary() == Path("/opt/rattan")
