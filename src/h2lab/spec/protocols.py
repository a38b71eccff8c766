"""Protocol names (docs/guide.md, "Clients and protocols"), defined once: experiments,
adapters and the analysis take their lists from here."""

from __future__ import annotations

from typing import Final, Literal, Protocol

ProtocolName = Literal["h1c", "h1p", "h1s", "h2c", "h2s", "h3"]
"""A protocol an experiment may name, as trial keys and the store write it."""

H1C: Final = "h1c"
"""HTTP/1.1 cleartext"""
H1P: Final = "h1p"
"""HTTP/1.1 cleartext, pipelined (load clients only)"""
H1S: Final = "h1s"
"""HTTP/1.1 over TLS"""
H2C: Final = "h2c"
"""HTTP/2 cleartext, prior knowledge"""
H2S: Final = "h2s"
"""HTTP/2 over TLS (ALPN)"""
H3: Final = "h3"
"""HTTP/3 over QUIC"""

PROTOCOLS: tuple[ProtocolName, ...] = (H1C, H1P, H1S, H2C, H2S, H3)
"""Every protocol an experiment may name."""


CLEARTEXT_TCP: frozenset[str] = frozenset({H1C, H1P, H2C})
TLS_OVER_TCP: frozenset[str] = frozenset({H1S, H2S})
"""The protocols whose TLS version is a factor (``tls``); QUIC is always TLS 1.3."""
QUIC: frozenset[str] = frozenset({H3})
TCP_PROTOCOLS = CLEARTEXT_TCP | TLS_OVER_TCP

TLS_VERSIONS = ("1.2", "1.3")
"""The TLS versions a trial may use over TCP (the ``tls`` factor)."""

# Ports per protocol, the same on every origin address. h1c on :80, TLS (h1s/h2s, ALPN
# decides) on :443, h2c with prior knowledge on its own port.
PORTS: dict[str, int] = {H1C: 80, H1P: 80, H1S: 443, H2S: 443, H2C: 8080, H3: 443}
"""TCP ports, except ``h3``: UDP 443. Servers listen on them, clients fetch from them."""

SCHEMES: dict[str, str] = {
    H1C: "http",
    H1P: "http",
    H2C: "http",
    H1S: "https",
    H2S: "https",
    H3: "https",
}
_DEFAULT_PORTS = {"http": 80, "https": 443}


class Locatable(Protocol):
    """What has a URL per scheme and port (a page's resource, :class:`h2lab.pages.Resource`)."""

    def url(self, scheme: str = "https", port: int | None = None) -> str: ...


def url_for(res: Locatable, protocol: str) -> str:
    """The URL a client fetches ``res`` at over ``protocol`` (the port only where it is not
    the scheme's default: h2c's 8080)."""
    scheme, port = SCHEMES[protocol], PORTS[protocol]
    return res.url(scheme, None if port == _DEFAULT_PORTS[scheme] else port)
