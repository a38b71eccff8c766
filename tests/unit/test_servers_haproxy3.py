"""haproxy@3.0: TLS and QUIC terminated per origin, every request to the backend over h2c."""

from __future__ import annotations

from pathlib import Path

import pytest

from h2lab.errors import SpecError
from h2lab.servers import get as get_server
from h2lab.servers import haproxy3
from h2lab.spec.protocols import H3, TCP_PROTOCOLS

IPS = {"a.test": "10.2.0.1", "b.test": "10.2.0.2"}
BACKENDS = {"a.test": "127.100.0.1", "b.test": "127.100.0.2"}


def test_each_origin_gets_its_four_listeners_and_certificate() -> None:
    certs = {h: Path(f"/srv/{h}.pem") for h in IPS}
    conf = haproxy3.render_config(IPS, BACKENDS, certs, "1.2", "/srv/haproxy.pid")
    assert "limited-quic" in conf and "mode http" in conf  # QUIC over OpenSSL's compat layer
    for k, (host, ip) in enumerate(IPS.items(), start=1):
        front = conf[conf.index(f"frontend f{k}") :].split("backend b", 1)[0]
        assert f"bind {ip}:80\n" in front and f"bind {ip}:8080 proto h2" in front
        assert f"bind quic4@{ip}:443 ssl crt /srv/{host}.pem alpn h3" in front
        tcp = f"bind {ip}:443 ssl crt /srv/{host}.pem ssl-min-ver TLSv1.2 ssl-max-ver TLSv1.2"
        assert f"{tcp} alpn h2,http/1.1" in front
        assert f"server backend {BACKENDS[host]}:8080 proto h2" in conf
    assert conf.count("frontend ") == len(IPS)


def test_cc_sets_quic_cc_algo_on_every_quic_listener() -> None:
    certs = {h: Path(f"/srv/{h}.pem") for h in IPS}
    conf = haproxy3.render_config(IPS, BACKENDS, certs, "1.3", "/p", quic_cc="newreno")
    assert conf.count("alpn h3 quic-cc-algo newreno\n") == len(IPS)
    assert "quic-cc-algo" not in haproxy3.render_config(IPS, BACKENDS, certs, "1.3", "/p")
    server = get_server("haproxy@3.0:backend=nginx,cc=cubic")
    assert isinstance(server, haproxy3.Haproxy3) and server.quic_cc == "cubic"


def test_the_level_serves_h3_and_forwards_over_h2c() -> None:
    server = get_server("haproxy@3.0:backend=nginx")
    assert server.name == "haproxy@3.0" and server.protocols == TCP_PROTOCOLS | {H3}


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ("haproxy@3.0", "haproxy@3.0 needs backend="),
        ("haproxy@3.0:backend=nginx,buffer=1MB", r"no option 'buffer' \(haproxy@3.0 takes"),
        ("haproxy@3.0:backend=haproxy@3.0", "cannot have HAProxy as its backend"),
        ("haproxy@3.0:backend=nosuch", "unknown server 'nosuch'"),
        ("haproxy@3.0:backend=nginx,cc=bbr", "cc: expected one of cubic, newreno, got 'bbr'"),
    ],
)
def test_bad_specs_name_the_reason(spec: str, reason: str) -> None:
    with pytest.raises(SpecError, match=reason):
        get_server(spec)
