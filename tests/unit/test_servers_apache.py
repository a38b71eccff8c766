"""h2lab.servers.apache: the generated apache2.conf and RewriteMaps, quoting, options."""

from __future__ import annotations

from pathlib import Path

import pytest

from h2lab.errors import SpecError
from h2lab.pages import Page
from h2lab.pages.manifest import PageWriter
from h2lab.servers import ServeContext
from h2lab.servers import get as get_server
from h2lab.servers.apache import copy_bodies, header_value, quote, render_config, render_maps
from h2lab.tls import LocalCA

HOST = "www.example.org"
CDN = "static.cdn.example.net"
TOKEN = "0123456789abcdef"


@pytest.fixture
def page(tmp_path: Path) -> Page:
    with PageWriter("replay-test", root=tmp_path / "pages") as w:
        w.add(f"https://{HOST}/", b"<html>entry</html>", content_type="text/html; charset=utf-8",
              headers=[("Cache-Control", "max-age=60"), ("Link", '<a$b%20>; rel="x"')])  # fmt: skip
        w.add(f"https://{HOST}/q?a=1", b"first", content_type="text/plain")
        w.add(f"https://{HOST}/q?a=2", b"second", content_type="text/plain")
        w.add(f"https://{HOST}/old", None, content_type="text/html", status=301,
              headers=[("Location", f"https://{HOST}/")])  # fmt: skip
        w.add(f"https://{HOST}/beacon", None, content_type="text/plain", status=204)
        w.add(f"https://{CDN}/a%20b.js", b"var x;", content_type="application/javascript")
        return w.commit(f"https://{HOST}/")


@pytest.fixture
def ctx(tmp_path: Path, page: Page) -> ServeContext:
    ips = {h: f"10.2.0.{i + 1}" for i, h in enumerate(page.origins)}
    return ServeContext("h2lab-x-servers", ips, tmp_path / "srv", tmp_path / "tls")


def test_quoting_keeps_dollars_quotes_and_percents_literal() -> None:
    assert quote('a"b$c') == '"a\\"b${h2lab_dollar}c"'
    assert header_value("<a%20>") == '"<a%%20>"'


def test_maps_key_exact_requests_and_first_resource_per_path(page: Page) -> None:
    exact, by_path = render_maps(page)
    assert exact.splitlines() == [
        "GET:www.example.org/ 0",
        "GET:www.example.org/q?a=1 1",
        "GET:www.example.org/q?a=2 2",
        "GET:www.example.org/old 3",
        "GET:www.example.org/beacon 4",
        "GET:static.cdn.example.net/a%20b.js 5",
    ]
    assert "www.example.org/q 1" in by_path.splitlines()
    assert "www.example.org/q 2" not in by_path.splitlines()


def test_config_has_three_vhosts_per_origin_with_their_protocols(
    page: Page, ctx: ServeContext
) -> None:
    conf = render_config(page, ctx, LocalCA(ctx.tls_dir), TOKEN)
    for host, ip in ctx.origin_ips.items():
        for port, protocols in ((80, "http/1.1"), (8080, "h2c http/1.1"), (443, "h2 http/1.1")):
            assert f"Listen {ip}:{port}\n" in conf
            vhost = conf.split(f"<VirtualHost {ip}:{port}>\n", 1)[1].split("</VirtualHost>")[0]
            assert f"ServerName {host}\n    Protocols {protocols}\n" in vhost
            assert ("SSLEngine on" in vhost) == (port == 443)
            scheme = "https" if port == 443 else "http"
            assert f'"%m {scheme}://%{{h2lab_host}}e%{{h2lab_target}}e" env=h2lab_target' in vhost
        assert f'SSLCertificateFile "{ctx.tls_dir / host}.pem"' in conf
    assert "H2MaxSessionStreams 1000" in conf and "H2Push off" in conf
    assert "SSLSessionTickets off" in conf and "deflate" not in conf


def test_config_has_a_location_per_resource_with_status_type_and_headers(
    page: Page, ctx: ServeContext
) -> None:
    conf = render_config(page, ctx, LocalCA(ctx.tls_dir), TOKEN)
    bodies = ctx.state_dir / "apache-bodies"

    def location(i: int) -> str:
        return conf.split(f'<Location "/.h2lab/{TOKEN}/r{i}">\n', 1)[1].split("</Location>")[0]

    sha = page.resources[0].body_sha256
    assert sha is not None
    assert f'Alias "/.h2lab/{TOKEN}/r0" "{bodies / sha}"' in conf
    assert 'ForceType "text/html; charset=utf-8"' in location(0)
    assert 'Header always add cache-control "max-age=60"' in location(0)
    assert 'Header always add link "<a${h2lab_dollar}b%%20>; rel=\\"x\\""' in location(0)
    assert f'Redirect 301 "https://{HOST}/"' in location(3)
    assert location(4).strip() == "Redirect 204"
    assert f'Alias "/.h2lab/{TOKEN}/r3"' not in conf


def test_bodies_are_copied_or_linked_where_apache_can_read_them(page: Page, tmp_path: Path) -> None:
    copy_bodies(page, tmp_path / "b")
    for r in page.resources:
        if r.body_sha256 is not None:
            f = tmp_path / "b" / r.body_sha256
            assert f.read_bytes() == page.body_file(r).read_bytes()
            assert f.stat().st_mode & 0o004


@pytest.fixture
def styled(tmp_path: Path) -> Page:
    html = b'<html><link rel="stylesheet" href="/b.css"><link rel="stylesheet" href="/a.css">'
    with PageWriter("styled", root=tmp_path / "pages") as w:
        w.add(f"https://{HOST}/", html, content_type="text/html")
        for path, ct in [
            ("/a.css", "text/css"),
            ("/b.css", "text/css; charset=utf-8"),
            ("/x.js", "text/javascript"),
            ("/i.png", "image/png"),
            ("/f.woff2", "font/woff2"),
            ("/d.json", "application/json"),
        ]:
            w.add(f"https://{HOST}{path}", b"body", content_type=ct)  # fmt: skip
        w.add(f"https://{CDN}/c.png", b"cdn", content_type="image/png")
        return w.commit(f"https://{HOST}/")


def _entry_location(conf: str) -> str:
    return conf.split(f'<Location "/.h2lab/{TOKEN}/r0">\n', 1)[1].split("</Location>")[0]


@pytest.mark.parametrize(
    ("rule", "pushed"),
    [
        ("critical-css", ["/b.css"]),  # the first stylesheet the entry links to
        ("css-js", ["/a.css", "/b.css", "/x.js"]),
        ("images", ["/i.png"]),  # not the CDN's: push is per origin
        ("all", ["/a.css", "/b.css", "/x.js", "/i.png", "/f.woff2", "/d.json"]),
    ],
)
def test_push_rule_turns_push_on_and_names_the_entry_resources(
    styled: Page, tmp_path: Path, rule: str, pushed: list[str]
) -> None:
    ctx = ServeContext("h2lab-x-servers", {HOST: "10.2.0.1", CDN: "10.2.0.2"}, tmp_path / "s",
                       tmp_path / "tls")  # fmt: skip
    conf = render_config(styled, ctx, LocalCA(ctx.tls_dir), TOKEN, push=rule)
    entry = _entry_location(conf)
    assert "\nH2Push on\n" in conf  # mod_http2 reads it per server only
    assert [line.split('"')[1] for line in entry.splitlines() if "H2PushResource" in line] == pushed
    assert "H2EarlyHint " not in conf and "H2EarlyHints off" in conf


def test_early_hints_rule_adds_preload_links_with_their_destination(
    styled: Page, tmp_path: Path
) -> None:
    ctx = ServeContext("h2lab-x-servers", {HOST: "10.2.0.1", CDN: "10.2.0.2"}, tmp_path / "s",
                       tmp_path / "tls")  # fmt: skip
    conf = render_config(styled, ctx, LocalCA(ctx.tls_dir), TOKEN, hints="all")
    hints = [line for line in _entry_location(conf).splitlines() if "H2EarlyHint " in line]
    assert hints == [
        '    H2EarlyHint Link "</a.css>; rel=preload; as=style"',
        '    H2EarlyHint Link "</b.css>; rel=preload; as=style"',
        '    H2EarlyHint Link "</x.js>; rel=preload; as=script"',
        '    H2EarlyHint Link "</i.png>; rel=preload; as=image"',
        '    H2EarlyHint Link "</f.woff2>; rel=preload; as=font; crossorigin"',
        '    H2EarlyHint Link "</d.json>; rel=preload; as=fetch; crossorigin"',
    ]
    assert "H2EarlyHints on" in conf and "H2PushResource" not in conf and "\nH2Push off\n" in conf


def test_options_are_parsed_and_unknown_ones_rejected() -> None:
    assert get_server("apache").protocols >= {"h1c", "h1s", "h2s", "h2c"}
    assert get_server("apache:push=css-js,early_hints=critical-css") is not None
    with pytest.raises(SpecError, match=r"no option 'scheduler' \(apache takes: push"):
        get_server("apache:scheduler=rr")
    with pytest.raises(SpecError, match="expected one of none, critical-css"):
        get_server("apache:push=sometimes")


def test_closest_query_rules_sit_between_exact_and_path_in_the_hosts_vhosts(
    page: Page, ctx: ServeContext
) -> None:
    conf = render_config(page, ctx, LocalCA(ctx.tls_dir), TOKEN)
    vhost = conf.split(f"<VirtualHost {ctx.origin_ips[HOST]}:443>\n", 1)[1]
    vhost = vhost.split("</VirtualHost>")[0]
    rules = [line.strip() for line in vhost.splitlines() if "\\x" in line or "[PT,L]" in line]
    q = r"GET\x20\x2Fq"
    assert rules == [
        f'RewriteRule ^ "/.h2lab/{TOKEN}/r%1" [PT,L]',  # exact
        f'RewriteCond %{{THE_REQUEST}} "^{q}\\x3Fa\\x3D2"',
        f'RewriteRule ^ "/.h2lab/{TOKEN}/r2" [PT,L]',
        f'RewriteCond %{{THE_REQUEST}} "^{q}(\\x3F|\\x20)"',
        f'RewriteRule ^ "/.h2lab/{TOKEN}/r1" [PT,L]',
        f'RewriteRule ^ "/.h2lab/{TOKEN}/r%1" [PT,L]',  # by path
    ]
    cdn = conf.split(f"<VirtualHost {ctx.origin_ips[CDN]}:443>\n", 1)[1].split("</VirtualHost>")[0]
    assert r"\x3F" not in cdn  # one resource per path there: by path answers
