"""The cellular profiles' data and the Mahimahi traces a network spec names: read and checked.

Pure but for reading the packaged profile data and a trace file the caller names; turning them
into Rattan's trace configs is :mod:`h2lab.net.traces`.

**Cellular profiles** (``data/cellular-profiles.json``, see ``data/NOTICE``) come from Akamai's
``cellular_emulation.sh``, the network model of Goel et al. (MobiCom 2016). Each profile has one
value per 70 ms step for RTT, rate, loss probability and loss gap.

**Mahimahi traces** (:func:`read_mahimahi`) are checked here so that a bad file fails with its
path and line before Rattan starts; Rattan reads any BwReplay trace whose name does not end in
``.json`` or ``.toml`` as Mahimahi.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from h2lab.errors import H2LabError

# Length of one profile step. Source: cellular_emulation.sh (`interval=0.07`, one array value
# per loop turn; 200 values = 14 s, then repeat), recorded as "step_ms" in the packaged JSON.
STEP_MS = 70

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
MAX_TRACE_BYTES = 64 << 20
"""Largest trace file read: Mahimahi's longest shipped traces (hours of LTE) are a few MB."""


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
    resource = resources.files("h2lab.spec").joinpath("data", "cellular-profiles.json")
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
        with path.open("rb") as fh:
            raw = fh.read(MAX_TRACE_BYTES + 1)
    except OSError as exc:
        raise TraceError(path, 0, f"cannot read: {exc.strerror or exc}") from exc
    if len(raw) > MAX_TRACE_BYTES:
        raise TraceError(path, 0, f"larger than {MAX_TRACE_BYTES} bytes (MAX_TRACE_BYTES)")
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
