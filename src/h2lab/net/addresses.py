"""Which addresses an origin may have in the lab.

A recorded page may name an origin by an IP literal (``http://66.102.1.1/beacon``). The lab
serves it at that address: the servers namespace gets it on its loopback beside the named
origins' ``10.2.0.k``, its certificate carries an IP SAN, and the client reaches it by routing
(Rattan's client namespace has a default route through the link), with no resolver rule. The
address never leaves the lab's namespaces, so a private or public address is as safe as any.

Refused, with the reason: the lab's own ranges (:data:`LAB_NETS`: Rattan's veth pairs and the
named origins), and addresses no server can own (loopback, unspecified, multicast, link-local,
broadcast). IPv6 literals are parsed (``[2001:db8::1]`` in a URL is the host ``2001:db8::1``)
but not served: the lab's namespaces run IPv4 only (:func:`h2lab.net.lab.quiet_ipv6`).
"""

from __future__ import annotations

import ipaddress
import re

LAB_NETS = (ipaddress.ip_network("10.1.0.0/16"), ipaddress.ip_network("10.2.0.0/16"))
"""Rattan's client side (10.1.<pair>.x), its servers side and the named origins (10.2.x.x)."""

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def ip_literal(host: str) -> IPAddress | None:
    """The address when ``host`` (a URL's hostname, brackets already off) is an IP literal."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def why_not_servable(ip: IPAddress) -> str | None:
    """None when the lab can serve an origin at ``ip``; else why not."""
    if ip.version == 6:
        return "an IPv6 literal: the lab runs IPv4 only"
    kinds = (
        (ip.is_loopback, "a loopback address"),
        (ip.is_unspecified, "the unspecified address"),
        (ip.is_multicast, "a multicast address"),
        (ip.is_link_local, "a link-local address"),
        (ip == ipaddress.IPv4Address("255.255.255.255"), "the broadcast address"),
        (ip.is_reserved, "a reserved address"),
        (any(ip in net for net in LAB_NETS), "an address the lab uses itself"),
    )
    return next((why for hit, why in kinds if hit), None)


_LABEL_RE = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)")  # fullmatch: "$" would pass a final "\n"


def valid_hostname(host: str) -> bool:
    """A DNS name the lab can give its own address and certificate: ASCII labels of letters,
    digits, ``-`` (not at either end) and ``_`` (seen on real CDN hosts), at most 253 characters,
    a last label that is not all digits (so no IPv4 literal; IPv6 literals have colons)."""
    if not host or len(host) > 253:
        return False
    labels = host.split(".")
    return all(_LABEL_RE.fullmatch(label) for label in labels) and not labels[-1].isdigit()
