"""What Chromium's and Firefox's options (``chromium:idle=2s,filmstrip=1``) have in common:
the devices they emulate, the device, network-idle wait, SpeedIndex mode, filmstrip and CPU
quota options. Pure but for ``cores``, which asks the machine whether it has a cgroup to make."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from h2lab.clients import cpu
from h2lab.errors import UnitError
from h2lab.metrics.visual import H2LAB, MODES
from h2lab.spec.options import FLAG, Parser, choice, option
from h2lab.units import parse_duration_ms

IDLE_MAX_MS = 30_000


@dataclass(frozen=True)
class Device:
    width: int
    """viewport and screen width, CSS pixels"""
    height: int
    """viewport and screen height, CSS pixels"""
    scale: float
    """device pixels per CSS pixel"""
    mobile: bool
    """a phone: mobile viewport, touch, portrait"""


DEVICES: Mapping[str, Device] = {
    "desktop": Device(1366, 768, 1.0, False),
    "mobile": Device(412, 823, 1.75, True),  # Lighthouse's emulated phone (Moto G Power)
}


def _idle_ms(text: str) -> float:
    try:
        ms = float(parse_duration_ms(text)) if text != "0" else 0.0
    except UnitError:
        raise ValueError(f"expected 0 or a duration like 2s, got {text!r}") from None
    if not 0 <= ms <= IDLE_MAX_MS:
        raise ValueError(f"expected 0..30s, got {text!r}")
    return ms


# The options both browsers take: each a function, since a dataclass field belongs to one class.


def device_option() -> Any:
    """Option ``device``: a name in :data:`DEVICES`."""
    return option(
        choice(*DEVICES),
        "desktop",
        "the emulated device: desktop 1366x768, or a phone's viewport and screen (412x823 "
        "at DPR 1.75) and user agent",
        "device=mobile",
    )


def idle_option() -> Any:
    """Option ``idle`` (after the load event, also wait for this much network silence), ms."""
    return option(
        Parser("0|DURATION (up to 30s)", _idle_ms),
        0.0,
        "after the load event, also wait until the network has been quiet this long "
        "(WebPageTest's fully loaded: fully_loaded_ms)",
        "idle=2s",
        key="idle",
    )


def speed_index_option() -> Any:
    """Option ``speed_index``: ``h2lab`` (the default) or ``wpt``, WebPageTest's way
    (:mod:`h2lab.metrics.visual`)."""
    return option(
        choice(*MODES),
        H2LAB,
        "how SpeedIndex and the visual milestones are computed: h2lab's or WebPageTest's way",
        "speed_index=wpt",
    )


def filmstrip_option() -> Any:
    return option(
        FLAG,
        False,
        "keep the frames as JPEG files in the trial's folder (the report's filmstrips)",
        "filmstrip=1",
    )


MACHINE_CORES = os.cpu_count() or 1
CORES_MIN = 0.05


def _cores(text: str) -> float:
    try:
        cores = float(text)
    except ValueError:
        cores = float("nan")
    if not CORES_MIN <= cores <= MACHINE_CORES:  # NaN fails too
        raise ValueError(
            f"expected a number of cores {CORES_MIN:g}..{MACHINE_CORES} (this machine's), "
            f"got {text!r}"
        )
    where = cpu.hierarchy()
    if isinstance(where, str):
        raise ValueError(f"no CPU quota here: {where}")
    return cores


def cores_option() -> Any:
    """Option ``cores``: the whole browser (every process it starts) in a CPU quota of this
    many cores (:mod:`h2lab.clients.cpu`); None: no quota."""
    return option(
        Parser(f"{CORES_MIN:g}..{MACHINE_CORES} (cores)", _cores),
        None,
        "the whole browser, every process it starts, in a cgroup CPU quota of this many cores "
        "(a slow device; cpu_calibration_ms per trial)",
        "cores=0.25",
    )
