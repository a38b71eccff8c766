"""h2lab.net.addresses and its users: an origin named by an IPv4 literal is served at that
address, with an IP SAN; the lab's own ranges and unownable addresses are refused by name."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
from cryptography import x509

from h2lab.errors import SpecError
from h2lab.net.addresses import ip_literal, why_not_servable
from h2lab.pages.importers.common import check_url
from h2lab.tls import LocalCA


@pytest.mark.parametrize(
    ("host", "why"),
    [
        ("66.102.1.1", None),
        ("192.168.1.20", None),
        ("10.2.0.3", "an address the lab uses itself"),
        ("10.1.1.2", "an address the lab uses itself"),
        ("127.0.0.1", "a loopback address"),
        ("0.0.0.0", "the unspecified address"),
        ("224.0.0.1", "a multicast address"),
        ("169.254.1.1", "a link-local address"),
        ("255.255.255.255", "the broadcast address"),
        ("::1", "an IPv6 literal: the lab runs IPv4 only"),
        ("2001:db8::1", "an IPv6 literal: the lab runs IPv4 only"),
    ],
)
def test_which_literals_the_lab_serves(host: str, why: str | None) -> None:
    ip = ip_literal(host)
    assert ip is not None
    assert why_not_servable(ip) == why


def test_names_are_not_literals() -> None:
    assert ip_literal("www.h2lab.test") is None
    assert ip_literal("1.2.3") is None


def test_urls_with_literals() -> None:
    assert check_url("http://66.102.1.1/beacon?x=1#f", "f", "url") == "http://66.102.1.1/beacon?x=1"
    with pytest.raises(SpecError, match=r"host ::1 cannot be an origin: an IPv6 literal"):
        check_url("https://[::1]:8443/x", "f", "url")
    with pytest.raises(SpecError, match=r"host 10.2.0.1 cannot be an origin: an address the lab"):
        check_url("https://10.2.0.1/", "f", "url")
    with pytest.raises(SpecError, match=r"not a valid hostname"):
        check_url("https://bad_host-.test/", "f", "url")


def test_a_literal_origin_gets_an_ip_san(tmp_path: Path) -> None:
    ca = LocalCA(tmp_path)
    for host, want in (("66.102.1.1", x509.IPAddress(ipaddress.ip_address("66.102.1.1"))),
                       ("www.h2lab.test", x509.DNSName("www.h2lab.test"))):  # fmt: skip
        pair = ca.leaf(host)
        cert = x509.load_pem_x509_certificate(pair.cert.read_bytes())
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert list(sans) == [want]
