"""Parse human values with units ("10Mbps", "50ms", "1%", "64KB") into typed numbers.

Parsed once at the edge (spec/); code below works with ``rate_bps``, ``delay_ms``,
``loss_ratio`` and ``size_bytes`` only.
"""

from __future__ import annotations

import re

from h2lab.errors import UnitError

_NUMBER = r"(?P<num>[0-9]+(?:\.[0-9]+)?)"

# Rates are decimal (SI), as in tc and Rattan: 1 Mbps = 1,000,000 bit/s.
_RATE_UNITS = {
    "bps": 1.0,
    "kbps": 1e3,
    "mbps": 1e6,
    "gbps": 1e9,
    "kbit": 1e3,
    "mbit": 1e6,
    "gbit": 1e9,
}
# Sizes: KB/MB are decimal as in the seed papers' tables; KiB/MiB binary.
_SIZE_UNITS = {
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
}
_TIME_UNITS_MS = {"us": 1e-3, "ms": 1.0, "s": 1000.0}


def _split(text: str, kind: str) -> tuple[float, str]:
    m = re.fullmatch(_NUMBER + r"\s*(?P<unit>[A-Za-z%]*)", text.strip())
    if not m:
        if text.strip().startswith("-"):
            raise UnitError(f"{kind} must not be negative: {text!r}")
        raise UnitError(f"not a {kind}: {text!r}")
    return float(m.group("num")), m.group("unit")


def parse_rate_bps(text: str) -> int:
    """``"10Mbps"`` -> 10_000_000. Units: bps, kbps, Mbps, Gbps (also kbit/Mbit/Gbit)."""
    value, unit = _split(text, "rate")
    factor = _RATE_UNITS.get(unit.lower())
    if factor is None:
        raise UnitError(f"unknown rate unit in {text!r} (use bps, kbps, Mbps or Gbps)")
    bps = round(value * factor)
    if bps <= 0:
        raise UnitError(f"rate must be positive: {text!r}")
    return bps


def parse_duration_ms(text: str) -> float:
    """``"50ms"`` -> 50.0, ``"1s"`` -> 1000.0, ``"500us"`` -> 0.5."""
    value, unit = _split(text, "duration")
    factor = _TIME_UNITS_MS.get(unit.lower())
    if factor is None:
        raise UnitError(f"unknown time unit in {text!r} (use us, ms or s)")
    return value * factor


def parse_ratio(text: str) -> float:
    """``"1%"`` -> 0.01. A percentage between 0% and 100%."""
    value, unit = _split(text, "percentage")
    if unit != "%":
        raise UnitError(f"a loss rate needs a % sign: {text!r}")
    if value > 100:
        raise UnitError(f"a percentage cannot exceed 100%: {text!r}")
    return value / 100.0


def parse_size_bytes(text: str) -> int:
    """``"64KB"`` -> 64000, ``"1MiB"`` -> 1048576, ``"100B"`` -> 100, ``"100"`` -> 100."""
    value, unit = _split(text, "size")
    factor = _SIZE_UNITS.get((unit or "b").lower())
    if factor is None:
        raise UnitError(f"unknown size unit in {text!r} (use B, KB, MB, KiB or MiB)")
    return round(value * factor)


def format_rate(bps: int) -> str:
    """10_000_000 -> ``"10Mbps"`` (exact when possible)."""
    for unit, factor in (("Gbps", 10**9), ("Mbps", 10**6), ("kbps", 10**3)):
        if bps % factor == 0:
            return f"{bps // factor}{unit}"
    return f"{bps}bps"


def format_size(size_bytes: int) -> str:
    for unit, factor in (("MB", 1000**2), ("KB", 1000)):
        if size_bytes >= factor and size_bytes % factor == 0:
            return f"{size_bytes // factor}{unit}"
    return f"{size_bytes}B"
