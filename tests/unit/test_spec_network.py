"""h2lab.spec.network: presets and free-form network specs -> NetworkProfile."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from h2lab.errors import SpecError
from h2lab.spec.network import (
    CELLULAR_QUEUE_BYTES,
    CODEL_INTERVAL_MS,
    CODEL_TARGET_MS,
    DEFAULT_QUEUE_PACKETS,
    MTU_BYTES,
    NETWORK_KEYS,
    PRESETS,
    LossModel,
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
        "codel_target_ms": 5.0,
        "codel_interval_ms": 100.0,
        "cellular": None,
        "cellular_parts": ["bw", "delay", "loss"],
        "up_jitter_ms": 0.0,
        "down_jitter_ms": 0.0,
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


# --- a preset followed by overriding keys -----------------------------------------------------


def test_preset_override_loss_keeps_rates_and_rtt() -> None:
    p = parse_network("cable,loss=1%")
    assert p.name == "cable,loss=1%"
    assert (p.rtt_ms, p.down_rate_bps, p.up_rate_bps) == (28.0, 5_000_000, 1_000_000)
    assert (p.up_loss_ratio, p.down_loss_ratio) == (0.01, 0.01)


def test_preset_override_rate_replaces_both_directions() -> None:
    p = parse_network("cable,rate=10Mbps")
    assert (p.up_rate_bps, p.down_rate_bps) == (10_000_000, 10_000_000)
    assert p.rtt_ms == 28.0


def test_preset_override_one_direction_keeps_the_other() -> None:
    p = parse_network("cable,down=50Mbps")
    assert (p.up_rate_bps, p.down_rate_bps) == (1_000_000, 50_000_000)


def test_preset_override_rtt_and_delay() -> None:
    p = parse_network("cable,rtt=100ms")
    assert p.rtt_ms == 100.0
    assert (p.down_rate_bps, p.up_rate_bps) == (5_000_000, 1_000_000)
    # delay belongs to the same family: it replaces the preset's rtt instead of clashing
    q = parse_network("cable, delay=10ms")
    assert (q.up_delay_ms, q.down_delay_ms) == (10.0, 10.0)


def test_preset_override_given_twice_is_an_error() -> None:
    e = _error("cable,loss=1%,loss=2%")
    assert e.field == "factors.network[0].loss"
    assert "given twice" in e.reason


def test_preset_override_must_be_key_value() -> None:
    e = _error("cable,fast")
    assert e.field == "factors.network[0]"
    assert "expected key=value" in e.reason


def test_preset_override_bad_value_names_the_key() -> None:
    e = _error("cable,loss=lots")
    assert e.field == "factors.network[0].loss"


# --- burst loss -------------------------------------------------------------------------------


@pytest.mark.parametrize(("ratio", "burst"), [(0.01, 4.0), (0.05, 2.5), (0.2, 1.5)])
def test_loss_burst_pattern_is_the_gilbert_chain(ratio: float, burst: float) -> None:
    pattern = LossModel(ratio, burst).pattern()
    r = 1 / burst
    p = ratio * r / (1 - ratio)
    assert pattern == pytest.approx([p, 1 - r])
    # stationary share of the loss state, and the mean burst 1 / (1 - P(drop | dropped))
    assert pattern[0] / (pattern[0] + (1 - pattern[1])) == pytest.approx(ratio)
    assert 1 / (1 - pattern[1]) == pytest.approx(burst)


def test_loss_pattern_without_bursts_or_loss() -> None:
    assert LossModel(0.02).pattern() == [0.02]
    assert LossModel(0.02, 1.0).pattern() == [0.02]
    assert LossModel(0.0, 4.0).pattern() == [0.0]
    assert LossModel(1.0, 4.0).pattern() == [1.0]


def test_loss_burst_is_parsed_per_direction() -> None:
    p = parse_network("rtt=20ms,loss=1%,loss_burst=4")
    assert (p.up_loss_burst, p.down_loss_burst) == (4.0, 4.0)
    assert p.up_loss == LossModel(0.01, 4.0)
    assert p.down_loss.pattern() == pytest.approx([0.01 * 0.25 / 0.99, 0.75])
    assert "loss_burst=4" in p.describe()
    q = parse_network("rtt=20ms,loss=1%,loss_burst=4,down_loss_burst=2")
    assert (q.up_loss_burst, q.down_loss_burst) == (4.0, 2.0)
    assert parse_network("rtt=20ms,loss=1%").up_loss_burst == 1.0


@pytest.mark.parametrize(
    ("text", "field", "reason"),
    [
        ("loss=1%,loss_burst=0.5", "factors.network[0].loss_burst", "at least 1 packet"),
        ("loss=1%,up_loss_burst=0", "factors.network[0].up_loss_burst", "at least 1 packet"),
        ("loss=1%,loss_burst=long", "factors.network[0].loss_burst", "number of packets"),
    ],
)
def test_bad_loss_burst(text: str, field: str, reason: str) -> None:
    e = _error(text)
    assert e.field == field
    assert reason in e.reason


# --- AQM --------------------------------------------------------------------------------------


def test_aqm_codel_with_rfc_8289_defaults() -> None:
    p = parse_network("rtt=50ms,rate=10Mbps,aqm=codel")
    assert p.aqm == "codel"
    assert (p.codel_target_ms, p.codel_interval_ms) == (5.0, 100.0)
    assert (CODEL_TARGET_MS, CODEL_INTERVAL_MS) == (5.0, 100.0)
    assert p.describe().endswith(",aqm=codel")
    assert p.as_dict()["aqm"] == "codel"


def test_aqm_codel_settings_and_default_droptail() -> None:
    p = parse_network("rate=10Mbps,aqm=codel,codel_target=10ms,codel_interval=200ms")
    assert (p.codel_target_ms, p.codel_interval_ms) == (10.0, 200.0)
    q = parse_network("rate=10Mbps")
    assert q.aqm == "droptail"
    assert "aqm" not in q.describe()


@pytest.mark.parametrize(
    ("text", "field", "reason"),
    [
        ("aqm=red", "factors.network[0].aqm", "unknown queue discipline 'red'"),
        ("aqm=CoDel", "factors.network[0].aqm", "use droptail or codel"),
        ("aqm=codel,codel_target=5", "factors.network[0].codel_target", "unknown time unit"),
    ],
)
def test_bad_aqm(text: str, field: str, reason: str) -> None:
    e = _error(text)
    assert e.field == field
    assert reason in e.reason


# --- cellular profiles ------------------------------------------------------------------------


def test_cellular_profile() -> None:
    p = parse_network("cellular=good")
    assert p.cellular == "good"
    assert p.queue == Queue(bytes=CELLULAR_QUEUE_BYTES)
    assert CELLULAR_QUEUE_BYTES == 128_000
    assert (p.up_rate_bps, p.down_rate_bps, p.rtt_ms) == (None, None, 0.0)
    assert (p.up_loss_ratio, p.down_loss_ratio) == (0.0, 0.0)
    assert p.describe() == "cellular=good,queue=128KB"
    assert p.as_dict()["cellular"] == "good"


def test_cellular_preset_is_the_cellular_key() -> None:
    p = parse_network("cell-good")
    assert p == dataclasses.replace(parse_network("cellular=good"), name="cell-good")


def test_cellular_profile_takes_a_queue_and_aqm() -> None:
    p = parse_network("cell-poor,queue=64KB,aqm=codel")
    assert (p.cellular, p.queue, p.aqm) == ("poor", Queue(bytes=64_000), "codel")


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("cell-good,rate=10Mbps", "rate"),
        ("cell-good,loss=1%", "loss"),
        ("cell-good,rtt=100ms", "rtt"),
        ("cellular=good,down=5Mbps", "down"),
        ("cellular=fair,up_loss=1%", "up_loss"),
        ("cellular=fair,delay=5ms", "delay"),
    ],
)
def test_cellular_profile_clashes_with_rate_delay_and_loss(text: str, key: str) -> None:
    e = _error(text)
    assert e.field == f"factors.network[0].{key}"
    assert "cellular profile sets rate, delay and loss itself" in e.reason


def test_unknown_cellular_profile() -> None:
    e = _error("cellular=great")
    assert e.field == "factors.network[0].cellular"
    assert "unknown cellular profile 'great'" in e.reason
    assert "verypoor" in e.reason


def test_cellular_profile_with_a_bdp_queue_is_an_error() -> None:
    # a trace-driven rate has no single BDP; Rattan would get no queue limit
    e = _error("cell-good,queue=1bdp")
    assert e.field == "factors.network[0].queue"
    assert "fixed rate" in e.reason


# --- Mahimahi traces --------------------------------------------------------------------------


def _trace(tmp_path: Path, name: str = "flat.trace") -> Path:
    path = tmp_path / name
    path.write_text("".join(f"{t}\n" for t in range(1, 101)))
    return path


def test_trace_sets_both_directions_and_no_rate(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    p = parse_network(f"rtt=20ms,trace={trace}")
    assert (p.up_trace, p.down_trace) == (str(trace), str(trace))
    assert (p.up_rate_bps, p.down_rate_bps) == (None, None)
    assert p.rtt_ms == 20.0
    assert f"down_trace={trace}" in p.describe()
    assert p.as_dict()["up_trace"] == str(trace)


def test_trace_per_direction_with_a_fixed_rate_the_other_way(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    p = parse_network(f"rtt=20ms,up=1Mbps,down_trace={trace}")
    assert (p.up_trace, p.down_trace) == (None, str(trace))
    assert (p.up_rate_bps, p.down_rate_bps) == (1_000_000, None)


def test_trace_replaces_a_presets_rates(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    p = parse_network(f"cable,trace={trace}")
    assert (p.up_rate_bps, p.down_rate_bps) == (None, None)
    assert p.down_trace == str(trace)
    assert p.rtt_ms == 28.0


def test_trace_path_kept_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _trace(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert parse_network("trace=./flat.trace").up_trace == "./flat.trace"


def test_trace_home_is_expanded_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # later readers (the Rattan config, net check) open the path as is: no "~" may reach them
    trace = _trace(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    p = parse_network("trace=~/flat.trace")
    assert (p.up_trace, p.down_trace) == (str(trace), str(trace))


def test_unreadable_trace_names_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.trace"
    e = _error(f"trace={missing}")
    assert e.field == "factors.network[0].trace"
    assert str(missing) in e.reason
    assert "cannot read" in e.reason
    e = _error(f"rtt=10ms,down_trace={missing}")
    assert e.field == "factors.network[0].down_trace"


def test_empty_trace_names_the_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.trace"
    empty.write_text("")
    e = _error(f"trace={empty}")
    assert e.field == "factors.network[0].trace"
    assert str(empty) in e.reason
    assert "empty file" in e.reason


def test_malformed_trace_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.trace"
    bad.write_text("1\n2\nthree\n")
    e = _error(f"trace={bad}")
    assert e.field == "factors.network[0].trace"
    assert f"{bad}:3:" in e.reason


def test_rate_and_trace_together_is_an_error(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    e = _error(f"rate=10Mbps,trace={trace}")
    assert e.field == "factors.network[0]"
    assert "give rate or trace, not both" in e.reason
    e = _error(f"up=1Mbps,up_trace={trace}")
    assert e.field == "factors.network[0].up_trace"
    assert "give up or up_trace, not both" in e.reason


def test_trace_with_a_bdp_queue_is_an_error(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    e = _error(f"rtt=50ms,down_trace={trace},up=1Mbps,queue=1bdp")
    assert e.field == "factors.network[0].queue"
    assert "fixed rate" in e.reason
    # packets and bytes are fine
    assert parse_network(f"trace={trace},queue=64KB").queue == Queue(bytes=64_000)


def test_every_key_the_parser_accepts_reaches_config_json(tmp_path: Path) -> None:
    # a trial's config_json is its network's as_dict(): a key that changes the profile but
    # not as_dict() would be a setting nobody can see in the store (codel_* once were)
    flat, other = _trace(tmp_path), _trace(tmp_path, "other.trace")
    values = {  # key: (one level, another level, what else the spec needs)
        "rtt": ("30ms", "40ms", ""),
        "delay": ("15ms", "20ms", ""),
        "up_delay": ("7ms", "8ms", ""),
        "down_delay": ("9ms", "10ms", ""),
        "rate": ("3Mbps", "4Mbps", ""),
        "up": ("2Mbps", "3Mbps", ""),
        "down": ("4Mbps", "5Mbps", ""),
        "trace": (str(flat), str(other), ""),
        "up_trace": (str(flat), str(other), ""),
        "down_trace": (str(flat), str(other), ""),
        "loss": ("1%", "2%", ""),
        "up_loss": ("2%", "3%", ""),
        "down_loss": ("3%", "4%", ""),
        "loss_burst": ("3", "4", ",loss=1%"),
        "up_loss_burst": ("4", "5", ",loss=1%"),
        "down_loss_burst": ("5", "6", ",loss=1%"),
        "queue": ("2bdp", "3bdp", ",rate=10Mbps"),
        "aqm": ("codel", "droptail", ",rate=10Mbps"),
        "codel_target": ("7ms", "8ms", ",rate=10Mbps,aqm=codel"),
        "codel_interval": ("50ms", "60ms", ",rate=10Mbps,aqm=codel"),
        "cellular": ("good", "fair", ""),
        "jitter": ("1ms", "2ms", ",rtt=100ms"),
        "up_jitter": ("1ms", "2ms", ",rtt=100ms"),
        "down_jitter": ("1ms", "2ms", ",rtt=100ms"),
    }
    assert set(values) == NETWORK_KEYS  # a new parser key needs its levels here
    for key, (a, b, extra) in values.items():
        one = parse_network(f"{key}={a}{extra}").as_dict()
        two = parse_network(f"{key}={b}{extra}").as_dict()
        differs = {k for k in one if k != "name" and one[k] != two[k]}
        assert differs, f"{key}: {a} and {b} give the same config_json"
        assert json.loads(json.dumps(one)) == one
