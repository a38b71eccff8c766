"""Clients: a :class:`ClientAdapter` protocol and a registry. The runner never branches on names."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from h2lab.errors import SpecError
from h2lab.pages import Page

PROTOCOLS = ("h1c", "h1p", "h1s", "h2c", "h2s")


@dataclass(frozen=True)
class LoadContext:
    netns: str
    """client namespace (its /etc/hosts resolves every origin)"""
    artifacts_dir: Path
    """this trial's folder for logs"""
    timeout_s: float


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


@dataclass(frozen=True)
class LoadResult:
    pdt_ms: float
    """first request sent -> last byte of the last response (seed 002)"""
    body_bytes: int
    request_header_bytes: int | None
    response_header_bytes: int | None
    resources: tuple[ResourceTiming, ...]
    plt_ms: float | None = None


class ClientAdapter(Protocol):
    name: str
    protocols: frozenset[str]

    def version(self) -> str: ...

    def load(self, page: Page, protocol: str, ctx: LoadContext) -> LoadResult: ...


_REGISTRY: dict[str, Callable[[], ClientAdapter]] = {}


def register(name: str, factory: Callable[[], ClientAdapter]) -> None:
    _REGISTRY[name] = factory


def names() -> list[str]:
    _load()
    return sorted(_REGISTRY)


def get(name: str, source: str = "client") -> ClientAdapter:
    _load()
    if name not in _REGISTRY:
        raise SpecError(source, "client", f"unknown client {name!r} (known: {', '.join(names())})")
    return _REGISTRY[name]()


def _load() -> None:
    from h2lab.clients import h2load  # noqa: F401  (registers itself)
