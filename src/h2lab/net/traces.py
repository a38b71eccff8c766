"""Time-varying links: cellular profiles as Rattan traces, and Mahimahi bandwidth traces.

Pure: data in, JSON text out. The only I/O is reading the packaged profile data and a trace file
the caller names.

**Cellular profiles** (``data/cellular-profiles.json``, see ``data/NOTICE``) come from Akamai's
``cellular_emulation.sh``, the network model of Goel et al. (MobiCom 2016). Each profile has one
value per 70 ms step for RTT, rate, loss probability and loss gap. They become three
netem-trace configs that Rattan's replay cells read (a ``.json`` file name is what makes Rattan
parse a file as netem-trace JSON, see ``rattan-core/src/config/{bandwidth,delay,loss}.rs``):

* ``BwReplay``: :func:`bw_trace_json`, a forever-repeating pattern, one static rate per step;
* ``DelayReplay``: :func:`delay_trace_json`, likewise for the one-way delay (RTT / 2);
* ``LossReplay``: :func:`loss_trace_json` of :func:`loss_schedule`, one non-repeating timeline
  of loss-free gaps and 70 ms loss episodes, computed here in closed loop instead of by the
  original script's fixed sleeps.

Durations are written as humantime strings (``"70ms"``, ``"10280us"``) and rates as
human-bandwidth strings (``"395221bps"``): rattan-core 0.1.1 builds netem-trace 0.4.4 with its
``human`` feature (rattan-core ``Cargo.toml``), which makes serde read those forms.

**Mahimahi traces** (:func:`read_mahimahi`) are checked here so that a bad file fails with its
path and line before Rattan starts; Rattan reads any BwReplay trace whose name does not end in
``.json`` or ``.toml`` as Mahimahi.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from h2lab.errors import H2LabError

# Length of one profile step. Source: cellular_emulation.sh (`interval=0.07`, one array value
# per loop turn; 200 values = 14 s, then repeat), recorded as "step_ms" in the packaged JSON.
STEP_MS = 70
_STEP_US = STEP_MS * 1000

PROFILE_NAMES = (
    "noloss",
    "good",
    "fair",
    "passable",
    "poor",
    "verypoor",
    "loss-good",
    "loss-median",
    "loss-poor",
)

# One Mahimahi delivery opportunity carries 1500 bytes. Source: mm-link(1) ("each delivery
# opportunity represents the ability to deliver 1500 bytes"); netem-trace 0.4.4
# src/mahimahi.rs `MTU_IN_BYTES = 1500`, which is how Rattan replays such a trace.
MAHIMAHI_PACKET_BYTES = 1500

# Rattan parses Mahimahi lines as u64 (rattan-core src/config/bandwidth.rs).
_U64_MAX = 2**64 - 1
_DIGITS = re.compile(r"[0-9]+")


class TraceError(H2LabError):
    """A trace file is unusable: its path, the 1-based line (0: the file as a whole), why.

    The line number is ``lineno``: ``line()`` is the base class's one-line message.
    """

    exit_code = 2

    def __init__(self, path: str | Path, line: int, reason: str) -> None:
        self.path = str(path)
        self.lineno = line
        self.reason = reason
        super().__init__(f"{self.path}:{line}: {reason}")


# --- cellular profiles ------------------------------------------------------------------------


@dataclass(frozen=True)
class CellularProfile:
    """One cellular profile: four arrays of the same length, one value per ``STEP_MS`` step."""

    name: str
    rtt_ms: tuple[float, ...]
    """round-trip latency during step i; half of it is applied in each direction"""
    rate_kbps: tuple[float, ...]
    """link rate in kbit/s during step i, the same in both directions"""
    loss_pct: tuple[float, ...]
    """random loss probability (%) of the j-th loss episode"""
    loss_gap_s: tuple[float, ...]
    """seconds without loss before the next episode, looked up by step (see loss_schedule)"""

    def __post_init__(self) -> None:
        steps = len(self.rtt_ms)
        if steps == 0:
            raise ValueError(f"profile {self.name!r}: no steps")
        for field in ("rate_kbps", "loss_pct", "loss_gap_s"):
            n = len(getattr(self, field))
            if n != steps:
                raise ValueError(f"profile {self.name!r}: {field} has {n} values, rtt_ms {steps}")
        if min(self.rtt_ms) < 0:
            raise ValueError(f"profile {self.name!r}: negative rtt_ms")
        # netem-trace's Bandwidth counts whole bits per second; less would round to a dead link.
        if min(self.rate_kbps) < 0.001:
            raise ValueError(f"profile {self.name!r}: rate_kbps below 0.001 (1 bit/s)")
        if not all(0 <= p <= 100 for p in self.loss_pct):
            raise ValueError(f"profile {self.name!r}: loss_pct outside 0..100")
        if min(self.loss_gap_s) < 0:
            raise ValueError(f"profile {self.name!r}: negative loss_gap_s")

    @property
    def steps(self) -> int:
        return len(self.rtt_ms)


def cellular_profiles() -> dict[str, CellularProfile]:
    """The nine packaged profiles by name (a fresh dict on every call)."""
    resource = resources.files("h2lab.net").joinpath("data", "cellular-profiles.json")
    data = json.loads(resource.read_text(encoding="utf-8"))
    if data["step_ms"] != STEP_MS:
        raise ValueError(f"cellular-profiles.json: step_ms {data['step_ms']}, expected {STEP_MS}")
    profiles: dict[str, CellularProfile] = {}
    for name in PROFILE_NAMES:
        raw = data["profiles"][name]
        steps = len(raw["rtt_ms"])
        profiles[name] = CellularProfile(
            name=name,
            rtt_ms=tuple(float(v) for v in raw["rtt_ms"]),
            rate_kbps=tuple(float(v) for v in raw["rate_kbps"]),
            # `passable` has 201 loss values in cellular_emulation.sh (a leading 0) and in the
            # JSON copy; the episode index wraps at 200 steps, so value 201 is never reached
            # (the script itself wrapped at 199 and never reached values 200 and 201).
            loss_pct=tuple(float(v) for v in raw["loss_pct"][:steps]),
            loss_gap_s=tuple(float(v) for v in raw["loss_gap_s"]),
        )
    return profiles


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


# --- Mahimahi ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class MahimahiTrace:
    """A Mahimahi bandwidth trace: one delivery opportunity for one packet per timestamp."""

    timestamps_ms: tuple[int, ...]
    """non-decreasing; the last one is the period"""

    def __post_init__(self) -> None:
        ts = self.timestamps_ms
        if not ts or ts[-1] <= 0 or ts[0] < 0:
            raise ValueError("a Mahimahi trace needs timestamps >= 0 and a positive last one")
        if any(b < a for a, b in itertools.pairwise(ts)):
            raise ValueError("Mahimahi timestamps must not decrease")

    @property
    def period_ms(self) -> int:
        """The trace repeats with this period (Mahimahi loops at the last timestamp)."""
        return self.timestamps_ms[-1]

    @property
    def mean_rate_bps(self) -> float:
        return len(self.timestamps_ms) * MAHIMAHI_PACKET_BYTES * 8 * 1000 / self.period_ms

    def rate_per_step_bps(self, step_ms: int) -> tuple[float, ...]:
        """The rate in each ``step_ms`` window of one period (the last window may be shorter).

        Bins as Rattan replays the trace (netem-trace src/mahimahi.rs): timestamp t delivers in
        the millisecond (t-1, t]; timestamp 0 counts with the period's last millisecond.
        """
        if step_ms <= 0:
            raise ValueError(f"step_ms must be positive, got {step_ms}")
        period = self.period_ms
        counts = [0] * math.ceil(period / step_ms)
        for t in self.timestamps_ms:
            counts[((t - 1) if t > 0 else period - 1) // step_ms] += 1
        bits = MAHIMAHI_PACKET_BYTES * 8
        return tuple(
            n * bits * 1000 / min(step_ms, period - k * step_ms) for k, n in enumerate(counts)
        )


def read_mahimahi(path: Path) -> MahimahiTrace:
    """Parse a Mahimahi trace file; any fault is a :class:`TraceError` naming path and line.

    What Rattan would refuse only when it starts (or, for a leading ``+`` and a 0 after larger
    timestamps, which netem-trace lets through, not at all) is refused here.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TraceError(path, 0, f"cannot read: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise TraceError(path, line, "not UTF-8 text") from exc
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    if not lines:
        raise TraceError(path, 1, "empty file: expected one timestamp (ms) per line")
    timestamps: list[int] = []
    for number, text_line in enumerate(lines, start=1):
        value = text_line.strip()
        if not _DIGITS.fullmatch(value):
            what = "blank line: expected" if not value else f"{value!r} is not"
            raise TraceError(path, number, f"{what} a whole number of milliseconds")
        t = int(value)
        if t > _U64_MAX:
            raise TraceError(path, number, f"timestamp {t} does not fit in 64 bits")
        if timestamps and t < timestamps[-1]:
            raise TraceError(
                path, number, f"timestamp {t} ms is before the previous one ({timestamps[-1]} ms)"
            )
        timestamps.append(t)
    if timestamps[-1] == 0:
        raise TraceError(path, len(lines), "the last timestamp (the period) must be positive")
    return MahimahiTrace(tuple(timestamps))
