"""h2lab.spec.network: presets and free-form network specs -> NetworkProfile."""

from __future__ import annotations

import dataclasses

import pytest

from h2lab.errors import SpecError
from h2lab.spec.network import (
    DEFAULT_QUEUE_PACKETS,
    MTU_BYTES,
    PRESETS,
    NetworkProfile,
    Queue,
    parse_network,
)


def _error(text: str, field: str = "factors.network[0]") -> SpecError:
    with pytest.raises(SpecError) as exc:
        parse_network(text, "x.toml", field=field)
    return exc.value


def test_preset_3g_fast() -> None:
    p = parse_network("3g-fast")
    assert p == NetworkProfile(
        name="3g-fast",
        up_rate_bps=768_000,
        down_rate_bps=1_600_000,
        up_delay_ms=75.0,
        down_delay_ms=75.0,
        up_loss_ratio=0.0,
        down_loss_ratio=0.0,
        queue=Queue(packets=DEFAULT_QUEUE_PACKETS),
    )
    assert p.rtt_ms == 150.0


def test_preset_cable_and_lan() -> None:
    cable = parse_network("cable")
    assert (cable.name, cable.rtt_ms, cable.down_rate_bps, cable.up_rate_bps) == (
        "cable",
        28.0,
        5_000_000,
        1_000_000,
    )
    lan = parse_network("lan")
    assert (lan.rtt_ms, lan.up_rate_bps, lan.down_rate_bps) == (0.0, None, None)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_is_its_free_form_spec_with_its_name(name: str) -> None:
    p = parse_network(f"  {name} ")
    assert p == dataclasses.replace(parse_network(PRESETS[name]), name=name)
    expected = f"cellular={p.cellular}," if p.cellular else f"rtt={p.rtt_ms:g}ms"
    assert p.describe().startswith(expected)


def test_free_form_all_keys() -> None:
    p = parse_network("rtt=100ms,down=10Mbps,up=2Mbps,loss=1%,queue=500")
    assert p.name == "rtt=100ms,down=10Mbps,up=2Mbps,loss=1%,queue=500"
    assert (p.up_delay_ms, p.down_delay_ms) == (50.0, 50.0)
    assert (p.up_rate_bps, p.down_rate_bps) == (2_000_000, 10_000_000)
    assert (p.up_loss_ratio, p.down_loss_ratio) == (0.01, 0.01)
    assert p.queue == Queue(packets=500)


def test_free_form_spaces_are_stripped() -> None:
    p = parse_network(" rtt = 20ms , rate = 5Mbps ")
    assert p.rtt_ms == 20.0
    assert (p.up_rate_bps, p.down_rate_bps) == (5_000_000, 5_000_000)


def test_free_form_defaults() -> None:
    p = parse_network("rtt=10ms")
    assert (p.up_rate_bps, p.down_rate_bps) == (None, None)
    assert (p.up_loss_ratio, p.down_loss_ratio) == (0.0, 0.0)
    assert p.queue == Queue(packets=DEFAULT_QUEUE_PACKETS)


def test_delay_is_one_way_and_per_direction_overrides() -> None:
    p = parse_network("delay=30ms,up_delay=5ms")
    assert (p.up_delay_ms, p.down_delay_ms) == (5.0, 30.0)
    assert p.rtt_ms == 35.0
    q = parse_network("down_delay=7ms")
    assert (q.up_delay_ms, q.down_delay_ms) == (0.0, 7.0)


def test_rate_with_per_direction_override() -> None:
    p = parse_network("rate=10Mbps,up=1Mbps")
    assert (p.up_rate_bps, p.down_rate_bps) == (1_000_000, 10_000_000)


def test_loss_per_direction() -> None:
    p = parse_network("loss=2%,down_loss=0.5%")
    assert p.up_loss_ratio == pytest.approx(0.02)
    assert p.down_loss_ratio == pytest.approx(0.005)


@pytest.mark.parametrize(
    ("text", "queue"),
    [
        ("1000", Queue(packets=1000)),
        ("64p", Queue(packets=64)),
        ("64KB", Queue(bytes=64_000)),
        ("1MiB", Queue(bytes=1_048_576)),
        ("1500B", Queue(bytes=1500)),
        ("1bdp", Queue(bdp=1.0)),
        ("0.5bdp", Queue(bdp=0.5)),
        ("2BDP", Queue(bdp=2.0)),
    ],
)
def test_queue_forms(text: str, queue: Queue) -> None:
    assert parse_network(f"rate=10Mbps,queue={text}").queue == queue


def test_queue_describe_and_limit_bytes() -> None:
    assert Queue(packets=1000).describe() == "1000p"
    assert Queue(bytes=64_000).describe() == "64KB"
    assert Queue(bdp=0.5).describe() == "0.5bdp"
    assert Queue(packets=1000).limit_bytes(10_000_000, 100.0) is None
    assert Queue(bytes=64_000).limit_bytes(10_000_000, 100.0) == 64_000
    # 10 Mbit/s * 100 ms = 125,000 bytes
    assert Queue(bdp=1.0).limit_bytes(10_000_000, 100.0) == 125_000
    assert Queue(bdp=2.0).limit_bytes(10_000_000, 100.0) == 250_000
    # never below one packet
    assert Queue(bdp=1.0).limit_bytes(10_000_000, 0.0) == MTU_BYTES
    # no rate: no byte limit from a BDP
    assert Queue(bdp=1.0).limit_bytes(None, 100.0) is None


def test_describe_and_as_dict() -> None:
    p = parse_network("rtt=100ms,down=10Mbps,up=2Mbps,loss=1%,queue=1bdp")
    assert p.describe() == "rtt=100ms,down=10Mbps,up=2Mbps,loss=1%,queue=1bdp"
    assert p.as_dict() == {
        "name": "rtt=100ms,down=10Mbps,up=2Mbps,loss=1%,queue=1bdp",
        "up_rate_bps": 2_000_000,
        "down_rate_bps": 10_000_000,
        "up_delay_ms": 50.0,
        "down_delay_ms": 50.0,
        "up_loss_ratio": 0.01,
        "down_loss_ratio": 0.01,
        "up_loss_burst": 1.0,
        "down_loss_burst": 1.0,
        "up_trace": None,
        "down_trace": None,
        "queue": "1bdp",
        "aqm": "droptail",
        "cellular": None,
    }
    asym = parse_network("up_loss=1%,down_loss=2%")
    assert asym.describe() == "rtt=0ms,up_loss=1%,down_loss=2%,queue=1000p"


@pytest.mark.parametrize(
    ("text", "field", "reason"),
    [
        ("rate=10Mbs", "factors.network[0].rate", "unknown rate unit in '10Mbs'"),
        ("up=10Mbs", "factors.network[0].up", "unknown rate unit"),
        ("down=0Mbps", "factors.network[0].down", "rate must be positive"),
        ("loss=101%", "factors.network[0].loss", "cannot exceed 100%"),
        ("down_loss=1", "factors.network[0].down_loss", "needs a % sign"),
        ("delay=-5ms", "factors.network[0].delay", "must not be negative"),
        ("rtt=-10ms", "factors.network[0].rtt", "must not be negative"),
        ("rtt=100", "factors.network[0].rtt", "unknown time unit"),
        ("up_delay=5m", "factors.network[0].up_delay", "unknown time unit"),
        ("queue=0", "factors.network[0].queue", "queue must be positive"),
        ("queue=0bdp", "factors.network[0].queue", "queue must be positive"),
        ("queue=1000B", "factors.network[0].queue", "smaller than one packet"),
        ("queue=lots", "factors.network[0].queue", "not a size"),
        ("bandwidth=10Mbps", "factors.network[0].bandwidth", "unknown key"),
        ("rtt=10ms,rtt=20ms", "factors.network[0].rtt", "given twice"),
        ("rtt=10ms,delay=5ms", "factors.network[0]", "give rtt or delay, not both"),
        ("rtt=", "factors.network[0]", "expected key=value, got 'rtt='"),
        ("rtt=10ms,", "factors.network[0]", "expected key=value, got ''"),
    ],
)
def test_bad_input_names_source_and_field(text: str, field: str, reason: str) -> None:
    e = _error(text)
    assert e.source == "x.toml"
    assert e.field == field
    assert reason in e.reason
    assert str(e) == f"x.toml: {field}: {e.reason}"


def test_bad_value_is_attributed_to_its_own_key() -> None:
    # "1000" is a fine queue but not a duration: the error must name rtt, not queue
    e = _error("queue=1000,rtt=1000")
    assert e.field == "factors.network[0].rtt"
    assert "'1000'" in e.reason
    # the same bad value under two keys: the first one parsed (loss) is named
    e = _error("up_loss=150%,loss=150%")
    assert e.field == "factors.network[0].loss"


def test_unknown_preset_names_field_and_lists_presets() -> None:
    e = _error("5g", field="factors.network[2]")
    assert (e.source, e.field) == ("x.toml", "factors.network[2]")
    assert "unknown profile '5g'" in e.reason
    for name in ("3g-fast", "cable", "lan"):
        assert name in e.reason


def test_default_source_and_field() -> None:
    with pytest.raises(SpecError) as exc:
        parse_network("rate=fast")
    assert (exc.value.source, exc.value.field) == ("network", "network.rate")
