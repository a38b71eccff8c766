"""Network profiles: named presets and free-form specs, parsed once into :class:`NetworkProfile`.

Free form: ``rtt=100ms,down=10Mbps,up=2Mbps,loss=1%,queue=1000``. Keys:

=============  ==========================================================
``rtt``        round-trip time; half is applied in each direction
``delay``      one-way delay applied in each direction (alternative to rtt)
``up_delay``   one-way delay client -> servers; ``down_delay`` likewise
``rate``       bandwidth in both directions; ``up`` / ``down`` per direction
``loss``       random (Bernoulli) loss in both directions; ``up_loss`` / ``down_loss``
``queue``      droptail limit of each bandwidth queue: packets (``1000``),
               bytes (``64KB``) or bandwidth-delay products (``1bdp``)
=============  ==========================================================
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from h2lab.errors import SpecError, UnitError
from h2lab.units import (
    format_rate,
    format_size,
    parse_duration_ms,
    parse_rate_bps,
    parse_ratio,
    parse_size_bytes,
)

T = TypeVar("T")

# Linux's default txqueuelen and netem's default limit, what the seed papers' tc set-ups had.
DEFAULT_QUEUE_PACKETS = 1000
# Ethernet MTU; used to turn byte queues and BDPs into packet counts.
MTU_BYTES = 1500


@dataclass(frozen=True)
class Queue:
    """Droptail limit of a bandwidth queue: exactly one of the three is set."""

    packets: int | None = None
    bytes: int | None = None
    bdp: float | None = None

    def describe(self) -> str:
        if self.packets is not None:
            return f"{self.packets}p"
        if self.bytes is not None:
            return format_size(self.bytes)
        return f"{self.bdp:g}bdp"

    def limit_bytes(self, rate_bps: int | None, rtt_ms: float) -> int | None:
        """The queue limit in bytes for a link of this rate and RTT (None: packets only)."""
        if self.bytes is not None:
            return self.bytes
        if self.bdp is not None and rate_bps is not None:
            # never smaller than one full packet, or nothing passes
            return max(MTU_BYTES, round(self.bdp * rate_bps / 8 * rtt_ms / 1000))
        return None


@dataclass(frozen=True)
class NetworkProfile:
    """One emulated path. ``None`` rate means unlimited."""

    name: str
    up_rate_bps: int | None
    down_rate_bps: int | None
    up_delay_ms: float
    down_delay_ms: float
    up_loss_ratio: float
    down_loss_ratio: float
    queue: Queue

    @property
    def rtt_ms(self) -> float:
        return self.up_delay_ms + self.down_delay_ms

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "up_rate_bps": self.up_rate_bps,
            "down_rate_bps": self.down_rate_bps,
            "up_delay_ms": self.up_delay_ms,
            "down_delay_ms": self.down_delay_ms,
            "up_loss_ratio": self.up_loss_ratio,
            "down_loss_ratio": self.down_loss_ratio,
            "queue": self.queue.describe(),
        }

    def describe(self) -> str:
        parts = [f"rtt={self.rtt_ms:g}ms"]
        if self.down_rate_bps:
            parts.append(f"down={format_rate(self.down_rate_bps)}")
        if self.up_rate_bps:
            parts.append(f"up={format_rate(self.up_rate_bps)}")
        if self.up_loss_ratio or self.down_loss_ratio:
            if self.up_loss_ratio == self.down_loss_ratio:
                parts.append(f"loss={self.up_loss_ratio * 100:g}%")
            else:
                parts.append(f"up_loss={self.up_loss_ratio * 100:g}%")
                parts.append(f"down_loss={self.down_loss_ratio * 100:g}%")
        parts.append(f"queue={self.queue.describe()}")
        return ",".join(parts)


# Named presets. Source: WebPageTest's connectivity profiles (connectivity.ini.sample in
# WPO-Foundation/webpagetest), which are also Chrome DevTools' throttling presets' ancestors.
# `lan` is an unshaped path for smoke tests.
PRESETS: dict[str, str] = {
    "lan": "rtt=0ms",
    "fios": "rtt=4ms,down=20Mbps,up=5Mbps",
    "cable": "rtt=28ms,down=5Mbps,up=1Mbps",
    "dsl": "rtt=50ms,down=1500kbps,up=384kbps",
    "lte": "rtt=70ms,down=12Mbps,up=12Mbps",
    "4g": "rtt=170ms,down=9Mbps,up=9Mbps",
    "3g-fast": "rtt=150ms,down=1600kbps,up=768kbps",
    "3g": "rtt=300ms,down=1600kbps,up=768kbps",
    "3g-slow": "rtt=400ms,down=400kbps,up=400kbps",
    "2g": "rtt=800ms,down=280kbps,up=256kbps",
}

_KEYS = {
    "rtt",
    "delay",
    "up_delay",
    "down_delay",
    "rate",
    "up",
    "down",
    "loss",
    "up_loss",
    "down_loss",
    "queue",
}


def _parse_queue(text: str) -> Queue:
    t = text.strip().lower()
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)\s*bdp", t)
    if m:
        bdp = float(m.group(1))
        if bdp <= 0:
            raise UnitError(f"queue must be positive: {text!r}")
        return Queue(bdp=bdp)
    m = re.fullmatch(r"([0-9]+)\s*p?", t)
    if m:
        packets = int(m.group(1))
        if packets <= 0:
            raise UnitError(f"queue must be positive: {text!r}")
        return Queue(packets=packets)
    size = parse_size_bytes(text)
    if size < MTU_BYTES:
        raise UnitError(
            f"a queue smaller than one packet ({MTU_BYTES} B) drops everything: {text!r}"
        )
    return Queue(bytes=size)


def parse_network(
    text: str, source: str = "network", *, field: str = "network", name: str | None = None
) -> NetworkProfile:
    """Parse a preset name or a free-form spec. Errors name ``source`` and the key."""
    text = text.strip()
    if text in PRESETS:
        return parse_network(PRESETS[text], source, field=field, name=text)
    if "=" not in text:
        known = ", ".join(sorted(PRESETS))
        raise SpecError(
            source, field, f"unknown profile {text!r} (known: {known}; or key=value,...)"
        )
    fields: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not value.strip():
            raise SpecError(source, field, f"expected key=value, got {part!r}")
        if key not in _KEYS:
            raise SpecError(
                source, f"{field}.{key}", f"unknown key (known: {', '.join(sorted(_KEYS))})"
            )
        if key in fields:
            raise SpecError(source, f"{field}.{key}", "given twice")
        fields[key] = value.strip()

    def parsed(key: str, parse: Callable[[str], T], default: T) -> T:
        """Parse one key; a bad value names exactly that key."""
        if key not in fields:
            return default
        try:
            return parse(fields[key])
        except UnitError as exc:
            raise SpecError(source, f"{field}.{key}", str(exc)) from exc

    if "rtt" in fields and "delay" in fields:
        raise SpecError(source, field, "give rtt or delay, not both")
    one_way = parsed("rtt", lambda t: parse_duration_ms(t) / 2, 0.0)
    one_way = parsed("delay", parse_duration_ms, one_way)
    up_delay = parsed("up_delay", parse_duration_ms, one_way)
    down_delay = parsed("down_delay", parse_duration_ms, one_way)
    rate = parsed("rate", parse_rate_bps, None)
    up = parsed("up", parse_rate_bps, rate)
    down = parsed("down", parse_rate_bps, rate)
    loss = parsed("loss", parse_ratio, 0.0)
    up_loss = parsed("up_loss", parse_ratio, loss)
    down_loss = parsed("down_loss", parse_ratio, loss)
    queue = parsed("queue", _parse_queue, Queue(DEFAULT_QUEUE_PACKETS))
    return NetworkProfile(
        name=name or text,
        up_rate_bps=up,
        down_rate_bps=down,
        up_delay_ms=up_delay,
        down_delay_ms=down_delay,
        up_loss_ratio=up_loss,
        down_loss_ratio=down_loss,
        queue=queue,
    )
