"""h2lab.net.rattan: the Rattan config built from a NetworkProfile and a seed (pure)."""

from __future__ import annotations

import dataclasses
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from h2lab.errors import MissingTool
from h2lab.net.lab import packet_socket_drops
from h2lab.net.rattan import (
    DELAY_OVERHEAD_MS,
    RATTAN_VERSION,
    LinkFiles,
    build_config,
    calibrated_delay_ms,
    direction_seed,
    rattan_binary,
)
from h2lab.spec import cellular
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
    monkeypatch.setenv("H2LAB_SYSTEM_CACHE", str(tmp_path / "system"))
    with pytest.raises(MissingTool) as exc:
        rattan_binary()
    assert exc.value.tool == "rattan"
    assert exc.value.hint == (
        f"not in {tmp_path}/cache/rattan-{RATTAN_VERSION}/bin/rattan or {tmp_path}/system/"
        f"rattan-{RATTAN_VERSION}/bin/rattan nor on PATH: run `make setup`"
    )

    on_path = tmp_path / "bin" / "rattan"
    on_path.parent.mkdir()
    on_path.write_text("#!/bin/sh\n")
    on_path.chmod(0o755)
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert rattan_binary() == on_path

    shared = tmp_path / "system" / f"rattan-{RATTAN_VERSION}" / "bin" / "rattan"
    shared.parent.mkdir(parents=True)
    shared.write_text("")
    assert rattan_binary() == shared  # the shared installation, before PATH

    cached = tmp_path / "cache" / f"rattan-{RATTAN_VERSION}" / "bin" / "rattan"
    cached.parent.mkdir(parents=True)
    cached.write_text("")
    assert rattan_binary() == cached  # the user's own, before the shared one

    monkeypatch.setenv("H2LAB_RATTAN", "/opt/rattan")
    assert rattan_binary() == Path("/opt/rattan")


def _humantime(ms: float) -> str:
    """A duration as the trace files write it: whole ms as "70ms", else microseconds."""
    us = round(ms * 1000)
    return f"{us // 1000}ms" if us % 1000 == 0 else f"{us}us"


def test_burst_loss_writes_the_two_state_pattern() -> None:
    profile = parse_network("rtt=20ms,loss=1%,loss_burst=4")
    cfg, files = _build("rtt=20ms,loss=1%,loss_burst=4")
    assert cfg["cells"]["up_loss"]["type"] == "LossReplay"
    for direction in ("up", "down"):
        trace = json.loads(files.files[f"loss-{direction}.json"])
        pattern = trace["RepeatedLossPatternConfig"]["pattern"]
        assert len(pattern) == 1
        loss = pattern[0]["StaticLossConfig"]["loss"]
        assert loss == profile.up_loss.pattern()
        assert loss == pytest.approx([0.01 * 0.25 / 0.99, 0.75])


def test_burst_loss_per_direction() -> None:
    _, files = _build("rtt=20ms,loss=2%,down_loss_burst=3")
    up = json.loads(files.files["loss-up.json"])["RepeatedLossPatternConfig"]["pattern"]
    down = json.loads(files.files["loss-down.json"])["RepeatedLossPatternConfig"]["pattern"]
    assert up[0]["StaticLossConfig"]["loss"] == [0.02]
    assert down[0]["StaticLossConfig"]["loss"] == pytest.approx([0.02 / 3 / 0.98, 2 / 3])


def test_codel_queue() -> None:
    cfg, _ = _build("rtt=100ms,rate=10Mbps,aqm=codel")
    for cell in ("up_bw", "down_bw"):
        assert cfg["cells"][cell]["queue"] == "CoDel"
        assert cfg["cells"][cell]["queue_config"] == {
            "packet_limit": 1000,
            "target": "5000us",
            "interval": "100000us",
            "mtu": 1500,
        }


def test_codel_queue_with_its_own_settings_and_a_byte_limit() -> None:
    cfg, _ = _build(
        "rtt=100ms,rate=10Mbps,aqm=codel,codel_target=10ms,codel_interval=0.2s,queue=1bdp"
    )
    assert cfg["cells"]["down_bw"]["queue_config"] == {
        "byte_limit": 125_000,
        "target": "10000us",
        "interval": "200000us",
        "mtu": 1500,
    }


def test_mahimahi_trace_is_a_bw_replay_cell_with_an_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("H2LAB_CACHE", str(tmp_path / "cache"))
    (tmp_path / "flat.trace").write_text("".join(f"{t}\n" for t in range(1, 101)))
    monkeypatch.chdir(tmp_path)
    cfg, files = _build("rtt=40ms,trace=flat.trace")
    absolute = str((tmp_path / "flat.trace").resolve())
    for direction in ("up", "down"):
        assert cfg["cells"][f"{direction}_bw"] == {
            "type": "BwReplay",
            "trace": absolute,
            "queue": "DropTail",
            "queue_config": {"packet_limit": 1000},
        }
    assert _chain(cfg["links"], "left", "right") == ["left", "up_bw", "up_delay", "right"]
    assert _chain(cfg["links"], "right", "left") == ["right", "down_bw", "down_delay", "left"]
    assert files.files == {}


def test_mahimahi_trace_one_way_with_a_fixed_rate_the_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("H2LAB_CACHE", str(tmp_path / "cache"))
    trace = tmp_path / "flat.trace"
    trace.write_text("".join(f"{t}\n" for t in range(1, 101)))
    cfg, _ = _build(f"rtt=40ms,up=1Mbps,down_trace={trace},queue=64KB")
    assert cfg["cells"]["up_bw"]["type"] == "Bw"
    assert cfg["cells"]["up_bw"]["bandwidth"] == "1000000bps"
    assert cfg["cells"]["down_bw"]["type"] == "BwReplay"
    assert cfg["cells"]["down_bw"]["trace"] == str(trace.resolve())
    assert cfg["cells"]["down_bw"]["queue_config"] == {"byte_limit": 64_000}


def _cellular(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **changes: Any) -> LinkFiles:
    monkeypatch.setenv("H2LAB_CACHE", str(tmp_path / "cache"))
    profile = dataclasses.replace(parse_network("cell-good"), **changes)
    return build_config(profile, 42, STATE, HOLDER)


def test_cellular_profile_cells_both_ways(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _cellular(monkeypatch, tmp_path)
    cfg = tomllib.loads(files.config_toml)
    cells = cfg["cells"]
    assert set(cells) == {"up_bw", "up_delay", "up_loss", "down_bw", "down_delay", "down_loss"}
    for direction in ("up", "down"):
        assert cells[f"{direction}_bw"] == {
            "type": "BwReplay",
            "trace": str(STATE / "cellular-bw.json"),
            "queue": "DropTail",
            "queue_config": {"byte_limit": 128_000},
        }
        assert cells[f"{direction}_delay"] == {
            "type": "DelayReplay",
            "trace": str(STATE / "cellular-delay.json"),
        }
        assert cells[f"{direction}_loss"] == {
            "type": "LossReplay",
            "trace": str(STATE / "cellular-loss.json"),
            "seed": direction_seed(42, direction),
        }
    assert _chain(cfg["links"], "left", "right") == [
        "left",
        "up_bw",
        "up_delay",
        "up_loss",
        "right",
    ]
    assert _chain(cfg["links"], "right", "left") == [
        "right",
        "down_bw",
        "down_delay",
        "down_loss",
        "left",
    ]
    assert set(files.files) == {"cellular-bw.json", "cellular-delay.json", "cellular-loss.json"}


def test_cellular_trace_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _cellular(monkeypatch, tmp_path)
    good = cellular.cellular_profiles()["good"]

    bw = json.loads(files.files["cellular-bw.json"])["RepeatedBwPatternConfig"]
    assert bw["count"] == 0
    assert len(bw["pattern"]) == good.steps
    assert bw["pattern"][0]["StaticBwConfig"] == {
        "bw": f"{round(good.rate_kbps[0] * 1000)}bps",
        "duration": "70ms",
    }

    delay = json.loads(files.files["cellular-delay.json"])["RepeatedDelayPatternConfig"]
    assert delay["count"] == 0
    assert len(delay["pattern"]) == good.steps
    first = delay["pattern"][0]["StaticDelayConfig"]
    # one-way = RTT / 2, less Rattan's own latency, like a fixed Delay cell
    assert first["delay"] == _humantime(calibrated_delay_ms(good.rtt_ms[0] / 2))
    assert first["duration"] == "70ms"

    loss = json.loads(files.files["cellular-loss.json"])["RepeatedLossPatternConfig"]
    assert loss["count"] == 1
    assert loss["pattern"][-1]["StaticLossConfig"]["loss"] == [0.0]
    assert any(seg["StaticLossConfig"]["loss"][0] > 0 for seg in loss["pattern"])


def test_cellular_bandwidth_part_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _cellular(monkeypatch, tmp_path, cellular_parts=("bw",))
    cfg = tomllib.loads(files.config_toml)
    assert set(cfg["cells"]) == {"up_bw", "down_bw"}
    assert cfg["cells"]["up_bw"]["type"] == "BwReplay"
    assert _chain(cfg["links"], "left", "right") == ["left", "up_bw", "right"]
    assert _chain(cfg["links"], "right", "left") == ["right", "down_bw", "left"]
    assert len(cfg["links"]) == 4


def test_cellular_delay_part_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _cellular(monkeypatch, tmp_path, cellular_parts=("delay",))
    cfg = tomllib.loads(files.config_toml)
    assert set(cfg["cells"]) == {"up_delay", "down_delay"}
    assert cfg["cells"]["down_delay"]["type"] == "DelayReplay"
    assert _chain(cfg["links"], "left", "right") == ["left", "up_delay", "right"]


def test_cellular_no_parts_passes_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _cellular(monkeypatch, tmp_path, cellular_parts=())
    cfg = tomllib.loads(files.config_toml)
    assert cfg["cells"] == {
        "up_delay": {"type": "Delay", "delay": "0us"},
        "down_delay": {"type": "Delay", "delay": "0us"},
    }
    assert _chain(cfg["links"], "left", "right") == ["left", "up_delay", "right"]


def test_packet_socket_drops_sums_the_d_of_each_skmem() -> None:
    """``ss -0 -m`` in a Rattan namespace: one line per AF_PACKET socket (both veths)."""
    text = (
        "Netid Recv-Q Send-Q Local Address:Port Peer Address:Port Process\n"
        "p_raw 0 0 *:vL1-R-D68R2f * \n"
        "\t skmem:(r0,rb33554432,t0,tb212992,f0,w0,o0,bl0,d17)\n"
        "p_raw 0 0 *:vR1-L-D68R2f * \n"
        "\t skmem:(r4352,rb212992,t0,tb212992,f0,w0,o0,bl0,d5)\n"
    )
    assert packet_socket_drops(text) == 22
    assert packet_socket_drops(text.replace("d17", "d0").replace("d5", "d0")) == 0
    assert packet_socket_drops("Netid Recv-Q Send-Q\n") == 0
