"""Clients: a :class:`ClientAdapter` protocol and a registry. The runner never branches on names."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Protocol

from h2lab.errors import SpecError
from h2lab.pages import Page
from h2lab.spec.options import parse_named

PROTOCOLS = ("h1c", "h1p", "h1s", "h2c", "h2s")


@dataclass(frozen=True)
class LoadContext:
    netns: str
    """client namespace (its /etc/hosts resolves every origin)"""
    artifacts_dir: Path
    """this trial's folder for logs"""
    timeout_s: float
    hosts: Mapping[str, str] = field(default_factory=dict)
    """origin hostname -> address (what the namespace's /etc/hosts says)"""
    tls_dir: Path | None = None
    """the lab CA's folder (clients that pin it by SPKI read it here)"""
    link_generation: int = 0
    """changes whenever the client namespace is a new one (a client keeping processes in the
    namespace, like a browser, must start them again)"""


@dataclass(frozen=True)
class ResourceTiming:
    url: str
    origin: str
    start_ms: float
    """request start, from the trial's first request"""
    ttfb_ms: float | None
    end_ms: float
    bytes: int
    """body bytes"""
    protocol: str
    connection: str
    """connection id, unique within the trial"""
    priority: str | None = None
    """the client's priority for the request, as it reports it (Chromium: VeryHigh..VeryLow)"""
    status: int | None = None
    """HTTP status of the response, where the client reports it"""
    pushed: bool = False
    """the server pushed it (HTTP/2 server push) instead of the client requesting it"""


@dataclass(frozen=True, kw_only=True)
class PageMetrics:
    """The page-level metrics only a browser measures, from navigation start (NULL in the
    store for other clients)."""

    ttfb_ms: float | None = None
    dcl_ms: float | None = None
    """domContentLoadedEventStart"""
    fp_ms: float | None = None
    fcp_ms: float | None = None
    lcp_ms: float | None = None
    speed_index_ms: float | None = None
    visual_complete_ms: float | None = None


PAGE_METRICS = tuple(f.name for f in fields(PageMetrics))


@dataclass(frozen=True)
class LoadResult(PageMetrics):
    pdt_ms: float
    """first request sent -> last byte of the last response (seed 002)"""
    body_bytes: int
    request_header_bytes: int | None
    response_header_bytes: int | None
    resources: tuple[ResourceTiming, ...]
    plt_ms: float | None = None
    """loadEventEnd, from navigation start (browsers only)"""


class ClientAdapter(Protocol):
    name: str
    protocols: frozenset[str]

    def version(self) -> str: ...

    def load(self, page: Page, protocol: str, ctx: LoadContext) -> LoadResult: ...

    def close(self) -> None:
        """Stop whatever the client kept running between trials (idempotent)."""
        ...


_REGISTRY: dict[str, Callable[[Mapping[str, str]], ClientAdapter]] = {}


def register(name: str, factory: Callable[[Mapping[str, str]], ClientAdapter]) -> None:
    """``factory(options)``: options from ``name:key=value,...``; it raises ValueError with
    one line on an option it does not take."""
    _REGISTRY[name] = factory


def names() -> list[str]:
    _load()
    return sorted(_REGISTRY)


def get(spec: str, source: str = "client", field: str = "client") -> ClientAdapter:
    """The client named by ``spec``: a name, or ``name:key=value,...`` (e.g.
    ``chromium:device=mobile,cpu=4``)."""
    _load()
    name, options = parse_named(spec, source, field, "client")
    if name not in _REGISTRY:
        raise SpecError(source, field, f"unknown client {name!r} (known: {', '.join(names())})")
    try:
        return _REGISTRY[name](options)
    except ValueError as exc:
        raise SpecError(source, field, str(exc)) from None


def _load() -> None:
    from h2lab.clients import chromium, h2load, nghttp  # noqa: F401  (register themselves)
