"""Servers: a :class:`ServerAdapter` protocol and a registry. The runner never branches on names."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from h2lab.errors import SpecError
from h2lab.pages import Page

# Ports per protocol, the same on every origin address. h1c on :80, TLS (h1s/h2s, ALPN
# decides) on :443, h2c with prior knowledge on its own port.
PORTS = {"h1c": 80, "h1p": 80, "h1s": 443, "h2s": 443, "h2c": 8080}


@dataclass(frozen=True)
class ServeContext:
    """Everything a server needs to serve a page inside the lab."""

    netns: str
    """servers namespace name"""
    origin_ips: dict[str, str]
    """origin hostname -> address on the servers side"""
    state_dir: Path
    """folder for the server's config, pid and logs"""
    tls_dir: Path
    """folder of the local CA; leaf certificates are made there"""


class ServerAdapter(Protocol):
    name: str

    def version(self) -> str: ...

    def serve(self, page: Page, ctx: ServeContext) -> AbstractContextManager[None]:
        """Start serving ``page`` on every origin address; ready when entered; stopped on exit."""
        ...


_REGISTRY: dict[str, Callable[[], ServerAdapter]] = {}


def register(name: str, factory: Callable[[], ServerAdapter]) -> None:
    _REGISTRY[name] = factory


def names() -> list[str]:
    _load()
    return sorted(_REGISTRY)


def get(name: str, source: str = "server") -> ServerAdapter:
    _load()
    if name not in _REGISTRY:
        raise SpecError(source, "server", f"unknown server {name!r} (known: {', '.join(names())})")
    return _REGISTRY[name]()


def _load() -> None:
    from h2lab.servers import nginx  # noqa: F401  (registers itself)
