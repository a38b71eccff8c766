"""Protocol names (DESIGN.md's vocabulary), defined once: experiments, adapters and the
analysis take their lists from here."""

from __future__ import annotations

H1C = "h1c"
"""HTTP/1.1 cleartext"""
H1P = "h1p"
"""HTTP/1.1 cleartext, pipelined (load clients only)"""
H1S = "h1s"
"""HTTP/1.1 over TLS"""
H2C = "h2c"
"""HTTP/2 cleartext, prior knowledge"""
H2S = "h2s"
"""HTTP/2 over TLS (ALPN)"""
H3 = "h3"
"""HTTP/3 over QUIC"""

PROTOCOLS = (H1C, H1P, H1S, H2C, H2S, H3)
"""Every protocol an experiment may name."""
CLEARTEXT_TCP = frozenset({H1C, H1P, H2C})
TLS_OVER_TCP = frozenset({H1S, H2S})
"""The protocols whose TLS version is a factor (``tls``); QUIC is always TLS 1.3."""
QUIC = frozenset({H3})
TCP_PROTOCOLS = CLEARTEXT_TCP | TLS_OVER_TCP

TLS_VERSIONS = ("1.2", "1.3")
"""The TLS versions a trial may use over TCP (the ``tls`` factor)."""
