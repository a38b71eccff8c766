"""nginx@1.26 (Debian 13's build): HTTP/3 on UDP 443 beside today's listeners, TLS 1.3 there
whatever the trial's version; Debian 12's nginx stays as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from h2lab.pages import Page
from h2lab.pages.manifest import PageWriter
from h2lab.servers import ServeContext, nginx
from h2lab.servers import get as get_server
from h2lab.spec.protocols import H3, TCP_PROTOCOLS
from h2lab.tls import LocalCA

HOSTS = ("a.example.org", "b.example.org")


@pytest.fixture
def page(tmp_path: Path) -> Page:
    with PageWriter("h3-test", root=tmp_path / "pages") as w:
        w.add(f"https://{HOSTS[0]}/", b"<html></html>", content_type="text/html")
        w.add(f"https://{HOSTS[1]}/a.css", b"a{}", content_type="text/css")
        return w.commit()


def _ctx(tmp_path: Path, tls: str) -> ServeContext:
    ips = {HOSTS[0]: "10.2.0.1", HOSTS[1]: "10.2.0.2"}
    return ServeContext("h2lab-x-servers", ips, tmp_path / "srv", tmp_path / "tls", tls)


def test_h3_adds_a_quic_server_per_origin_with_tls_13(page: Page, tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, "1.2")
    conf = nginx.render_config(page, ctx, LocalCA(ctx.tls_dir), h3=True)
    for host, ip in ctx.origin_ips.items():
        assert f"listen {ip}:443 quic reuseport;" in conf
        assert f"listen {ip}:443 ssl http2 reuseport;" in conf
        quic = conf[conf.index(f"listen {ip}:443 quic") :].split("    server {", 1)[0]
        assert f"server_name {host};" in quic and "ssl_protocols TLSv1.3;" in quic
        assert f"ssl_certificate {LocalCA(ctx.tls_dir).leaf(host).cert};" in quic
    assert conf.count(" quic reuseport;") == 2
    assert "ssl_protocols TLSv1.2;" in conf  # TCP keeps the trial's version
    assert "http3_max_concurrent_streams 1000;" in conf
    plain = nginx.render_config(page, ctx, LocalCA(ctx.tls_dir))
    assert " quic " not in plain and "http3" not in plain


def test_the_server_level_names_the_build_and_its_protocols() -> None:
    old, new = get_server("nginx"), get_server("nginx@1.26")
    assert (old.name, new.name) == ("nginx", "nginx@1.26")
    assert old.protocols == TCP_PROTOCOLS and new.protocols == TCP_PROTOCOLS | {H3}


def test_an_uninstalled_build_says_so_as_its_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("H2LAB_CACHE", str(tmp_path))
    assert get_server("nginx@1.26").version() == "not installed"


def test_alt_svc_discovery_advertises_h3_on_every_resource(page: Page, tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, "1.3")
    header = 'add_header alt-svc "h3=\\":443\\"; ma=86400" always;'
    plain = nginx.render_config(page, ctx, LocalCA(ctx.tls_dir), h3=True)
    assert "alt-svc" not in plain  # no server of the lab sends one unless asked
    every = frozenset(page.origins)
    ctx = ServeContext(ctx.netns, ctx.origin_ips, ctx.state_dir, ctx.tls_dir, alt_svc=every)
    conf = nginx.render_config(page, ctx, LocalCA(ctx.tls_dir), h3=True)
    # in each resource's location (one per origin here), in its TCP and its QUIC server block:
    # a location's add_header hides the server block's
    assert conf.count(header) == 2 * len(page.resources)
    # h3_origins: only the origins that speak h3 advertise it
    first = frozenset({page.entry.origin})
    ctx = ServeContext(ctx.netns, ctx.origin_ips, ctx.state_dir, ctx.tls_dir, alt_svc=first)
    conf = nginx.render_config(page, ctx, LocalCA(ctx.tls_dir), h3=True)
    mine = sum(r.origin == page.entry.origin for r in page.resources)
    assert 0 < mine < len(page.resources) and conf.count(header) == 2 * mine
    assert get_server("nginx@1.26").discoveries == {"forced", "alt-svc", "https-rr", "udp-blocked"}
    assert get_server("nginx").discoveries == {"forced"}  # no h3 to advertise
