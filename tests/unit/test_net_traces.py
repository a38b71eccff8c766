"""h2lab.net.traces and h2lab.spec.cellular: cellular profiles as Rattan traces, Mahimahi trace
parsing (pure)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from h2lab.errors import H2LabError
from h2lab.net.traces import (
    LossSegment,
    bw_trace_json,
    cellular_traces,
    delay_trace_json,
    loss_schedule,
    loss_trace_json,
    time_averaged_loss_ratio,
)
from h2lab.spec.cellular import (
    PROFILE_NAMES,
    STEP_MS,
    CellularProfile,
    MahimahiTrace,
    TraceError,
    cellular_profiles,
    read_mahimahi,
)


def _tiny(gaps_s: tuple[float, ...] = (0.0, 0.0, 0.105, 0.05)) -> CellularProfile:
    """Four steps; episode j drops (j mod 4 + 1) * 10 %."""
    return CellularProfile(
        name="tiny",
        rtt_ms=(10.0, 20.0, 30.0, 40.0),
        rate_kbps=(1000.0, 2000.0, 3000.0, 4000.0),
        loss_pct=(10.0, 20.0, 30.0, 40.0),
        loss_gap_s=gaps_s,
    )


def _triples(segments: list[LossSegment]) -> list[tuple[float, float, float]]:
    return [(s.start_s, s.length_s, s.loss_ratio) for s in segments]


def _assert_same(segments: list[LossSegment], expected: list[tuple[float, float, float]]) -> None:
    assert len(segments) == len(expected)
    for got, want in zip(_triples(segments), expected, strict=True):
        assert got == pytest.approx(want, abs=1e-9)


def _pattern(text: str, kind: str) -> tuple[list[dict[str, Any]], int]:
    doc = json.loads(text)
    assert list(doc) == [kind]
    body = doc[kind]
    assert set(body) == {"pattern", "count"}
    return body["pattern"], body["count"]


# --- profiles ---------------------------------------------------------------------------------


def test_packaged_profiles_load() -> None:
    profiles = cellular_profiles()
    assert tuple(profiles) == PROFILE_NAMES
    assert set(PROFILE_NAMES) == {
        "noloss",
        "good",
        "fair",
        "passable",
        "poor",
        "verypoor",
        "loss-good",
        "loss-median",
        "loss-poor",
    }
    for name, profile in profiles.items():
        assert profile.name == name
        assert profile.steps == 200  # 200 steps of 70 ms = 14 s (data/README)
    good = profiles["good"]
    # first values of the good arrays in cellular_emulation.sh
    assert good.rtt_ms[:3] == (20.56, 30.7592, 43.9624)
    assert good.rate_kbps[:2] == (395.221, 6554.214)
    assert good.loss_pct[:2] == (2.838572, 16.6667)
    assert good.loss_gap_s[:4] == (0.14, 0.28, 0.63, 2.52)
    assert set(profiles["noloss"].loss_pct) == {0.0}


def test_passable_keeps_the_first_200_loss_values() -> None:
    raw = json.loads(
        (Path(__file__).parents[2] / "src/h2lab/spec/data/cellular-profiles.json").read_text()
    )
    assert len(raw["profiles"]["passable"]["loss_pct"]) == 201  # as in the original script
    passable = cellular_profiles()["passable"]
    assert passable.loss_pct == tuple(raw["profiles"]["passable"]["loss_pct"][:200])
    assert passable.loss_pct[:2] == (0.0, 3.4345)


def test_notice_ships_beside_the_data() -> None:
    notice = (Path(__file__).parents[2] / "src/h2lab/spec/data/NOTICE").read_text()
    assert "Copyright (c) 2016 Akamai Technologies, Inc." in notice
    assert "Apache License, Version 2.0" in notice
    assert "akamai/cell-emulation-util" in notice


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"rate_kbps": (1.0, 2.0, 3.0)}, "rate_kbps has 3 values"),
        ({"rtt_ms": (-1.0, 0.0, 0.0, 0.0)}, "negative rtt_ms"),
        ({"rate_kbps": (0.0, 1.0, 1.0, 1.0)}, "rate_kbps below"),
        ({"loss_pct": (101.0, 0.0, 0.0, 0.0)}, "loss_pct outside"),
        ({"loss_gap_s": (-0.1, 0.0, 0.0, 0.0)}, "negative loss_gap_s"),
    ],
)
def test_profile_rejects_bad_arrays(change: dict[str, Any], message: str) -> None:
    fields: dict[str, Any] = {
        "name": "bad",
        "rtt_ms": (1.0, 1.0, 1.0, 1.0),
        "rate_kbps": (1.0, 1.0, 1.0, 1.0),
        "loss_pct": (1.0, 1.0, 1.0, 1.0),
        "loss_gap_s": (1.0, 1.0, 1.0, 1.0),
    }
    fields.update(change)
    with pytest.raises(ValueError, match=message):
        CellularProfile(**fields)


# --- bandwidth and delay traces ---------------------------------------------------------------


def test_bw_trace_json_shape() -> None:
    pattern, count = _pattern(bw_trace_json([395221, 12_000_000, 1], 70), "RepeatedBwPatternConfig")
    assert count == 0  # repeat forever
    assert pattern == [
        {"StaticBwConfig": {"bw": "395221bps", "duration": "70ms"}},
        {"StaticBwConfig": {"bw": "12000000bps", "duration": "70ms"}},
        {"StaticBwConfig": {"bw": "1bps", "duration": "70ms"}},
    ]


def test_sub_millisecond_steps_are_written_in_microseconds() -> None:
    pattern, _ = _pattern(bw_trace_json([1000], 0.5), "RepeatedBwPatternConfig")
    assert pattern[0]["StaticBwConfig"]["duration"] == "500us"


def test_delay_trace_json_shape() -> None:
    pattern, count = _pattern(
        delay_trace_json([10.28, 20.0, 0.0, 336.1299], 70), "RepeatedDelayPatternConfig"
    )
    assert count == 0
    assert [p["StaticDelayConfig"]["delay"] for p in pattern] == [
        "10280us",
        "20ms",
        "0ms",
        "336130us",  # rounded to the microsecond
    ]
    assert {p["StaticDelayConfig"]["duration"] for p in pattern} == {"70ms"}


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: bw_trace_json([], 70), "no rates"),
        (lambda: bw_trace_json([1000, 0], 70), "positive"),
        (lambda: bw_trace_json([1000], 0), "step_ms"),
        (lambda: delay_trace_json([], 70), "no delays"),
        (lambda: delay_trace_json([-1.0], 70), "negative"),
        (lambda: delay_trace_json([1.0], 0.0001), "step_ms"),
    ],
)
def test_trace_inputs_are_checked(call: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


# --- loss schedule ----------------------------------------------------------------------------


def test_loss_schedule_tiny_profile_by_hand() -> None:
    # gaps by step index: [0, 0, 0.105, 0.05]; 70 ms steps
    expected = [
        (0.0, 0.07, 0.10),  # t=0: step 0 gap 0 -> episode 1 at once
        (0.07, 0.07, 0.20),  # ended at 0.07 = step 1, gap 0 -> back to back
        (0.14, 0.105, 0.0),  # ended at 0.14 = step 2, gap 0.105
        (0.245, 0.07, 0.30),  # episode 3 starts mid-step
        (0.315, 0.07, 0.40),  # ended at 0.315 = step 4 (4.5) -> index 0, gap 0
        (0.385, 0.07, 0.10),  # ended at 0.385 = step 5 (5.5) -> index 1, gap 0; j wraps
        (0.455, 0.105, 0.0),  # ended at 0.455 = step 6 (6.5) -> index 2
        (0.56, 0.07, 0.20),
        (0.63, 0.07, 0.30),  # ended at 0.63 = step 9 -> index 1, gap 0; 0.6 s reached
        (0.70, 0.105, 0.0),  # ended at 0.70 = step 10 -> index 2; ends loss-free
    ]
    _assert_same(loss_schedule(_tiny(), 0.6), expected)


def test_loss_schedule_tiny_profile_script_timing_by_hand() -> None:
    # Episodes fill whole steps; the next is max(1, ceil(gap / 70 ms)) steps after the start
    # of the previous one (after t=0 at first), the gap taken at the previous episode's step.
    expected = [
        (0.0, 0.07, 0.0),  # from step 0: gap[0]=0 -> 1 step on
        (0.07, 0.07, 0.10),  # step 1
        (0.14, 0.07, 0.20),  # step 2 (gap[1]=0)
        (0.21, 0.07, 0.0),  # gap[2]=0.105 -> ceil(1.5)=2 steps on
        (0.28, 0.07, 0.30),  # step 4
        (0.35, 0.07, 0.40),  # step 5 (gap[0]=0)
        (0.42, 0.07, 0.10),  # step 6 (gap[1]=0), j wraps
        (0.49, 0.07, 0.0),
        (0.56, 0.07, 0.20),  # step 8; ends at 0.63 >= 0.6 but on an episode
        (0.63, 0.07, 0.30),  # step 9 (gap[0]=0)
        (0.70, 0.07, 0.40),  # step 10 (gap[1]=0)
        (0.77, 0.07, 0.0),  # gap[2] again: ends loss-free
    ]
    _assert_same(loss_schedule(_tiny(), 0.6, timing="script"), expected)


def test_loss_schedule_good_profile_by_hand() -> None:
    good = cellular_profiles()["good"]
    # the data the hand calculation below uses
    assert [good.loss_gap_s[i] for i in (0, 3, 40, 66, 70)] == [0.14, 2.52, 1.75, 0.21, 0.35]
    assert good.loss_pct[:5] == (2.838572, 16.6667, 33.3333, 50.0, 16.6667)
    expected = [
        (0.0, 0.14, 0.0),  # gap[0] = 0.14
        (0.14, 0.07, 0.02838572),  # ends at 0.21 = step 3
        (0.21, 2.52, 0.0),  # gap[3]
        (2.73, 0.07, 0.166667),  # ends at 2.80 = step 40
        (2.80, 1.75, 0.0),  # gap[40]
        (4.55, 0.07, 0.333333),  # ends at 4.62 = step 66
        (4.62, 0.21, 0.0),  # gap[66]
        (4.83, 0.07, 0.50),  # ends at 4.90 = step 70
        (4.90, 0.35, 0.0),  # gap[70]
        (5.25, 0.07, 0.166667),
    ]
    _assert_same(loss_schedule(good, 14.0)[: len(expected)], expected)


@pytest.mark.parametrize("timing", ["readme", "script"])
@pytest.mark.parametrize("name", PROFILE_NAMES)
def test_loss_schedule_is_one_consecutive_timeline(name: str, timing: Any) -> None:
    segments = loss_schedule(cellular_profiles()[name], 30.0, timing=timing)
    assert segments[0].start_s == 0.0
    for before, after in itertools.pairwise(segments):
        assert after.start_s == pytest.approx(before.end_s, abs=1e-9)
    assert all(s.length_s > 0 for s in segments)
    assert all(0 <= s.loss_ratio <= 1 for s in segments)
    # loss only ever comes in one-step episodes
    assert all(s.length_s == pytest.approx(STEP_MS / 1000) for s in segments if s.loss_ratio)
    # it stops at the first loss-free stretch that reaches 30 s
    assert segments[-1].loss_ratio == 0
    assert segments[-1].end_s >= 30.0
    assert all(s.end_s < 30.0 for s in segments[:-1] if s.loss_ratio == 0)


def test_noloss_is_one_long_gap() -> None:
    _assert_same(loss_schedule(cellular_profiles()["noloss"], 60.0), [(0.0, 99999.0, 0.0)])


def test_zero_duration_still_ends_loss_free() -> None:
    _assert_same(
        loss_schedule(_tiny(), 0.0), [(0.0, 0.07, 0.1), (0.07, 0.07, 0.2), (0.14, 0.105, 0.0)]
    )


def test_a_link_that_never_recovers_is_refused() -> None:
    with pytest.raises(ValueError, match="never becomes loss-free"):
        loss_schedule(_tiny((0.0, 0.0, 0.0, 0.0)), 1.0)
    # one step or less is no loss-free time in the script's timing
    with pytest.raises(ValueError, match="never becomes loss-free"):
        loss_schedule(_tiny((0.0, 0.07, 0.0, 0.05)), 1.0, timing="script")
    with pytest.raises(ValueError, match="duration_s"):
        loss_schedule(_tiny(), -1.0)


# The summary in data/README ("time-averaged loss ≈ 0, 1.1, 2.6, 4.8, 2.9, 6.4 %") was computed
# with cellular_emulation.sh's own timing: simulating the script step by step gives 1.07, 2.56,
# 4.76, 2.92, 6.42 %. The "script" timing reproduces it within the README's rounding (±0.05
# points). The README's *stated* semantics ("readme" timing: the gap counted from the end of the
# episode, mid-step starts) walk the 200 gap values in a different order, and the long-run
# average moves by up to a factor of two (good 2.31 % vs 1.1 %, verypoor 3.74 % vs 6.4 %): no
# honest tolerance covers both, so that timing is pinned to its own values instead.
README_LOSS_PCT = {
    "noloss": 0.0,
    "good": 1.1,
    "fair": 2.6,
    "passable": 4.8,
    "poor": 2.9,
    "verypoor": 6.4,
}
README_TIMING_LOSS_PCT = {
    "noloss": 0.0,
    "good": 2.3059,
    "fair": 3.1912,
    "passable": 4.1445,
    "poor": 2.6864,
    "verypoor": 3.7366,
}
LONG_S = 1400.0  # 100 periods of 14 s


@pytest.mark.parametrize("name", list(README_LOSS_PCT))
def test_script_timing_reproduces_readme_loss_summary(name: str) -> None:
    segments = loss_schedule(cellular_profiles()[name], LONG_S, timing="script")
    loss_pct = time_averaged_loss_ratio(segments) * 100
    assert loss_pct == pytest.approx(README_LOSS_PCT[name], abs=0.05)


@pytest.mark.parametrize("name", list(README_TIMING_LOSS_PCT))
def test_readme_timing_long_run_loss(name: str) -> None:
    segments = loss_schedule(cellular_profiles()[name], LONG_S)
    loss_pct = time_averaged_loss_ratio(segments) * 100
    assert loss_pct == pytest.approx(README_TIMING_LOSS_PCT[name], abs=0.001)


def test_time_averaged_loss_ratio() -> None:
    segments = [LossSegment(0.0, 0.9, 0.0), LossSegment(0.9, 0.1, 0.5)]
    assert time_averaged_loss_ratio(segments) == pytest.approx(0.05)


# --- loss trace JSON --------------------------------------------------------------------------


def test_loss_trace_json_shape() -> None:
    segments = loss_schedule(_tiny(), 0.3)
    pattern, count = _pattern(loss_trace_json(segments), "RepeatedLossPatternConfig")
    assert count == 1  # played once; the last (loss-free) value then holds
    assert pattern == [
        {"StaticLossConfig": {"loss": [0.1], "duration": "70ms"}},
        {"StaticLossConfig": {"loss": [0.2], "duration": "70ms"}},
        {"StaticLossConfig": {"loss": [0.0], "duration": "105ms"}},
        {"StaticLossConfig": {"loss": [0.3], "duration": "70ms"}},
        {"StaticLossConfig": {"loss": [0.4], "duration": "70ms"}},
        {"StaticLossConfig": {"loss": [0.1], "duration": "70ms"}},
        {"StaticLossConfig": {"loss": [0.0], "duration": "105ms"}},
    ]


def test_loss_trace_json_microsecond_gaps() -> None:
    segments = [LossSegment(0.0, 6.9167, 0.0), LossSegment(6.9167, 0.07, 0.25)]
    segments.append(LossSegment(6.9867, 0.0005, 0.0))
    pattern, _ = _pattern(loss_trace_json(segments), "RepeatedLossPatternConfig")
    assert [p["StaticLossConfig"]["duration"] for p in pattern] == ["6916700us", "70ms", "500us"]


@pytest.mark.parametrize(
    ("segments", "message"),
    [
        ([], "no segments"),
        ([LossSegment(0.1, 1.0, 0.0)], "segment 0 starts at 0.1 s"),
        ([LossSegment(0.0, 1.0, 0.0), LossSegment(1.5, 1.0, 0.0)], "segment 1 starts"),
        ([LossSegment(0.0, 0.0, 0.0)], "shorter than 1 us"),
        ([LossSegment(0.0, 1.0, 1.5)], "outside 0..1"),
        ([LossSegment(0.0, 1.0, 0.0), LossSegment(1.0, 0.07, 0.3)], "must be loss-free"),
    ],
)
def test_loss_trace_json_rejects_bad_timelines(segments: list[LossSegment], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        loss_trace_json(segments)


def test_cellular_traces_bundle() -> None:
    good = cellular_profiles()["good"]
    traces = cellular_traces(good, 20.0)
    assert traces.profile == "good"
    bw, bw_count = _pattern(traces.bw_json, "RepeatedBwPatternConfig")
    delay, delay_count = _pattern(traces.delay_json, "RepeatedDelayPatternConfig")
    loss, loss_count = _pattern(traces.loss_json, "RepeatedLossPatternConfig")
    assert (bw_count, delay_count, loss_count) == (0, 0, 1)
    assert len(bw) == len(delay) == 200
    # 395.221 kbit/s; one-way delay = 20.56 ms / 2
    assert bw[0] == {"StaticBwConfig": {"bw": "395221bps", "duration": "70ms"}}
    assert delay[0] == {"StaticDelayConfig": {"delay": "10280us", "duration": "70ms"}}
    # verypoor's slowest step, 0.11161 kbit/s, still is a positive whole rate
    verypoor = cellular_traces(cellular_profiles()["verypoor"], 1.0)
    assert json.loads(verypoor.bw_json)["RepeatedBwPatternConfig"]["pattern"][0] == {
        "StaticBwConfig": {"bw": "112bps", "duration": "70ms"}
    }
    assert list(traces.loss_segments) == loss_schedule(good, 20.0)
    assert traces.loss_json == loss_trace_json(list(traces.loss_segments))
    assert len(loss) == len(traces.loss_segments)
    scripted = cellular_traces(good, 20.0, loss_timing="script")
    assert list(scripted.loss_segments) == loss_schedule(good, 20.0, timing="script")


# --- Mahimahi ---------------------------------------------------------------------------------


def test_read_mahimahi(tmp_path: Path) -> None:
    path = tmp_path / "link.trace"
    path.write_text("1\n1\n2\n 5 \n")
    trace = read_mahimahi(path)
    assert trace == MahimahiTrace((1, 1, 2, 5))
    assert trace.period_ms == 5
    assert trace.mean_rate_bps == pytest.approx(4 * 1500 * 8 / 0.005)  # 9.6 Mbit/s
    # `rattan run --visualize-trace` on this file shows 24, 12, 0, 0, 12 Mbps for the five
    # milliseconds: timestamp t delivers in (t-1, t].
    assert trace.rate_per_step_bps(1) == (24e6, 12e6, 0.0, 0.0, 12e6)
    # 2 ms windows; the last one is 1 ms wide
    assert trace.rate_per_step_bps(2) == (18e6, 0.0, 12e6)


def test_mahimahi_without_final_newline_and_zero_timestamps(tmp_path: Path) -> None:
    path = tmp_path / "zeros.trace"
    path.write_text("0\n0\n3")
    trace = read_mahimahi(path)
    assert trace.timestamps_ms == (0, 0, 3)
    # a 0 timestamp delivers with the period's last millisecond (netem-trace mahimahi.rs)
    assert trace.rate_per_step_bps(1) == (0.0, 0.0, 36e6)


def test_mahimahi_step_rates_average_to_the_mean(tmp_path: Path) -> None:
    path = tmp_path / "ramp.trace"
    path.write_text("".join(f"{t}\n" for t in range(1, 1001) for _ in range(t % 7)))
    trace = read_mahimahi(path)
    rates = trace.rate_per_step_bps(STEP_MS)
    widths = [min(STEP_MS, trace.period_ms - k * STEP_MS) for k in range(len(rates))]
    weighted = sum(r * w for r, w in zip(rates, widths, strict=True)) / trace.period_ms
    assert weighted == pytest.approx(trace.mean_rate_bps)
    with pytest.raises(ValueError, match="step_ms"):
        trace.rate_per_step_bps(0)


@pytest.mark.parametrize(
    ("content", "line", "reason"),
    [
        (b"", 1, "empty file"),
        (b"1\nabc\n3\n", 2, "'abc' is not"),
        (b"1\n-2\n", 2, "'-2' is not"),
        (b"1\n2.5\n", 2, "'2.5' is not"),
        (b"1\n\n3\n", 2, "blank line"),
        (b"\n", 1, "blank line"),
        (b"1\n5\n3\n", 3, "before the previous one (5 ms)"),
        (b"0\n0\n", 2, "period) must be positive"),
        (b"1\n2\n\xff\n", 3, "not UTF-8"),
        (b"1\n99999999999999999999\n", 2, "does not fit in 64 bits"),
    ],
)
def test_mahimahi_errors_name_path_and_line(
    tmp_path: Path, content: bytes, line: int, reason: str
) -> None:
    path = tmp_path / "bad.trace"
    path.write_bytes(content)
    with pytest.raises(TraceError) as info:
        read_mahimahi(path)
    err = info.value
    assert (err.path, err.lineno) == (str(path), line)
    assert reason in err.reason
    assert str(err) == f"{path}:{line}: {err.reason}"
    assert isinstance(err, H2LabError)
    assert err.exit_code == 2
    assert err.line() == str(err)  # what the CLI prints


@pytest.mark.parametrize("timestamps", [(), (0,), (3, 2, 4), (-1, 4)])
def test_mahimahi_trace_checks_its_timestamps(timestamps: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="Mahimahi"):
        MahimahiTrace(timestamps)


def test_unreadable_mahimahi_file(tmp_path: Path) -> None:
    path = tmp_path / "missing.trace"
    with pytest.raises(TraceError) as info:
        read_mahimahi(path)
    assert info.value.lineno == 0  # the file as a whole
    assert str(info.value) == f"{path}:0: cannot read: No such file or directory"
