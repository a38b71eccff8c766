"""Clients: a :class:`ClientAdapter` protocol and a registry. The runner never branches on names."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from h2lab.errors import H2LabError, SpecError, TrialFailed
from h2lab.pages import Page
from h2lab.results import LoadResult, ResourceTiming
from h2lab.spec.options import OptionDoc, parse_named, undeclared


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
    fail_on: str = "document"
    """a browser's load fails when the document fails (``document``: a failed subresource
    is a resources row with its error) or when any request for the page's resources fails
    (``any``)"""
    link_generation: int = 0
    """changes whenever the client namespace is a new one (a client keeping processes in the
    namespace, like a browser, must start them again)"""
    keylog: Path | None = None
    """where to leave the TLS keys of this trial's connections (SSLKEYLOGFILE format: the
    trial has a packet capture and speaks TLS); None: no keys wanted. A client that cannot
    log its keys leaves no file (nghttp, OkHttp)"""


__all__ = [
    "ClientAdapter",
    "LoadContext",
    "LoadResult",
    "ResourceTiming",
]


class ClientAdapter(Protocol):
    """What the runner and the checks use of a client, all of it: an adapter inherits this
    class for the defaults of :attr:`protocol_note` and :meth:`prepare`."""

    name: str
    protocols: frozenset[str]
    protocol_note: str = ""
    """why the protocols it does not run are not among :attr:`protocols`, said with a trial
    that asks one of them ("": nothing to add)"""
    views: frozenset[str] = frozenset({"first"})
    """the ``view`` factor's levels it runs: ``repeat`` needs a browser profile to visit the
    page again (:meth:`prime`)"""

    def version(self) -> str: ...

    def prepare(self, protocol: str, ctx: LoadContext) -> None:
        """Start what must not count as the trial's before the runner reads its counters (a
        browser reached over a socket in the client namespace, Firefox's BiDi); by default
        nothing."""
        return None

    def prime(self, page: Page, protocol: str, ctx: LoadContext) -> None:
        """A repeat view's first visit, not counted (after :meth:`prepare`, before the
        counters): load ``page``, then close every connection and empty the HTTP cache, keeping
        what a browser keeps between visits (TLS session tickets, Alt-Svc), so that the next
        :meth:`load` is the repeat view. Only a client with ``repeat`` in :attr:`views`."""
        raise TrialFailed(f"{self.name} has no repeat view (views: {sorted(self.views)})")

    def load(self, page: Page, protocol: str, ctx: LoadContext) -> LoadResult: ...

    def close(self) -> None:
        """Stop whatever the client kept running between trials (idempotent)."""
        ...


_REGISTRY: dict[str, Callable[[Mapping[str, str]], ClientAdapter]] = {}
_OPTIONS: dict[str, tuple[OptionDoc, ...]] = {}


def register(
    name: str,
    factory: Callable[[Mapping[str, str]], ClientAdapter],
    options: Sequence[OptionDoc] = (),
) -> None:
    """``factory(options)``: options from ``name:key=value,...``; it raises ValueError with
    one line on an option it does not take. ``options``: every option it takes, for
    docs/reference.md (:mod:`h2lab.reference`); :func:`get` refuses one it accepts undeclared."""
    _REGISTRY[name] = factory
    _OPTIONS[name] = tuple(options)


def options_of(name: str) -> tuple[OptionDoc, ...]:
    """The options ``name`` declared when it registered."""
    _load()
    return _OPTIONS[name]


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
    if "pcap" in options:  # the first spelling: the lab captures, for every client
        why = 'pcap is not a client option: capture = ["pcap"] (h2lab run/load --capture pcap)'
        raise SpecError(source, field, f"{why} records the packets of any client")
    try:
        adapter = _REGISTRY[name](options)
    except ValueError as exc:
        raise SpecError(source, field, str(exc)) from None
    missing = undeclared(options, _OPTIONS.get(name, ()))
    if missing:  # the adapter takes it, the reference does not list it: h2lab's own slip
        raise H2LabError(f"client {name}: option {missing[0]} is not declared (docs/reference.md)")
    return adapter


ADAPTERS = tuple(
    f"h2lab.clients.{m}"
    for m in (
        "browser.chromium.client",
        "browser.firefox.client",
        "curl",
        "h2load",
        "nghttp",
        "okhttp",
    )
)
"""The modules that register a client when imported, one line each (the only place that names
them: a browser engine is a folder of :mod:`h2lab.clients.browser` and its line here). Loaded
by name, as plug-ins: the registry depends on none of them, they depend on it (no import
cycle)."""


def _load() -> None:
    for module in ADAPTERS:
        importlib.import_module(module)
