"""Experiment files (TOML) -> a frozen, validated :class:`Experiment`.

Every error names the file, the key and what would be accepted; nothing is created on disk
or in the kernel while validating.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from h2lab.errors import SpecError
from h2lab.spec.network import NetworkProfile, parse_network

PROTOCOLS = ("h1c", "h1p", "h1s", "h2c", "h2s")
CONGESTION_CONTROLS = ("cubic", "bbr", "reno")
TOP_KEYS = {"name", "description", "seed", "repetitions", "timeout_s", "factors"}
FACTOR_KEYS = {
    "protocol",
    "network",
    "page",
    "server",
    "client",
    "congestion_control",
    "initcwnd",
}
DEFAULT_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Factors:
    protocol: tuple[str, ...]
    network: tuple[NetworkProfile, ...]
    page: tuple[str, ...]
    server: tuple[str, ...] = ("nginx",)
    client: tuple[str, ...] = ("h2load",)
    congestion_control: tuple[str, ...] = ("cubic",)
    initcwnd: tuple[int, ...] = (10,)


@dataclass(frozen=True)
class Experiment:
    name: str
    factors: Factors
    seed: int = 0
    repetitions: int = 1
    timeout_s: float = DEFAULT_TIMEOUT_S
    description: str = ""
    source: str = field(default="<cli>", compare=False)


def _list(source: str, key: str, value: Any, kind: type) -> tuple[Any, ...]:
    values = value if isinstance(value, list) else [value]
    if not values:
        raise SpecError(source, key, "must list at least one value")
    for i, v in enumerate(values):
        if kind is int and (isinstance(v, bool) or not isinstance(v, int)):
            raise SpecError(source, f"{key}[{i}]", f"must be an integer, got {v!r}")
        if kind is str and not isinstance(v, str):
            raise SpecError(source, f"{key}[{i}]", f"must be a string, got {v!r}")
    if len(set(values)) != len(values):
        raise SpecError(source, key, "lists a value twice")
    return tuple(values)


def _choice(
    source: str, key: str, values: tuple[str, ...], allowed: list[str] | tuple[str, ...]
) -> None:
    for i, v in enumerate(values):
        if v not in allowed:
            raise SpecError(
                source, f"{key}[{i}]", f"unknown value {v!r} (allowed: {', '.join(allowed)})"
            )


def validate_factors(source: str, raw: dict[str, Any]) -> Factors:
    from h2lab import clients, servers
    from h2lab.pages import synthetic

    unknown = sorted(set(raw) - FACTOR_KEYS)
    if unknown:
        allowed = ", ".join(sorted(FACTOR_KEYS))
        raise SpecError(source, f"factors.{unknown[0]}", f"unknown factor (known: {allowed})")
    for required in ("protocol", "network", "page"):
        if required not in raw:
            raise SpecError(source, f"factors.{required}", "missing (required)")
    protocol = _list(source, "factors.protocol", raw["protocol"], str)
    _choice(source, "factors.protocol", protocol, PROTOCOLS)
    networks = _list(source, "factors.network", raw["network"], str)
    network = tuple(
        parse_network(n, source, field=f"factors.network[{i}]") for i, n in enumerate(networks)
    )
    page = _list(source, "factors.page", raw["page"], str)
    for i, p in enumerate(page):
        if not p.startswith("synthetic:"):
            raise SpecError(
                source,
                f"factors.page[{i}]",
                f"unknown page {p!r} (use synthetic:n=<count>,size=<bytes>,origins=<k>)",
            )
        synthetic.parse(p, source, field=f"factors.page[{i}]")
    server = _list(source, "factors.server", raw.get("server", ["nginx"]), str)
    _choice(source, "factors.server", server, servers.names())
    client = _list(source, "factors.client", raw.get("client", ["h2load"]), str)
    for i, c in enumerate(client):
        adapter = clients.get(c, source, f"factors.client[{i}]")
        unsupported = [p for p in protocol if p not in adapter.protocols]
        if unsupported:
            note = getattr(adapter, "protocol_note", "")
            raise SpecError(
                source,
                f"factors.client[{i}]",
                f"{c} cannot run protocol {unsupported[0]}" + (f" ({note})" if note else ""),
            )
    cc = _list(source, "factors.congestion_control", raw.get("congestion_control", ["cubic"]), str)
    _choice(source, "factors.congestion_control", cc, CONGESTION_CONTROLS)
    iw = _list(source, "factors.initcwnd", raw.get("initcwnd", [10]), int)
    for i, w in enumerate(iw):
        if not 1 <= w <= 1000:
            raise SpecError(source, f"factors.initcwnd[{i}]", f"must be 1..1000 packets, got {w}")
    return Factors(protocol, network, page, server, client, cc, iw)


def parse_experiment(raw: dict[str, Any], source: str) -> Experiment:
    unknown = sorted(set(raw) - TOP_KEYS)
    if unknown:
        raise SpecError(source, unknown[0], f"unknown key (known: {', '.join(sorted(TOP_KEYS))})")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise SpecError(source, "name", "missing or not a string")
    seed = raw.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SpecError(source, "seed", f"must be a non-negative integer, got {seed!r}")
    reps = raw.get("repetitions", 1)
    if isinstance(reps, bool) or not isinstance(reps, int) or not 1 <= reps <= 10_000:
        raise SpecError(source, "repetitions", f"must be an integer 1..10000, got {reps!r}")
    timeout = raw.get("timeout_s", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise SpecError(
            source, "timeout_s", f"must be a positive number of seconds, got {timeout!r}"
        )
    factors = raw.get("factors")
    if not isinstance(factors, dict):
        raise SpecError(source, "factors", "missing table [factors]")
    return Experiment(
        name=name,
        factors=validate_factors(source, factors),
        seed=seed,
        repetitions=reps,
        timeout_s=float(timeout),
        description=str(raw.get("description", "")),
        source=source,
    )


def load_experiment(path: Path) -> Experiment:
    source = str(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise SpecError(source, "file", f"cannot read: {exc.strerror}") from exc
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(source, "toml", f"malformed TOML: {exc}") from exc
    return parse_experiment(raw, source)
