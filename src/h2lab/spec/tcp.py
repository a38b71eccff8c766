"""TCP stack settings of a trial's namespaces (pure: applied by :mod:`h2lab.net.lab`)."""

from __future__ import annotations

from dataclasses import dataclass

CONGESTION_CONTROLS = ("cubic", "bbr", "reno")


@dataclass(frozen=True)
class TcpSettings:
    """Per-namespace TCP stack settings, trial factors (``congestion_control``, ``initcwnd``)."""

    congestion_control: str = "cubic"  # the seed papers' Linux default (host default here: bbr)
    initcwnd_packets: int = 10  # RFC 6928
