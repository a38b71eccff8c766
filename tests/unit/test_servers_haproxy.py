"""h2lab.servers.haproxy: options, buffer tuning and the generated haproxy.cfg (pure parts)."""

from __future__ import annotations

import pytest

from h2lab.errors import SpecError
from h2lab.servers import get
from h2lab.servers.haproxy import (
    SOURCE_IP,
    Haproxy,
    Tuning,
    backend_ips,
    parse_buffer,
    render_config,
)


def test_buffer_sizes_split_between_haproxy_buffer_and_receive_socket() -> None:
    assert parse_buffer("none") is None
    assert parse_buffer("1MB") == Tuning(1_000_000, 500_000, 250_000)
    assert parse_buffer("64KiB") == Tuning(65536, 32768, 16384)


@pytest.mark.parametrize("text", ["big", "1Mbps", "-1MB", "1KB", "0"])
def test_bad_buffer_is_rejected(text: str) -> None:
    with pytest.raises(ValueError, match=r"\(or none\)$|^must be none or at least 4096 B"):
        parse_buffer(text)


def test_spec_parses_backend_and_buffer() -> None:
    s = get("haproxy:backend=nginx,buffer=64KB")
    assert isinstance(s, Haproxy) and s.backend.name == "nginx" and s.backend_spec == "nginx"
    assert s.tuning == Tuning(64000, 32000, 16000)
    assert "h1s" in s.protocols and "h2s" in s.protocols and "h3" not in s.protocols


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("haproxy:backend=nginx", "haproxy needs buffer="),
        ("haproxy:buffer=1MB", "haproxy needs backend="),
        ("haproxy:backend=nginx,buffer=1MB,mode=http", "no option 'mode'"),
        ("haproxy:backend=nosuch,buffer=1MB", "unknown server 'nosuch'"),
        ("haproxy:backend=haproxy,buffer=1MB", "its own backend"),
        (
            "haproxy:backend=nginx:x=1;y=2,buffer=1MB",
            r"backend: nginx:x=1,y=2: no option 'x' \(nginx takes: conf\)",
        ),
    ],
)
def test_bad_specs(spec: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        get(spec)


def test_backend_addresses_are_loopback_per_origin() -> None:
    assert backend_ips(("a.test", "b.test")) == {"a.test": "127.100.0.1", "b.test": "127.100.0.2"}
    with pytest.raises(ValueError):
        backend_ips(tuple(f"o{i}" for i in range(255)))


def test_config_forwards_every_origin_port_in_tcp_mode() -> None:
    cfg = render_config(
        {"a.test": "10.2.0.1", "b.test": "10.2.0.2"},
        {"a.test": "127.100.0.1", "b.test": "127.100.0.2"},
        Tuning.for_buffer(1_000_000),
        "/run/x/haproxy.pid",
    )
    assert "tune.bufsize 500000\n" in cfg and "tune.rcvbuf.server 250000\n" in cfg
    assert "    mode tcp\n" in cfg and f"    source {SOURCE_IP}\n" in cfg
    assert "sndbuf" not in cfg  # the client-side socket autotunes, as without HAProxy
    for ip, backend in (("10.2.0.1", "127.100.0.1"), ("10.2.0.2", "127.100.0.2")):
        for port in (80, 443, 8080):
            assert f"    bind {ip}:{port}\n    server backend {backend}:{port}" in cfg
    assert cfg.count("\nlisten ") == 6
