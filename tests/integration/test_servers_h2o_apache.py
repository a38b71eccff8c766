"""h2o, Apache and Caddy serve a manifest page as nginx does (tests/integration/test_replay.py): by
method + URL, exact first, then by path, with the recorded status, content type and kept
headers, logging what they could not serve; and h2load fetches every byte of a synthetic page
over each protocol the server lists."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from h2lab.clients import LoadContext
from h2lab.clients import get as get_client
from h2lab.net.check.estimators import rtt_tolerance_ms
from h2lab.net.lab import Lab
from h2lab.pages import Page, resolve_page
from h2lab.pages.manifest import PageWriter
from h2lab.servers import ServeContext
from h2lab.servers import get as get_server
from h2lab.spec.network import parse_network
from h2lab.spec.protocols import TLS_OVER_TCP
from h2lab.spec.tcp import TcpSettings

HOST = "www.example.org"
CDN = "static.cdn.example.net"
SERVERS = ["h2o", "apache", "caddy"]


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


def _curl(ns: str, ip: str, url: str, *extra: str) -> tuple[str, bytes]:
    host = url.split("/")[2].split(":")[0]
    resolve = [a for port in (80, 443, 8080) for a in ("--resolve", f"{host}:{port}:{ip}")]
    argv = ["ip", "netns", "exec", ns, "curl", "-sk", "-D", "-", *resolve, *extra, url]
    out = subprocess.run(argv, capture_output=True, timeout=10, check=True).stdout
    head, _, body = out.partition(b"\r\n\r\n")
    return head.decode().lower(), body


def _ctx(lab: Lab) -> ServeContext:
    return ServeContext(
        lab.servers_ns, lab.origin_ips, lab.state_dir / "srv", lab.state_dir / "tls"
    )


@pytest.mark.parametrize("server", SERVERS)
def test_replays_status_headers_and_query_fallback(server: str, page: Page) -> None:
    with Lab(page.origins) as lab:
        ctx = _ctx(lab)
        adapter = get_server(server)
        with (
            adapter.serve(page, ctx),
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
            assert "content-encoding" not in head and "etag" not in head
            assert get(f"https://{HOST}/q?a=2")[1] == b"second"  # exact match
            assert get(f"https://{HOST}/q?a=9")[1] == b"first"  # best match on path
            head, body = get(f"http://{HOST}/q?a=1")
            assert head.startswith("http/1.1 200") and body == b"first"
            head, _ = get(f"http://{HOST}/old")
            assert head.startswith("http/1.1 301") and f"location: https://{HOST}/" in head
            assert get(f"https://{HOST}/beacon")[0].startswith("http/2 204")
            assert get(f"https://{CDN}/a%20b.js", cdn_ip)[1] == b"var x;"
            assert get(f"https://{HOST}/missing?x=1")[0].startswith("http/2 404")
            assert get(f"https://{HOST}/.h2lab/r0")[0].startswith("http/2 404")  # internal only
            if "h2c" in adapter.protocols:
                head, body = _curl(link.client_ns, ip, f"http://{HOST}:8080/q?a=2",
                                   "--http2-prior-knowledge")  # fmt: skip
                assert head.startswith("http/2 200") and body == b"second"
            head, _ = _curl(link.client_ns, ip, f"https://{HOST}/", "--http1.1")
            assert head.startswith("http/1.1 200")  # ALPN http/1.1 on the same port
        unserved = (ctx.state_dir / "unserved.log").read_text().splitlines()
    assert unserved == [f"GET https://{HOST}/missing?x=1"]


@pytest.mark.parametrize("server", SERVERS)
def test_h2load_fetches_every_byte_over_each_protocol(server: str, tmp_path: Path) -> None:
    """Every body byte, and h2load's own handshake and first-byte times: the connection is set
    up after the TCP handshake (one round trip) and, for TLS 1.3 (the default ``tls``), one
    more; its first body byte comes at least a request's round trip later."""
    rtt_ms = 10.0
    # one round trip as short as the lab's fidelity target allows (issue #3)
    least_rtt_ms = rtt_ms - rtt_tolerance_ms(rtt_ms)
    page = resolve_page("synthetic:n=8,size=10KB,origins=2")
    adapter = get_server(server)
    protocols = [p for p in ("h1c", "h1p", "h1s", "h2s", "h2c") if p in adapter.protocols]
    assert {"h1c", "h1s", "h2s"} <= set(protocols)
    with Lab(page.origins) as lab:
        ctx = _ctx(lab)
        with (
            adapter.serve(page, ctx),
            lab.link(parse_network(f"rtt={rtt_ms:g}ms"), 1, TcpSettings()) as link,
        ):
            for proto in protocols:
                out = tmp_path / proto
                out.mkdir()
                ctx_load = LoadContext(link.client_ns, out, 30)
                result = get_client("h2load").load(page, proto, ctx_load)
                print(f"{server} {proto}: {result.body_bytes} body bytes, connect "
                      f"{result.connect_ms} ms, first byte {result.ttfb_ms} ms")  # fmt: skip
                assert result.body_bytes == page.total_body_bytes, proto
                assert result.connect_ms is not None and result.ttfb_ms is not None, proto
                handshakes = 2 if proto in TLS_OVER_TCP else 1  # TCP, then TLS 1.3
                assert result.connect_ms >= handshakes * least_rtt_ms, proto
                assert result.ttfb_ms >= result.connect_ms + least_rtt_ms, proto
        assert (ctx.state_dir / "unserved.log").read_text() == ""


def test_h2o_pushes_what_its_push_rule_names() -> None:
    page = resolve_page("synthetic:n=4,size=1KB,origins=1")
    host = page.origins[0]
    with Lab(page.origins) as lab:
        ctx = _ctx(lab)
        with (
            get_server("h2o:push=all").serve(page, ctx),
            lab.link(parse_network("rtt=2ms"), 1, TcpSettings()) as link,
        ):
            argv = ["ip", "netns", "exec", link.client_ns, "nghttp", "-nv",
                    f"https://{host}{page.entry.target}"]  # fmt: skip
            out = subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout
    pushed = out.count("recv PUSH_PROMISE")
    print(f"h2o push=all: {pushed} pushed of {len(page.resources) - 1}")
    assert pushed == len(page.resources) - 1


def test_apache_pushes_and_hints_what_its_rules_name() -> None:
    """Seed 000 Fig. 6 used Apache: push=css-js makes mod_http2 push the stylesheets and the
    script of the entry (nghttp sees a PUSH_PROMISE for each); early_hints=images sends a 103
    naming each image, and nothing else, before the HTML's 200."""
    page = resolve_page("synthetic:mix:css=2/4KB,js=1/2KB,img=2/4KB")
    host, entry = page.origins[0], page.entry.target
    by_class = {c: sorted(r.target for r in page.resources if r.target.startswith(f"/{c}/"))
                for c in ("css", "js", "img")}  # fmt: skip
    with Lab(page.origins) as lab:
        ip = lab.origin_ips[host]
        with lab.link(parse_network("rtt=2ms"), 1, TcpSettings()) as link:
            ns = ["ip", "netns", "exec", link.client_ns]
            with get_server("apache:push=css-js").serve(page, _ctx(lab)):
                nghttp = [*ns, "nghttp", "-nv", f"https://{host}{entry}"]
                out = subprocess.run(nghttp, capture_output=True, text=True, timeout=10).stdout
            with get_server("apache:early_hints=images").serve(page, _ctx(lab)):
                curl = [*ns, "curl", "-sk", "--http2", "-D", "-", "-o", "/dev/null",
                        "--resolve", f"{host}:443:{ip}", f"https://{host}{entry}"]  # fmt: skip
                head = subprocess.run(curl, capture_output=True, text=True, timeout=10).stdout
    promised = sorted(re.findall(r"recv \(stream_id=\d+\) :path: (\S+)", out))
    hints, final = re.split(r"\r?\n\r?\n", head.lower(), maxsplit=1)
    print(f"apache push=css-js: promised {promised}; early_hints=images: {hints.splitlines()}")
    assert promised == by_class["css"] + by_class["js"]
    assert hints.startswith("http/2 103")
    assert re.findall(r"<([^>]+)>; rel=preload; as=image", hints) == by_class["img"]
    assert hints.count("rel=preload") == len(by_class["img"])
    assert final.startswith("http/2 200") and "link:" not in final
