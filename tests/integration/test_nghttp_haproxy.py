"""nghttp loads whole pages (assets, pushes); HAProxy in TCP mode forwards every protocol and
its buffer hides the server's priorities (seed 003)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from h2lab.clients import LoadContext, LoadResult
from h2lab.clients import get as get_client
from h2lab.net.lab import Lab
from h2lab.pages import Page, resolve_page
from h2lab.pages.manifest import PageWriter
from h2lab.servers import ServeContext
from h2lab.servers import get as get_server
from h2lab.spec.network import parse_network
from h2lab.spec.tcp import TcpSettings

HOST = "o1.h2lab.test"


def _ctx(lab: Lab) -> ServeContext:
    return ServeContext(
        lab.servers_ns, lab.origin_ips, lab.state_dir / "srv", lab.state_dir / "tls"
    )


def _full(result: LoadResult, page: Page) -> None:
    sizes = sorted((r.url.split("/", 3)[3], r.bytes) for r in result.resources)
    want = sorted((r.path.lstrip("/"), r.size_bytes) for r in page.resources)
    assert sizes == want
    assert result.body_bytes == page.total_body_bytes


def test_nghttp_fetches_two_origin_page_h2s_and_h2c(tmp_path: Path) -> None:
    page = resolve_page("synthetic:n=8,size=10KB,origins=2")
    with Lab(page.origins) as lab:
        profile = parse_network("rtt=20ms,rate=20Mbps")
        with (
            get_server("nginx").serve(page, _ctx(lab)),
            lab.link(profile, 1, TcpSettings()) as link,
        ):
            for protocol in ("h2s", "h2c"):
                ctx = LoadContext(link.client_ns, tmp_path / protocol, 30)
                result = get_client("nghttp").load(page, protocol, ctx)
                print(f"nghttp {protocol}: pdt {result.pdt_ms:.1f} ms, {result.body_bytes} B, "
                      f"request headers {result.request_header_bytes} B")  # fmt: skip
                _full(result, page)
                assert {r.connection for r in result.resources} == {f"{o}#0" for o in page.origins}
                assert all(r.protocol == "h2" and not r.pushed for r in result.resources)
                assert result.request_header_bytes and result.pdt_ms is not None
                assert result.pdt_ms >= 20  # one RTT at least
                index = next(r for r in result.resources if r.url.endswith("/index.html"))
                images = [r for r in result.resources if r.origin == HOST and r is not index]
                if protocol == "h2s":  # -a: the entry's own images wait for the HTML
                    assert index.ttfb_ms is not None
                    assert all(r.start_ms >= index.ttfb_ms - 1 for r in images)


def test_haproxy_forwards_h1s_and_h2s_with_full_bytes(tmp_path: Path) -> None:
    page = resolve_page("synthetic:n=8,size=50KB,origins=2")
    server = get_server("haproxy:backend=nginx,buffer=1MB")
    print(server.version())
    with Lab(page.origins) as lab:
        profile = parse_network("rtt=20ms,rate=20Mbps")
        with server.serve(page, _ctx(lab)), lab.link(profile, 1, TcpSettings()) as link:
            for protocol in ("h1s", "h2s"):
                ctx = LoadContext(link.client_ns, tmp_path / protocol, 30)
                result = get_client("h2load").load(page, protocol, ctx)
                print(f"h2load {protocol} through haproxy: pdt {result.pdt_ms:.1f} ms")
                _full(result, page)
        assert "mode tcp" in (lab.state_dir / "srv" / "haproxy.cfg").read_text()


def _late_css_page(root: Path) -> Page:
    """An image the client asks for with the HTML, and a stylesheet it asks for once the HTML
    has come (one round trip later): seed 003's late CSS behind large images."""
    with PageWriter("seed003-late-css", root=root) as w:
        w.add(f"https://{HOST}/index.html", b'<html><head><link rel="stylesheet" href="/s.css">'
              b"</head><body>x</body></html>", content_type="text/html")  # fmt: skip
        w.add(f"https://{HOST}/big.png", os.urandom(1_000_000), content_type="image/png")
        w.add(f"https://{HOST}/s.css", b"/*" + b"c" * 19_996 + b"*/", content_type="text/css")
        return w.commit(f"https://{HOST}/index.html")


@pytest.mark.alone
def test_haproxy_buffer_holds_back_a_late_high_priority_stylesheet(tmp_path: Path) -> None:
    page = _late_css_page(tmp_path / "pages")
    profile = parse_network("rtt=40ms,rate=10Mbps")
    css_ms: dict[str, float] = {}
    orders: dict[str, list[str]] = {}
    image_share: dict[str, float] = {}  # of the image's transfer time done when the CSS ended
    with Lab(page.origins) as lab:
        for buffer in ("none", "64KB", "1MB"):
            server = get_server(f"haproxy:backend=nginx,buffer={buffer}")
            with server.serve(page, _ctx(lab)), lab.link(profile, 1, TcpSettings()) as link:
                ctx = LoadContext(link.client_ns, tmp_path / buffer, 30)
                result = get_client("nghttp").load(page, "h2s", ctx)
            _full(result, page)
            css = next(r for r in result.resources if r.url.endswith(".css"))
            assert css.priority == "weight=32,dep=3"  # nghttp: CSS above images (weight 12)
            css_ms[buffer] = css.end_ms - css.start_ms
            by_end = sorted(result.resources, key=lambda r: r.end_ms)
            orders[buffer] = [r.url.rsplit("/", 1)[1] for r in by_end]
            img = next(r for r in result.resources if r.url.endswith(".png"))
            image_share[buffer] = (css.end_ms - img.start_ms) / (img.end_ms - img.start_ms)
            print(f"buffer={buffer}: stylesheet request -> last byte {css_ms[buffer]:.0f} ms, "
                  f"completion order {orders[buffer]}, image {image_share[buffer]:.0%} done "
                  "when the stylesheet ended")  # fmt: skip
    # 10 Mbit/s drains 1 MB in 0.8 s: with buffer=1MB (nearly) the whole image is in the buffers
    # when the stylesheet is asked for; without HAProxy nginx sends it first (~3 RTT: ~120 ms).
    # The image is 1,000,000 B against 1 MiB of buffer: in one suite run of many the last bytes
    # of the image were still in nginx (stylesheet at 825 ms, before them), hence a share.
    assert css_ms["none"] < 200
    assert css_ms["none"] + 50 < css_ms["64KB"] < css_ms["none"] + 400
    assert css_ms["1MB"] > css_ms["none"] + 600
    assert orders["none"] == orders["64KB"] == ["index.html", "s.css", "big.png"]
    assert image_share["1MB"] > 0.85
