"""Network profiles: named presets and free-form specs, parsed once into :class:`NetworkProfile`.

Free form: ``rtt=100ms,down=10Mbps,up=2Mbps,loss=1%,queue=1000``; a preset name may come first
and the keys after it override it: ``cable,loss=1%``. Keys:

====================  ===================================================================
``rtt``               round-trip time; half is applied in each direction
``delay``             one-way delay applied in each direction (alternative to rtt)
``up_delay``          one-way delay client -> servers; ``down_delay`` likewise
``rate``              bandwidth in both directions; ``up`` / ``down`` per direction
``trace``             Mahimahi bandwidth trace file, both directions; ``up_trace`` /
                      ``down_trace`` per direction (instead of a fixed rate)
``loss``              random loss in both directions; ``up_loss`` / ``down_loss``
``loss_burst``        mean length of a loss burst in packets (default 1 = independent,
                      Bernoulli); > 1 gives the Gilbert model (see :class:`LossModel`);
                      ``up_loss_burst`` / ``down_loss_burst``
``jitter``            per-packet variation of the one-way delay (standard deviation), each
                      direction; ``up_jitter`` / ``down_jitter``. Each packet draws its own
                      delay, so packets sent closer together than the jitter overtake each
                      other: the reordering knob (Rattan's ``DelayPerPacket`` cell; at most
                      48% of the one-way delay)
``queue``             limit of each bandwidth queue: packets (``1000``), bytes (``64KB``)
                      or bandwidth-delay products (``1bdp``)
``aqm``               ``droptail`` (default) or ``codel``; ``codel_target`` (5ms) and
                      ``codel_interval`` (100ms), RFC 8289's defaults
``cellular``          one of Akamai's dynamic cellular profiles (``good``, ``poor``, ...);
                      it sets rate, delay and loss itself
====================  ===================================================================
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from h2lab.errors import H2LabError, SpecError, UnitError
from h2lab.spec.presets import CELLULAR
from h2lab.spec.presets import PRESETS as _PRESET_RECORDS
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
# Akamai's script shaped with a token bucket whose queue limit was 128 KB (data/README.md).
CELLULAR_QUEUE_BYTES = 128_000
# Ethernet MTU; used to turn byte queues and BDPs into packet counts.
MTU_BYTES = 1500
# RFC 8289 section 4.2 / 4.3 defaults.
CODEL_TARGET_MS = 5.0
CODEL_INTERVAL_MS = 100.0

PRESETS: dict[str, str] = {name: p.spec for name, p in _PRESET_RECORDS.items()}


@dataclass(frozen=True)
class Queue:
    """Limit of a bandwidth queue: exactly one of the three is set."""

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
class LossModel:
    """Random loss with mean ``ratio`` in bursts of mean ``burst_packets``.

    ``burst_packets == 1``: independent (Bernoulli) drops. Above 1: the Gilbert model, i.e.
    Gilbert-Elliott with no loss in the good state and certain loss in the bad state. With
    p = P(good -> bad) and r = P(bad -> good), the mean loss is p / (p + r) and the mean burst
    1 / r, so r = 1 / burst and p = ratio * r / (1 - ratio). Rattan's loss pattern gives the
    drop probability of a packet after k consecutive drops: ``[p, 1 - r]`` is this chain.
    """

    ratio: float
    burst_packets: float = 1.0

    def pattern(self) -> list[float]:
        if self.ratio <= 0:
            return [0.0]
        if self.burst_packets <= 1 or self.ratio >= 1:
            return [self.ratio]
        r = 1 / self.burst_packets
        p = self.ratio * r / (1 - self.ratio)
        return [min(1.0, p), 1 - r]


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
    up_loss_burst: float = 1.0
    down_loss_burst: float = 1.0
    up_trace: str | None = None
    """Mahimahi bandwidth trace file (replaces ``up_rate_bps``)"""
    down_trace: str | None = None
    aqm: str = "droptail"
    codel_target_ms: float = CODEL_TARGET_MS
    codel_interval_ms: float = CODEL_INTERVAL_MS
    cellular: str | None = None
    """name of an Akamai cellular profile driving rate, delay and loss"""
    cellular_parts: tuple[str, ...] = ("bw", "delay", "loss")
    """which of the profile's traces the link replays (``net check`` checks them one by one)"""
    up_jitter_ms: float = 0.0
    """standard deviation of each packet's one-way delay (0: every packet the same delay)"""
    down_jitter_ms: float = 0.0

    @property
    def rtt_ms(self) -> float:
        return self.up_delay_ms + self.down_delay_ms

    @property
    def up_loss(self) -> LossModel:
        return LossModel(self.up_loss_ratio, self.up_loss_burst)

    @property
    def down_loss(self) -> LossModel:
        return LossModel(self.down_loss_ratio, self.down_loss_burst)

    def as_dict(self) -> dict[str, object]:
        """Every field (the trial's ``config_json``): the queue as its spec text, tuples as
        lists. Derived from the fields, so a key the parser learns reaches the store."""
        out: dict[str, object] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Queue):
                value = value.describe()
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    def describe(self) -> str:
        if self.cellular:
            return f"cellular={self.cellular},queue={self.queue.describe()}"
        parts = [f"rtt={self.rtt_ms:g}ms"]
        for key, rate, trace in (
            ("down", self.down_rate_bps, self.down_trace),
            ("up", self.up_rate_bps, self.up_trace),
        ):
            if trace:
                parts.append(f"{key}_trace={trace}")
            elif rate:
                parts.append(f"{key}={format_rate(rate)}")
        if self.up_loss_ratio or self.down_loss_ratio:
            if self.up_loss == self.down_loss:
                parts.append(f"loss={self.up_loss_ratio * 100:g}%")
                if self.up_loss_burst != 1:
                    parts.append(f"loss_burst={self.up_loss_burst:g}")
            else:
                parts.append(f"up_loss={self.up_loss_ratio * 100:g}%")
                parts.append(f"down_loss={self.down_loss_ratio * 100:g}%")
        if self.up_jitter_ms or self.down_jitter_ms:
            if self.up_jitter_ms == self.down_jitter_ms:
                parts.append(f"jitter={self.up_jitter_ms:g}ms")
            else:
                parts.append(f"up_jitter={self.up_jitter_ms:g}ms")
                parts.append(f"down_jitter={self.down_jitter_ms:g}ms")
        parts.append(f"queue={self.queue.describe()}")
        if self.aqm != "droptail":
            parts.append(f"aqm={self.aqm}")
        return ",".join(parts)


NETWORK_KEYS = {
    "rtt",
    "delay",
    "up_delay",
    "down_delay",
    "rate",
    "up",
    "down",
    "trace",
    "up_trace",
    "down_trace",
    "loss",
    "up_loss",
    "down_loss",
    "loss_burst",
    "up_loss_burst",
    "down_loss_burst",
    "jitter",
    "up_jitter",
    "down_jitter",
    "queue",
    "aqm",
    "codel_target",
    "codel_interval",
    "cellular",
}
# An override of the general key replaces the specific keys of the base preset too.
_FAMILIES = {
    "rtt": ("rtt", "delay", "up_delay", "down_delay"),
    "delay": ("rtt", "delay", "up_delay", "down_delay"),
    "rate": ("rate", "up", "down", "trace", "up_trace", "down_trace"),
    "trace": ("rate", "up", "down", "trace", "up_trace", "down_trace"),
    "loss": ("loss", "up_loss", "down_loss"),
    "loss_burst": ("loss_burst", "up_loss_burst", "down_loss_burst"),
    "jitter": ("jitter", "up_jitter", "down_jitter"),
}
_CELLULAR_SETS = {"rtt", "delay", "up_delay", "down_delay", "rate", "up", "down", "trace"}
_CELLULAR_SETS |= {"up_trace", "down_trace", "loss", "up_loss", "down_loss"}
_CELLULAR_SETS |= {"loss_burst", "up_loss_burst", "down_loss_burst"}
_CELLULAR_SETS |= {"jitter", "up_jitter", "down_jitter"}


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


def _parse_burst(text: str) -> float:
    try:
        value = float(text)
    except ValueError as exc:
        raise UnitError(f"a burst length is a number of packets: {text!r}") from exc
    if value < 1:
        raise UnitError(f"a mean burst is at least 1 packet: {text!r}")
    return value


def _parse_aqm(text: str) -> str:
    if text not in ("droptail", "codel"):
        raise UnitError(f"unknown queue discipline {text!r} (use droptail or codel)")
    return text


def _parse_cellular(text: str) -> str:
    if text not in CELLULAR:
        raise UnitError(f"unknown cellular profile {text!r} (known: {', '.join(CELLULAR)})")
    return text


def _check_trace(text: str) -> str:
    """A readable, well-formed Mahimahi trace; its path is kept as given but for ``~``,
    expanded here once (the code that later opens the file does not expand it)."""
    from h2lab.spec.cellular import read_mahimahi

    path = Path(text).expanduser()
    try:
        read_mahimahi(path)
    except H2LabError as exc:
        raise UnitError(exc.line()) from exc
    return str(path) if text.startswith("~") else text


def _known_names() -> str:
    common = [n for n in PRESETS if not n.startswith(("s001-", "s002-"))]
    return ", ".join([*common, "s001-<rtt>ms-<rate>mbps-<loss>pct", "s002-<delay>ms-<loss>pct"])


def _split(text: str, source: str, field: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not value.strip():
            raise SpecError(source, field, f"expected key=value, got {part!r}")
        if key not in NETWORK_KEYS:
            raise SpecError(
                source, f"{field}.{key}", f"unknown key (known: {', '.join(sorted(NETWORK_KEYS))})"
            )
        if key in fields:
            raise SpecError(source, f"{field}.{key}", "given twice")
        fields[key] = value.strip()
    return fields


def _fields_of(text: str, source: str, field: str) -> dict[str, str]:
    """The spec's key=value fields; a preset name first gives its fields, which later keys
    override (a general key replaces the preset's specific ones: ``rtt`` its ``up_delay``)."""
    head, _, rest = text.partition(",")
    head = head.strip()
    if "=" in head:
        return _split(text, source, field)
    if head not in PRESETS:
        raise SpecError(
            source, field, f"unknown profile {head!r} (known: {_known_names()}; or key=value,...)"
        )
    fields = _split(PRESETS[head], source, field)
    if rest.strip():
        overrides = _split(rest, source, field)
        for key in overrides:
            for dropped in _FAMILIES.get(key, (key,)):
                fields.pop(dropped, None)
        fields.update(overrides)
    return fields


@dataclass(frozen=True)
class _Fields:
    """A spec's fields, read one key at a time; a bad value names exactly that key."""

    fields: dict[str, str]
    source: str
    field: str

    def __call__(self, key: str, parse: Callable[[str], T], default: T) -> T:
        if key not in self.fields:
            return default
        try:
            return parse(self.fields[key])
        except UnitError as exc:
            raise SpecError(self.source, f"{self.field}.{key}", str(exc)) from exc

    def error(self, key: str | None, reason: str) -> SpecError:
        return SpecError(self.source, f"{self.field}.{key}" if key else self.field, reason)


def _check_exclusive(get: _Fields, cellular: str | None) -> None:
    if cellular is not None:
        clash = sorted(set(get.fields) & _CELLULAR_SETS)
        if clash and "jitter" in clash[0]:
            raise get.error(
                clash[0], "a cellular profile replays its own delays; jitter needs a fixed delay"
            )
        if clash:
            raise get.error(clash[0], "a cellular profile sets rate, delay and loss itself")
    if "rtt" in get.fields and "delay" in get.fields:
        raise get.error(None, "give rtt or delay, not both")
    if "rate" in get.fields and "trace" in get.fields:
        raise get.error(None, "give rate or trace, not both")


def _losses(get: _Fields) -> tuple[float, float, float, float]:
    """(up loss, down loss, up burst, down burst)."""
    loss = get("loss", parse_ratio, 0.0)
    up_loss = get("up_loss", parse_ratio, loss)
    down_loss = get("down_loss", parse_ratio, loss)
    burst = get("loss_burst", _parse_burst, 1.0)
    up_burst = get("up_loss_burst", _parse_burst, burst)
    down_burst = get("down_loss_burst", _parse_burst, burst)
    for key, ratio, b in (("up_loss", up_loss, up_burst), ("down_loss", down_loss, down_burst)):
        # the Gilbert chain cannot lose more than burst / (burst + 1) of the packets
        if b > 1 and ratio > b / (b + 1):
            raise get.error(key, f"at most {b / (b + 1):.0%} loss with bursts of {b:g}")
    return up_loss, down_loss, up_burst, down_burst


# The per-packet delay spans ±2 standard deviations of a normal distribution clamped there
# (net/rattan.py): 2.085 x the jitter either side of the delay, which cannot be negative.
MAX_JITTER_SHARE = 0.4797
"""the most jitter a one-way delay can carry, as a share of it"""


def _jitters(get: _Fields, up_delay_ms: float, down_delay_ms: float) -> tuple[float, float]:
    """(up jitter, down jitter) in ms, each at most :data:`MAX_JITTER_SHARE` of its
    direction's one-way delay."""
    jitter = get("jitter", parse_duration_ms, 0.0)
    out = []
    for key, delay in (("up_jitter", up_delay_ms), ("down_jitter", down_delay_ms)):
        value = get(key, parse_duration_ms, jitter)
        if value > delay * MAX_JITTER_SHARE:
            named = key if key in get.fields else "jitter"
            raise get.error(
                named,
                f"{value:g} ms cannot be emulated over a {delay:g} ms one-way delay: at most "
                f"{delay * MAX_JITTER_SHARE:.3g} ms (48% of it), as each packet's delay spans "
                "±2.085 jitter and cannot be negative",
            )
        out.append(value)
    return out[0], out[1]


def parse_network(
    text: str, source: str = "network", *, field: str = "network", name: str | None = None
) -> NetworkProfile:
    """Parse a preset name, a free-form spec, or a preset followed by overriding keys.

    Errors name ``source`` and the key (``<field>.<key>``).
    """
    text = text.strip()
    get = _Fields(_fields_of(text, source, field), source, field)
    cellular = get("cellular", _parse_cellular, None)
    _check_exclusive(get, cellular)
    one_way = get("rtt", lambda t: parse_duration_ms(t) / 2, 0.0)
    one_way = get("delay", parse_duration_ms, one_way)
    rate = get("rate", parse_rate_bps, None)
    trace = get("trace", _check_trace, None)
    up_trace = get("up_trace", _check_trace, trace)
    down_trace = get("down_trace", _check_trace, trace)
    if up_trace and "up" in get.fields:
        raise get.error("up_trace", "give up or up_trace, not both")
    if down_trace and "down" in get.fields:
        raise get.error("down_trace", "give down or down_trace, not both")
    up_loss, down_loss, up_burst, down_burst = _losses(get)
    up_delay = get("up_delay", parse_duration_ms, one_way)
    down_delay = get("down_delay", parse_duration_ms, one_way)
    up_jitter, down_jitter = _jitters(get, up_delay, down_delay)
    default_queue = Queue(bytes=CELLULAR_QUEUE_BYTES) if cellular else Queue(DEFAULT_QUEUE_PACKETS)
    queue = get("queue", _parse_queue, default_queue)
    if queue.bdp is not None and (cellular or up_trace or down_trace):
        # a replayed rate has no single BDP (Rattan would get no queue limit at all)
        raise get.error("queue", "a queue in BDPs needs a fixed rate; give packets or bytes")
    return NetworkProfile(
        name=name or text,
        up_rate_bps=None if up_trace else get("up", parse_rate_bps, rate),
        down_rate_bps=None if down_trace else get("down", parse_rate_bps, rate),
        up_delay_ms=up_delay,
        down_delay_ms=down_delay,
        up_loss_ratio=up_loss,
        down_loss_ratio=down_loss,
        queue=queue,
        up_loss_burst=up_burst,
        down_loss_burst=down_burst,
        up_trace=up_trace,
        down_trace=down_trace,
        aqm=get("aqm", _parse_aqm, "droptail"),
        codel_target_ms=get("codel_target", parse_duration_ms, CODEL_TARGET_MS),
        codel_interval_ms=get("codel_interval", parse_duration_ms, CODEL_INTERVAL_MS),
        cellular=cellular,
        up_jitter_ms=up_jitter,
        down_jitter_ms=down_jitter,
    )
