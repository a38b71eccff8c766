"""Time-varying links: cellular profiles (:mod:`h2lab.spec.cellular`) as Rattan traces.

Pure: data in, JSON text out.

The cellular profiles (Akamai's ``cellular_emulation.sh``) have one value per 70 ms step for
RTT, rate, loss probability and loss gap. They become three netem-trace configs that Rattan's
replay cells read (a ``.json`` file name is what makes Rattan parse a file as netem-trace JSON,
see ``rattan-core/src/config/{bandwidth,delay,loss}.rs``):

* ``BwReplay``: :func:`bw_trace_json`, a forever-repeating pattern, one static rate per step;
* ``DelayReplay``: :func:`delay_trace_json`, likewise for the one-way delay (RTT / 2);
* ``LossReplay``: :func:`loss_trace_json` of :func:`loss_schedule`, one non-repeating timeline
  of loss-free gaps and 70 ms loss episodes, computed here in closed loop instead of by the
  original script's fixed sleeps.

Durations are written as humantime strings (``"70ms"``, ``"10280us"``) and rates as
human-bandwidth strings (``"395221bps"``): rattan-core 0.1.1 builds netem-trace 0.4.4 with its
``human`` feature (rattan-core ``Cargo.toml``), which makes serde read those forms.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from h2lab.spec.cellular import STEP_MS, CellularProfile

_STEP_US = STEP_MS * 1000

# --- netem-trace JSON -------------------------------------------------------------------------


def _us(ms: float) -> int:
    """Milliseconds to whole microseconds, the resolution of every duration written here."""
    return round(ms * 1000)


def _duration(us: int) -> str:
    """A humantime duration: ``"70ms"`` when whole milliseconds, else ``"10280us"``."""
    return f"{us // 1000}ms" if us % 1000 == 0 else f"{us}us"


def _step_us(step_ms: float) -> int:
    step_us = _us(step_ms)
    if step_us <= 0:
        raise ValueError(f"step_ms must be at least 0.001, got {step_ms}")
    return step_us


def bw_trace_json(rates_bps: Sequence[int], step_ms: float) -> str:
    """BwReplay trace: ``rates_bps[k]`` for ``step_ms`` each, the pattern repeating forever."""
    if not rates_bps:
        raise ValueError("no rates")
    if min(rates_bps) <= 0:
        raise ValueError("rates must be positive")
    step = _duration(_step_us(step_ms))
    pattern = [{"StaticBwConfig": {"bw": f"{int(r)}bps", "duration": step}} for r in rates_bps]
    # count 0 repeats forever (netem-trace src/model/bw.rs RepeatedBwPattern).
    return json.dumps({"RepeatedBwPatternConfig": {"pattern": pattern, "count": 0}})


def delay_trace_json(delays_ms: Sequence[float], step_ms: float) -> str:
    """DelayReplay trace: one-way ``delays_ms[k]`` for ``step_ms`` each, repeating forever."""
    if not delays_ms:
        raise ValueError("no delays")
    if min(delays_ms) < 0:
        raise ValueError("delays must not be negative")
    step = _duration(_step_us(step_ms))
    pattern = [
        {"StaticDelayConfig": {"delay": _duration(_us(d)), "duration": step}} for d in delays_ms
    ]
    return json.dumps({"RepeatedDelayPatternConfig": {"pattern": pattern, "count": 0}})


@dataclass(frozen=True)
class LossSegment:
    """A stretch of the loss timeline with one Bernoulli loss probability."""

    start_s: float
    """seconds since the trace started"""
    length_s: float
    """how long it lasts, in seconds"""
    loss_ratio: float
    """drop probability of each packet, 0..1"""

    @property
    def end_s(self) -> float:
        return self.start_s + self.length_s


LossTiming = Literal["readme", "script"]
"""How a loss gap is timed; see :func:`loss_schedule`."""


def loss_schedule(
    profile: CellularProfile, duration_s: float, *, timing: LossTiming = "readme"
) -> list[LossSegment]:
    """The profile's loss timeline from t = 0: consecutive segments covering ``duration_s``.

    ``timing="readme"``, the semantics data/README states: the link is loss-free for
    ``loss_gap_s[i]`` s, i being the index of the step (mod ``profile.steps``) in which the
    previous episode ended (i = 0 at t = 0); then one ``STEP_MS`` episode drops at
    ``loss_pct[j]`` %, j advancing by one per episode and wrapping at ``profile.steps``; then a
    new gap. Episodes may start mid-step. A gap of 0 puts episodes back to back.

    ``timing="script"``, the timing cellular_emulation.sh actually had (without its sleep drift):
    episodes fill whole steps; a gap counts from the start of the previous episode's step
    (t = 0 at first), is checked once per step, and its value is that step's ``loss_gap_s``. So
    the next episode is ``max(1, ceil(gap / STEP_MS))`` steps after the previous one and the
    loss-free time is one step shorter than the gap. j wraps at ``profile.steps`` (the script
    wrapped at 199, never using the last value). The README's loss averages come from this
    timing; the "readme" timing gives quite different ones (tests/unit/test_net_traces.py).

    The schedule always ends with a loss-free gap that reaches ``duration_s`` or beyond, because
    Rattan keeps a trace's last loss after the trace ends (rattan-core src/cells/loss.rs). Times
    are exact to the microsecond (gaps in the data have at most four decimals). Gap segments are
    never empty; a profile whose link never becomes loss-free is a ``ValueError``.
    """
    if not (math.isfinite(duration_s) and duration_s >= 0):
        raise ValueError(f"duration_s must be finite and >= 0, got {duration_s}")
    if timing not in ("readme", "script"):
        raise ValueError(f"unknown loss timing {timing!r} (known: readme, script)")
    end_us = _us(duration_s * 1000)
    gaps_us = [_us(g * 1000) for g in profile.loss_gap_s]
    segments: list[LossSegment] = []
    t_us = 0  # end of the timeline so far
    gap_step = 0  # the step whose loss_gap_s applies next
    episode = 0
    back_to_back = 0
    while True:
        gap_us = gaps_us[gap_step % profile.steps]
        if timing == "readme":
            start_us = t_us + gap_us
        else:
            start_us = (gap_step + max(1, math.ceil(gap_us / _STEP_US))) * _STEP_US
        if start_us > t_us:
            segments.append(LossSegment(t_us / 1e6, (start_us - t_us) / 1e6, 0.0))
            t_us = start_us
            back_to_back = 0
            if t_us >= end_us:
                return segments
        elif back_to_back >= profile.steps:
            # Back-to-back episodes advance gap_step by one each: every step's gap was looked at.
            raise ValueError(f"profile {profile.name!r} never becomes loss-free ({timing} timing)")
        ratio = profile.loss_pct[episode % profile.steps] / 100
        segments.append(LossSegment(t_us / 1e6, _STEP_US / 1e6, ratio))
        gap_step = (t_us + _STEP_US) // _STEP_US if timing == "readme" else t_us // _STEP_US
        t_us += _STEP_US
        episode += 1
        back_to_back += 1


def loss_trace_json(segments: Sequence[LossSegment]) -> str:
    """LossReplay trace: the segments once, in order (count 1), each a static loss pattern.

    The segments must be consecutive from t = 0 and the last one loss-free: after a trace ends
    Rattan keeps applying its last loss (rattan-core src/cells/loss.rs).
    """
    if not segments:
        raise ValueError("no segments")
    pattern = []
    t_us = 0
    for k, seg in enumerate(segments):
        start_us, length_us = round(seg.start_s * 1e6), round(seg.length_s * 1e6)
        if start_us != t_us:
            raise ValueError(f"segment {k} starts at {seg.start_s} s, expected {t_us / 1e6} s")
        if length_us <= 0:
            raise ValueError(f"segment {k} is shorter than 1 us")
        if not 0 <= seg.loss_ratio <= 1:
            raise ValueError(f"segment {k}: loss_ratio {seg.loss_ratio} outside 0..1")
        # A one-element loss pattern is plain Bernoulli loss (netem-trace src/model/loss.rs).
        pattern.append(
            {"StaticLossConfig": {"loss": [seg.loss_ratio], "duration": _duration(length_us)}}
        )
        t_us += length_us
    if segments[-1].loss_ratio != 0:
        raise ValueError("the last segment must be loss-free (Rattan keeps the last loss)")
    return json.dumps({"RepeatedLossPatternConfig": {"pattern": pattern, "count": 1}})


@dataclass(frozen=True)
class CellularTraces:
    """The Rattan trace files of one profile; each text serves both directions."""

    profile: str
    bw_json: str
    """BwReplay trace: ``rate_kbps`` as bit/s, one step each, repeating"""
    delay_json: str
    """DelayReplay trace: one-way delay ``rtt_ms / 2``, one step each, repeating"""
    loss_json: str
    """LossReplay trace: :func:`loss_schedule` over the requested duration"""
    loss_segments: tuple[LossSegment, ...]
    """the schedule ``loss_json`` was written from"""


def cellular_traces(
    profile: CellularProfile, duration_s: float, *, loss_timing: LossTiming = "readme"
) -> CellularTraces:
    """All three traces of ``profile``; the loss timeline covers at least ``duration_s``.

    The delays are the profile's, not corrected for Rattan's own per-hop latency.
    """
    segments = loss_schedule(profile, duration_s, timing=loss_timing)
    return CellularTraces(
        profile=profile.name,
        bw_json=bw_trace_json([round(kbps * 1000) for kbps in profile.rate_kbps], STEP_MS),
        delay_json=delay_trace_json([rtt / 2 for rtt in profile.rtt_ms], STEP_MS),
        loss_json=loss_trace_json(segments),
        loss_segments=tuple(segments),
    )


def time_averaged_loss_ratio(segments: Sequence[LossSegment]) -> float:
    """Drop probability averaged over the time the segments span."""
    total_s = sum(s.length_s for s in segments)
    if total_s <= 0:
        raise ValueError("segments span no time")
    return sum(s.length_s * s.loss_ratio for s in segments) / total_s
