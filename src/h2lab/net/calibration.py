"""Rattan's own latency on this machine, measured once per boot.

A Delay cell set to d delays a packet by d plus Rattan's own latency: two AF_PACKET hops and
the wake-ups of its threads. That latency depends on the machine: on VMs of this kind (2 vCPU)
it was 0.35-0.47 ms per direction until 2026-11-24 and 0.139 ms on the VM of 2026-11-25, where
the constant measured on the others put every RTT 0.36 ms short (asked 40 ms, measured 39.64).
On that VM it also grew with d (docs/design-notes.md), so one value measured at a short delay
fits short delays best. h2lab therefore measures it on the machine, at the first link after
each boot: a Rattan link with one-way Delay cells of ``CALIBRATION_RTT_MS / 2`` and nothing
else, ``PROBES`` TCP SYN->RST round trips (microsecond clock), overhead per direction = (median
- asked) / 2. Every later link sets its Delay cells that much shorter
(``rattan.calibrated_delay_ms``). The result is kept in the cache, keyed by the kernel's boot
id, so a reboot (or another VM with the same cache) measures again; ``h2lab doctor`` shows it.

Labs started at once (``h2lab run --jobs``) wait on one lock: one of them measures while the
others wait, before any of them has started a link, so the measurement sees an idle machine.
"""

from __future__ import annotations

import fcntl
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from h2lab.net.rattan import DELAY_OVERHEAD_MS, RATTAN_VERSION
from h2lab.paths import cache_root

RttProbe = Callable[[float, int], list[float]]
"""``(rtt_ms, count)`` -> ``count`` TCP SYN->RST round trips (ms) over a fresh Rattan link of
one-way Delay cells of ``rtt_ms / 2``, no overhead taken off, and nothing else. Passed in by
:meth:`h2lab.net.lab.Lab.delay_overhead_ms`, so that this module needs no lab."""

CALIBRATION_RTT_MS = 20.0
PROBES = 30
MAX_OVERHEAD_MS = 2.0
"""More than this per direction is not Rattan's latency but a machine too busy to measure it:
such a calibration is refused (the links fall back to ``DELAY_OVERHEAD_MS``) and not kept."""
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


@dataclass(frozen=True)
class Calibration:
    overhead_ms: float
    """Rattan's latency per direction, taken off every Delay cell"""
    asked_rtt_ms: float
    measured_rtt_ms: float
    """median of ``probes`` round trips"""
    probes: int
    boot_id: str
    measured_at: str
    """UTC, ISO 8601"""


def calibration_file() -> Path:
    return cache_root() / f"rattan-{RATTAN_VERSION}" / "delay-calibration.json"


def boot_id() -> str:
    return BOOT_ID.read_text().strip()


def load() -> Calibration | None:
    """This boot's calibration, if one was measured."""
    try:
        raw = json.loads(calibration_file().read_text())
        cal = Calibration(**raw)
    except (OSError, ValueError, TypeError):
        return None
    return cal if cal.boot_id == boot_id() else None


def overhead_from(asked_rtt_ms: float, samples_ms: list[float]) -> float | None:
    """Rattan's latency per direction from round trips over a link that asked for
    ``asked_rtt_ms`` with no overhead taken off; None if implausible (see MAX_OVERHEAD_MS)."""
    overhead = (statistics.median(samples_ms) - asked_rtt_ms) / 2
    if not 0 <= overhead <= MAX_OVERHEAD_MS:
        return None
    return round(overhead, 3)


def delay_overhead_ms(probe: RttProbe) -> float:
    """Rattan's latency per direction on this machine: this boot's calibration, measured now
    with ``probe`` (one link, about 4 s) if there is none yet."""
    path = calibration_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.with_suffix(".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            cal = load()
            if cal is None:
                cal = measure(probe)
                if cal is None:
                    return DELAY_OVERHEAD_MS
                tmp = path.with_suffix(".tmp")
                tmp.write_text(json.dumps(asdict(cal), indent=2) + "\n")
                tmp.replace(path)
            return cal.overhead_ms
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def measure(probe: RttProbe) -> Calibration | None:
    samples = probe(CALIBRATION_RTT_MS, PROBES)
    overhead = overhead_from(CALIBRATION_RTT_MS, samples)
    if overhead is None:
        return None
    return Calibration(
        overhead_ms=overhead,
        asked_rtt_ms=CALIBRATION_RTT_MS,
        measured_rtt_ms=round(statistics.median(samples), 3),
        probes=len(samples),
        boot_id=boot_id(),
        measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
