"""What Chromium's and Firefox's options (``chromium:idle=2s,filmstrip=1``) have in common:
the devices they emulate, the check against the known names, the 0/1 switches, the
network-idle wait and the SpeedIndex mode. Pure."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from h2lab.errors import UnitError
from h2lab.metrics.visual import H2LAB, MODES
from h2lab.spec.options import OptionDoc
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


def device(options: Mapping[str, str]) -> str:
    """Option ``device``: a name in :data:`DEVICES` (default desktop)."""
    name = options.get("device", "desktop")
    if name not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, got {name!r}")
    return name


def check_known(browser: str, options: Mapping[str, str], known: Collection[str]) -> None:
    """ValueError naming the first option ``browser`` does not know."""
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(
            f"unknown {browser} option {unknown[0]!r} (known: {', '.join(sorted(known))})"
        )


def switches(
    options: Mapping[str, str], names: Collection[str], on: Collection[str] = ()
) -> dict[str, bool]:
    """Each 0/1 option of ``names`` as a bool (absent: on if named in ``on``)."""
    flags = {}
    for name in names:
        value = options.get(name, "1" if name in on else "0")
        if value not in ("0", "1"):
            raise ValueError(f"{name} must be 0 or 1, got {value!r}")
        flags[name] = value == "1"
    return flags


def idle_ms(options: Mapping[str, str]) -> float:
    """Option ``idle`` (after the load event, also wait for this much network silence), ms."""
    idle = options.get("idle", "0")
    try:
        ms = float(parse_duration_ms(idle)) if idle != "0" else 0.0
    except UnitError:
        raise ValueError(f"idle must be a duration like 2s, got {idle!r}") from None
    if not 0 <= ms <= IDLE_MAX_MS:
        raise ValueError(f"idle must be 0..30s, got {idle!r}")
    return ms


def speed_index_mode(options: Mapping[str, str]) -> str:
    """Option ``speed_index``: ``h2lab`` (the default) or ``wpt``, WebPageTest's way
    (:mod:`h2lab.metrics.visual`)."""
    mode = options.get("speed_index", H2LAB)
    if mode not in MODES:
        raise ValueError(f"speed_index must be one of {', '.join(MODES)}, got {mode!r}")
    return mode


def common_docs(browser: str) -> tuple[OptionDoc, ...]:
    """The options both browsers take, for docs/reference.md."""
    return (
        OptionDoc(
            "device",
            "desktop|mobile",
            "the emulated device: desktop 1366x768, or a phone's viewport and screen (412x823 "
            "at DPR 1.75) and user agent",
            f"{browser}:device=mobile",
        ),
        OptionDoc(
            "idle",
            "0|DURATION (up to 30s)",
            "after the load event, also wait until the network has been quiet this long "
            "(WebPageTest's fully loaded: fully_loaded_ms)",
            f"{browser}:idle=2s",
        ),
        OptionDoc(
            "speed_index",
            "h2lab|wpt",
            "how SpeedIndex and the visual milestones are computed: h2lab's or WebPageTest's way",
            f"{browser}:speed_index=wpt",
        ),
        OptionDoc(
            "filmstrip",
            "0|1",
            "keep the frames as JPEG files in the trial's folder (the report's filmstrips)",
            f"{browser}:filmstrip=1",
        ),
    )
