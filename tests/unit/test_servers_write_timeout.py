"""Servers wait on a slow client (a response it does not read, a request it has not sent yet)
at least as long as any trial may take: a load on an emulated slow link ends by its own
timeout_s, never by a server giving up on it (nginx's default send_timeout, 60 s, reset 22 of
31 streams of Fig. 1c on cell-poor)."""

from __future__ import annotations

import re
from pathlib import Path

from h2lab.pages import Page
from h2lab.pages.manifest import PageWriter
from h2lab.servers import (
    IDLE_TIMEOUT_S,
    WRITE_TIMEOUT_S,
    ServeContext,
    apache,
    h2o,
    haproxy,
    nginx,
    origin,
)
from h2lab.spec.limits import MAX_TIMEOUT_S
from h2lab.tls import LocalCA

HOST = "www.example.org"


def _page(tmp_path: Path) -> Page:
    with PageWriter("timeouts", root=tmp_path / "pages") as w:
        w.add(f"https://{HOST}/", b"<html></html>", content_type="text/html")
        return w.commit(f"https://{HOST}/")


def _ctx(tmp_path: Path) -> ServeContext:
    return ServeContext("h2lab-x-servers", {HOST: "10.2.0.1"}, tmp_path / "srv", tmp_path / "tls")


def _seconds(pattern: str, conf: str) -> list[int]:
    found = [int(s) for s in re.findall(pattern, conf)]
    assert found, pattern
    return found


def test_the_write_timeout_covers_the_longest_trial() -> None:
    assert WRITE_TIMEOUT_S >= MAX_TIMEOUT_S


def test_nginx_waits_on_a_slow_client_as_long_as_any_trial(tmp_path: Path) -> None:
    conf = nginx.render_config(_page(tmp_path), _ctx(tmp_path), LocalCA(tmp_path / "tls"))
    assert _seconds(r"\n\s*send_timeout (\d+)s;", conf) == [WRITE_TIMEOUT_S]


def test_apache_waits_on_a_slow_client_as_long_as_any_trial(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    conf = apache.render_config(_page(tmp_path), ctx, LocalCA(ctx.tls_dir), "0123456789abcdef")
    assert _seconds(r"\nTimeout (\d+)\n", conf) == [WRITE_TIMEOUT_S]


def test_haproxy_waits_on_either_side_as_long_as_any_trial() -> None:
    conf = haproxy.render_config(
        {HOST: "10.2.0.1"}, {HOST: "127.100.0.1"}, haproxy.Tuning.for_buffer(1_000_000), "/x.pid"
    )
    assert _seconds(r"timeout (?:client|server) (\d+)s", conf) == [WRITE_TIMEOUT_S] * 2


def test_servers_wait_for_a_first_request_as_long_as_any_trial(tmp_path: Path) -> None:
    """A socket Chromium opened ahead may carry its first request minutes later on cell-poor;
    the origin's 30 s header timeout closed such sockets (net::ERR_EMPTY_RESPONSE)."""
    ctx = _ctx(tmp_path)
    page = _page(tmp_path)
    conf = nginx.render_config(page, ctx, LocalCA(ctx.tls_dir))
    assert _seconds(r"\n\s*client_(?:header|body)_timeout (\d+)s;", conf) == [WRITE_TIMEOUT_S] * 2
    yaml = h2o.render_config(page, ctx, LocalCA(ctx.tls_dir), "0123456789abcdef")
    assert _seconds(r"\n(?:http1-request|handshake)-timeout: (\d+)", yaml) == [WRITE_TIMEOUT_S] * 2
    cfg = origin.render_config(page, ctx, LocalCA(ctx.tls_dir), origin.OriginOptions())
    assert cfg["client_timeout_s"] == WRITE_TIMEOUT_S


def test_servers_keep_an_idle_connection_as_long_as_any_trial(tmp_path: Path) -> None:
    """A server counts a response as sent once it is in the kernel's send buffer; on a slow
    link with a deep queue the client may read it minutes later, and a keep-alive time that
    ran out meanwhile closed the connection under it (h2load: `4/6 requests succeeded`)."""
    assert IDLE_TIMEOUT_S >= MAX_TIMEOUT_S
    ctx = _ctx(tmp_path)
    page = _page(tmp_path)
    conf = nginx.render_config(page, ctx, LocalCA(ctx.tls_dir))
    assert _seconds(r"\n\s*keepalive_timeout (\d+)s;", conf) == [IDLE_TIMEOUT_S]
    conf = apache.render_config(page, ctx, LocalCA(ctx.tls_dir), "0123456789abcdef")
    assert _seconds(r"\nKeepAliveTimeout (\d+)\n", conf) == [IDLE_TIMEOUT_S]
    yaml = h2o.render_config(page, ctx, LocalCA(ctx.tls_dir), "0123456789abcdef")
    assert _seconds(r"\nhttp2-idle-timeout: (\d+)", yaml) == [IDLE_TIMEOUT_S]
    # H2O's HTTP/1 keep-alive wait is its http1-request-timeout (the test above)
    cfg = origin.render_config(page, ctx, LocalCA(ctx.tls_dir), origin.OriginOptions())
    assert cfg["idle_timeout_s"] == IDLE_TIMEOUT_S
