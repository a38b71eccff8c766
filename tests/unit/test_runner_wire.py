"""h2lab.runner.wire: the driver's and the workers' JSON, exact for every field of every type."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest

from h2lab.results import ResourceTiming, TrialRecord
from h2lab.runner.executor import BlockDone, BlockJob, TrialDone
from h2lab.runner.matrix import TrialSpec
from h2lab.runner.wire import (
    JSON,
    WireError,
    decode,
    decode_message,
    encode,
    encode_message,
)
from h2lab.spec.factors import Cell, TrialFactors
from h2lab.spec.network import NetworkProfile, Queue


def _unset(value: object, path: str) -> list[str]:
    """The fields below ``value`` (recursively, into nested dataclasses and their tuples)
    holding their default, None or an empty value: a field the test gives no value of its
    own, such as one added after the test was written."""
    found = []
    for f in dataclasses.fields(value):  # type: ignore[arg-type]
        v = getattr(value, f.name)
        where = f"{path}.{f.name}"
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if default is not dataclasses.MISSING and v == default:
            found.append(f"{where} (its default)")
        elif "factor" in f.metadata and v == f.metadata["factor"].default:
            found.append(f"{where} (its factor's default level)")  # spec/factors.py
        elif v is None or v == "" or (isinstance(v, tuple | list | dict) and not v):
            found.append(f"{where} (empty)")
        items = v if isinstance(v, tuple) else (v,)
        for i, item in enumerate(items):
            if dataclasses.is_dataclass(item):
                found += _unset(item, f"{where}[{i}]" if isinstance(v, tuple) else where)
    return found


def _round_trip(value: object) -> object:
    return decode(type(value), json.loads(json.dumps(encode(value))))


def spec() -> TrialSpec:
    network = NetworkProfile(
        name="custom",
        up_rate_bps=2_000_000,
        down_rate_bps=10_000_000,
        up_delay_ms=12.5,
        down_delay_ms=0.1 + 0.2,  # a float that prints long: exact after the trip
        up_loss_ratio=0.01,
        down_loss_ratio=0.02,
        queue=Queue(packets=100, bytes=64_000, bdp=1.5),
        up_loss_burst=2.0,
        down_loss_burst=3.0,
        up_trace="/traces/up.trace",
        down_trace="/traces/down.trace",
        aqm="codel",
        codel_target_ms=7.0,
        codel_interval_ms=150.0,
        cellular="poor",
        cellular_parts=("bw", "delay"),
        up_jitter_ms=1.5,
        down_jitter_ms=2.5,
    )
    factors = TrialFactors(
        page="synthetic:n=2,size=1KB",
        network=network,
        server="origin:push=none",
        client="chromium:device=mobile",
        congestion_control="bbr",
        initcwnd=32,
        tls="1.2",
        view="repeat",
        discovery="alt-svc",
        h3_origins="first-party",
    )
    return TrialSpec(
        experiment="wire",
        factors=factors,
        repetition=3,
        protocol="h2s",
        seed=2**62 + 7,  # beyond a double's 53 bits: exact as JSON's integers are
        order=41,
        warmup=2,
        shard="2/3",
    )


def record() -> TrialRecord:
    return TrialRecord(
        trial_key="b|h2s",
        experiment="wire",
        block="b",
        cell=Cell(("synthetic:n=2", "custom", "nginx", "h2load", "bbr", 32, "1.2")),
        page_digest="0123456789abcdef",
        protocol="h2s",
        repetition=3,
        seed=2**62 + 7,
        attempt=2,
        status="failed",
        error="server nginx died during the trial",
        started_at="2026-11-01T00:00:00.000+00:00",
        duration_s=1.25,
        config={"a": 1, "b": [1, 2.5, None]},
        versions={"h2lab": "0.1.0"},
        id=17,
        warmup=True,
        cpu_busy_pct=12.3,
        cpu_saturated=True,
        emulator_drops=4,
        machine="lab-a/0123456789ab",
        server_tcp_cc="bbr",
        server_quic_cc="cubic",
        pdt_ms=123.4,
        plt_ms=234.5,
        speed_index_ms=345.6,
        connect_ms=10.5,
        failed_requests=3,
        ttfb_ms=20.25,
        dcl_ms=150.0,
        fp_ms=160.5,
        fcp_ms=161.5,
        lcp_ms=300.75,
        visual_complete_ms=400.0,
        first_visual_change_ms=120.5,
        last_visual_change_ms=410.0,
        visual_complete_85_ms=350.25,
        visual_complete_95_ms=380.5,
        visual_complete_99_ms=399.0,
        cls=0.125,
        tbt_ms=75.5,
        fully_loaded_ms=2500.75,
        body_bytes=20_000,
        request_header_bytes=300,
        response_header_bytes=310,
        bytes_up=1_000,
        bytes_down=25_000,
        tcp_connections=6,
        dns_lookups=11,
        dns_nxdomain=7,
        retransmits=2,
        early_data_packets=3,
        udp_dropped_packets=4,
        cpu_calibration_ms=201.5,
        cpu_calibration_cores=0.2491,
        cpu_throttled_ms=5123.25,
        quic_sent_packets=8123,
        quic_lost_packets=81,
        quic_initial_window_bytes=12800,
        journey_ms=1234.5,
    )


def resource() -> ResourceTiming:
    return ResourceTiming(
        url="https://o1.h2lab.test/a.css",
        origin="o1.h2lab.test",
        start_ms=1.5,
        ttfb_ms=20.0,
        end_ms=30.25,
        bytes=1234,
        protocol="h2",
        connection="c1",
        priority="VeryHigh",
        status=200,
        pushed=True,
        error="net::ERR_BLOCKED_BY_ORB",
        priority_field="u=0",
        priority_update="High",
        from_cache=True,
        step=3,
    )


@pytest.mark.parametrize("build", [spec, record, resource])
def test_every_field_has_a_value_of_its_own(build: object) -> None:
    value = build()  # type: ignore[operator]
    assert _unset(value, type(value).__name__) == []


@pytest.mark.parametrize("build", [spec, record, resource])
def test_round_trip_is_exact_for_every_field(build: object) -> None:
    value = build()  # type: ignore[operator]
    back = _round_trip(value)
    assert back == value
    assert type(back) is type(value)
    for f in dataclasses.fields(value):  # type: ignore[arg-type]
        assert type(getattr(back, f.name)) is type(getattr(value, f.name)), f.name


def block_job() -> BlockJob:
    """A block of two trials, as a driver sends it (fuzz/seeds.py starts from it too)."""
    return BlockJob(
        number=4,
        trials=(spec(), dataclasses.replace(spec(), protocol="h1s", order=42)),
        attempts={"b|h2s": 2},
        retries=1,
        timeout_s=60.0,
        results_dir=Path("/tmp/out"),
        origins=("o1.h2lab.test", "o2.h2lab.test"),
        capture=("pcap",),
    )


def test_messages_round_trip_with_their_type() -> None:
    job = block_job()
    from h2lab.results import StepTiming

    step = StepTiming(1, "log in", "submit", 104.1, 2, 1, '{"o1": 1}', "https://o1/a", 1.5,
                      2.5, 3.5, 4.5, 208.0)  # fmt: skip
    done = TrialDone(record=record(), resources=(resource(), resource()), last=True, steps=(step,))
    for message in (job, done, BlockDone(4)):
        text = json.dumps(encode_message(message))
        assert decode_message(json.loads(text)) == message


@dataclass(frozen=True)
class Inner:
    level: str | int
    optional: float | None = None


@dataclass(frozen=True)
class Shape:
    """Shapes a reshaped trial type may take: the codec handles them without a change."""

    labels: Mapping[str, str]
    inners: tuple[Inner, ...]
    pair: tuple[int, str]
    maybe: Inner | None
    kind: Literal["ok", "failed"]
    folder: Path
    counts: dict[str, int] = field(default_factory=dict)


def test_new_shapes_travel_without_a_change() -> None:
    value = Shape(
        labels={"a": "b"},
        inners=(Inner("x"), Inner(3, 0.5)),
        pair=(1, "one"),
        maybe=Inner(7),
        kind="failed",
        folder=Path("/a/b"),
        counts={"n": 2},
    )
    assert _round_trip(value) == value
    assert _round_trip(dataclasses.replace(value, maybe=None)).maybe is None  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("data", "where"),
    [
        ({"number": "4"}, "BlockDone.number: expected int, got str"),
        ({"number": True}, "BlockDone.number: expected int, got bool"),
        ({}, "BlockDone: missing field 'number' of BlockDone"),
        ({"number": 1, "extra": 2}, "BlockDone: unknown field 'extra' of BlockDone"),
        ([1], "BlockDone: expected an object, got list"),
    ],
)
def test_what_does_not_decode_says_where(data: JSON, where: str) -> None:
    with pytest.raises(WireError) as caught:
        decode(BlockDone, data)
    assert caught.value.line() == where


def test_a_nested_field_is_named_by_its_path() -> None:
    data = encode(record())
    assert isinstance(data, dict) and isinstance(data["cell"], dict)
    levels = data["cell"]["levels"]
    assert isinstance(levels, list)
    levels[5] = 3.5
    with pytest.raises(WireError) as caught:
        decode(TrialRecord, data)
    assert caught.value.where == "TrialRecord.cell.levels[5]"


def test_an_unknown_message_is_refused_by_name() -> None:
    with pytest.raises(WireError, match="unknown type 'Hello'"):
        decode_message({"type": "Hello", "data": {}})


def test_what_has_no_json_form_is_refused() -> None:
    with pytest.raises(WireError, match="no JSON form"):
        encode(object())
