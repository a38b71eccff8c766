"""Replay serving: nginx serves a manifest page by method + URL, exact first, then by path,
with the recorded status, content type and kept headers, and logs what it could not serve."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from h2lab.net.lab import Lab
from h2lab.pages import Page
from h2lab.pages.manifest import PageWriter
from h2lab.servers import ServeContext
from h2lab.servers import get as get_server
from h2lab.servers.nginx import UNSERVED_LOG
from h2lab.spec.network import parse_network
from h2lab.spec.tcp import TcpSettings

HOST = "www.example.org"
CDN = "static.cdn.example.net"


@pytest.fixture
def page(tmp_path: Path) -> Page:
    with PageWriter("replay-test", root=tmp_path / "pages") as w:
        w.add(f"https://{HOST}/", b"<html>entry</html>", content_type="text/html; charset=utf-8",
              headers=[("Cache-Control", "max-age=60"), ("Strict-Transport-Security", "x"),
                       ("Link", '<a$b>; rel="x"')])  # fmt: skip
        w.add(f"https://{HOST}/q?a=1", b"first", content_type="text/plain")
        w.add(f"https://{HOST}/q?a=2", b"second", content_type="text/plain")
        w.add(f"https://{HOST}/old", None, content_type="text/html", status=301,
              headers=[("Location", f"https://{HOST}/")])  # fmt: skip
        w.add(f"https://{HOST}/beacon", None, content_type="text/plain", status=204)
        w.add(f"https://{CDN}/a%20b.js", b"var x;", content_type="application/javascript")
        return w.commit(f"https://{HOST}/")


def _curl(ns: str, ip: str, url: str) -> tuple[str, bytes]:
    host = url.split("/")[2]
    argv = ["ip", "netns", "exec", ns, "curl", "-sk", "-D", "-", "--resolve", f"{host}:443:{ip}",
            "--resolve", f"{host}:80:{ip}", url]  # fmt: skip
    out = subprocess.run(argv, capture_output=True, timeout=10, check=True).stdout
    head, _, body = out.partition(b"\r\n\r\n")
    return head.decode().lower(), body


def test_nginx_replays_status_headers_and_query_fallback(page: Page, tmp_path: Path) -> None:
    with Lab(page.origins) as lab:
        ctx = ServeContext(
            lab.servers_ns, lab.origin_ips, lab.state_dir / "srv", lab.state_dir / "tls"
        )
        with (
            get_server("nginx").serve(page, ctx),
            lab.link(parse_network("rtt=2ms"), 1, TcpSettings()) as link,
        ):
            ip, cdn_ip = lab.origin_ips[HOST], lab.origin_ips[CDN]

            def get(url: str, via: str = ip) -> tuple[str, bytes]:
                return _curl(link.client_ns, via, url)

            head, body = get(f"https://{HOST}/")
            assert head.startswith("http/2 200") and body == b"<html>entry</html>"
            assert "content-type: text/html; charset=utf-8" in head
            assert "cache-control: max-age=60" in head
            assert 'link: <a$b>; rel="x"' in head  # a $ in a header value is not a variable
            assert "strict-transport-security" not in head  # dropped on import
            assert get(f"https://{HOST}/q?a=2")[1] == b"second"  # exact match
            assert get(f"https://{HOST}/q?a=9")[1] == b"first"  # best match on path
            head, _ = get(f"http://{HOST}/old")
            assert head.startswith("http/1.1 301") and f"location: https://{HOST}/" in head
            assert get(f"https://{HOST}/beacon")[0].startswith("http/2 204")
            assert get(f"https://{CDN}/a%20b.js", cdn_ip)[1] == b"var x;"
            assert get(f"https://{HOST}/missing?x=1")[0].startswith("http/2 404")
            assert get(f"https://{HOST}/.h2lab/r0")[0].startswith("http/2 404")  # internal only
        unserved = (ctx.state_dir / UNSERVED_LOG).read_text().splitlines()
    assert unserved == [f"GET https://{HOST}/missing?x=1"]
