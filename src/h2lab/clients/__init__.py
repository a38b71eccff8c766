"""Clients: a :class:`ClientAdapter` protocol and a registry. The runner never branches on names."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from h2lab.errors import TrialFailed
from h2lab.pages import Page
from h2lab.results import LoadResult, ResourceTiming
from h2lab.spec.journey import Journey
from h2lab.spec.registry import Registry


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
    qlog_dir: Path | None = None
    """where to leave this trial's qlog files (``capture = ["qlog"]``, an h3 trial), for the
    clients that write them (:attr:`ClientAdapter.qlog`); None: none asked"""
    discovery: str = "forced"
    """how an h3 trial's browser finds HTTP/3 (the ``discovery`` factor): ``forced``, every lab
    origin known to speak it from the first request; ``alt-svc``, learnt from the servers'
    ``Alt-Svc`` headers, as shipped. Only clients with it in :attr:`ClientAdapter.discoveries`"""
    h3_hosts: frozenset[str] | None = None
    """the origins of :attr:`hosts` that speak h3 in an h3 trial (the ``h3_origins`` factor):
    a browser forces or maps QUIC for those only, and reaches the others over TCP; None: every
    one. Only clients with :attr:`ClientAdapter.mixed_origins`"""

    journey: Journey | None = None
    """the steps to take after the first (``page = "journey:FILE"``), in a client with
    :attr:`ClientAdapter.journeys`; None: the page's load alone"""

    def speaks_h3(self, host: str) -> bool:
        """Whether ``host`` is one of :attr:`h3_hosts` (every host when that is None)."""
        return self.h3_hosts is None or host in self.h3_hosts


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

    discoveries: frozenset[str] = frozenset({"forced"})
    """the ``discovery`` factor's levels it runs (:attr:`LoadContext.discovery`)"""
    repeat_discoveries: frozenset[str] = frozenset({"forced"})
    """of those, the ones it runs in a repeat view"""
    mixed_origins: bool = False
    """it speaks h3 to some origins of a page and TCP to the others (:attr:`LoadContext.h3_hosts`,
    the ``h3_origins`` factor); False: every origin over the trial's protocol"""
    qlog: bool = False
    """it writes a qlog file per QUIC connection into :attr:`LoadContext.qlog_dir` when asked"""
    journeys: bool = False
    """it takes a journey's steps (:attr:`LoadContext.journey`)"""

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

REGISTRY: Registry[ClientAdapter] = Registry(
    "client",
    ADAPTERS,
    # the first spelling of a capture: the lab captures, for every client
    refused={
        "pcap": 'pcap is not a client option: capture = ["pcap"] (h2lab run/load --capture '
        "pcap) records the packets of any client"
    },
)
"""Every client by name, with its options (:mod:`h2lab.spec.registry`)."""

register = REGISTRY.register
names = REGISTRY.names
options_of = REGISTRY.options_of


def get(spec: str, source: str = "client", field: str = "client") -> ClientAdapter:
    """The client named by ``spec``: a name, or ``name:key=value,...`` (e.g.
    ``chromium:device=mobile,cpu=4``); :class:`SpecError` naming ``source`` and ``field`` when
    it is unknown or its options are not taken."""
    return REGISTRY.get(spec, source, field)
