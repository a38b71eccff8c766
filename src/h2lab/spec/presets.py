"""Named network profiles, each with its values and its source.

Fixed presets are free-form specs (see :mod:`h2lab.spec.network`); the dynamic cellular profiles
(``cell-<name>``) replay Akamai's cellular traces (:mod:`h2lab.spec.cellular`; as Rattan traces,
:mod:`h2lab.net.traces`).
"""

from __future__ import annotations

from dataclasses import dataclass

from h2lab.spec.cellular import PROFILE_NAMES


@dataclass(frozen=True)
class Preset:
    name: str
    spec: str
    """free-form spec the name stands for"""
    source: str


_WPT = "WebPageTest connectivity profiles (WPO-Foundation/webpagetest, connectivity.ini.sample)"
_S001 = "seed 001 Table I (RTT 20/100/200 ms, bandwidth 1/10 Mbit/s, loss 0/0.5/1/2%)"
_S002_DELAY = {  # seed 002 Table 3: one-way delay -> use case
    10: "optical fiber",
    25: "ADSL",
    50: "LTE",
    75: "ADSL + intercontinental",
    100: "3G",
    150: "3G + intercontinental",
    250: "2G CDN local",
    300: "2G + intercontinental",
    500: "AMEA + intercontinental",
    1000: "very long delay",
}
_S002_LOSS = (0.1, 0.3, 0.5, 1, 2, 5)  # seed 002 Table 4 (%)
_AKAMAI = (
    "Akamai cell-emulation-util cellular_emulation.sh (c) 2016 Akamai Technologies, Apache-2.0; "
    "seed 000 section 3"
)
# the profile names of the packaged Akamai data (spec/cellular.py)
CELLULAR = PROFILE_NAMES


def _presets() -> dict[str, Preset]:
    out = [
        Preset("lan", "rtt=0ms", "unshaped path for smoke tests"),
        Preset("fiber", "rtt=4ms,down=20Mbps,up=5Mbps", _WPT + ' ("FIOS")'),
        Preset("cable", "rtt=28ms,down=5Mbps,up=1Mbps", _WPT),
        Preset("dsl", "rtt=50ms,down=1500kbps,up=384kbps", _WPT),
        Preset("lte", "rtt=70ms,down=12Mbps,up=12Mbps", _WPT),
        Preset("4g", "rtt=170ms,down=9Mbps,up=9Mbps", _WPT),
        Preset("3g-fast", "rtt=150ms,down=1600kbps,up=768kbps", _WPT),
        Preset("3g", "rtt=300ms,down=1600kbps,up=768kbps", _WPT),
        Preset("3g-slow", "rtt=400ms,down=400kbps,up=400kbps", _WPT),
        Preset("2g", "rtt=800ms,down=280kbps,up=256kbps", _WPT),
    ]
    for rtt in (20, 100, 200):
        for mbps in (1, 10):
            for loss in (0, 0.5, 1, 2):
                out.append(
                    Preset(
                        f"s001-{rtt}ms-{mbps}mbps-{loss:g}pct",
                        f"rtt={rtt}ms,rate={mbps}Mbps,loss={loss:g}%",
                        _S001,
                    )
                )
    for delay, use in _S002_DELAY.items():
        for loss in _S002_LOSS:
            out.append(
                Preset(
                    f"s002-{delay}ms-{loss:g}pct",
                    f"delay={delay}ms,loss={loss:g}%",
                    f"seed 002 Tables 3-4 (one-way delay {delay} ms: {use}; loss {loss:g}%)",
                )
            )
    for name in CELLULAR:
        out.append(Preset(f"cell-{name}", f"cellular={name}", _AKAMAI))
    return {p.name: p for p in out}


PRESETS: dict[str, Preset] = _presets()
