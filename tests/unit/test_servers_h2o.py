"""h2lab.servers.h2o: the generated h2o.conf and mruby replay handler, options, push rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from h2lab.errors import SpecError
from h2lab.pages import Page
from h2lab.pages.manifest import PageWriter
from h2lab.servers import ServeContext
from h2lab.servers import get as get_server
from h2lab.servers.h2o import render_app, render_config, ruby_str, yaml_str
from h2lab.servers.rules import select
from h2lab.tls import LocalCA

HOST = "www.example.org"
CDN = "static.cdn.example.net"
TOKEN = "0123456789abcdef"


@pytest.fixture
def page(tmp_path: Path) -> Page:
    with PageWriter("replay-test", root=tmp_path / "pages") as w:
        w.add(f"https://{HOST}/", b'<html><link rel="stylesheet" href="/b.css"></html>',
              content_type="text/html; charset=utf-8",
              headers=[("Cache-Control", "max-age=60"), ("Link", '<a$b>; rel="x"')])  # fmt: skip
        w.add(f"https://{HOST}/q?a=1", b"first", content_type="text/plain")
        w.add(f"https://{HOST}/q?a=2", b"second", content_type="text/plain")
        w.add(f"https://{HOST}/old", None, content_type="text/html", status=301,
              headers=[("Location", f"https://{HOST}/it's")])  # fmt: skip
        w.add(f"https://{HOST}/beacon", None, content_type="text/plain", status=204)
        w.add(f"https://{HOST}/a.css", b"a{}", content_type="text/css")
        w.add(f"https://{HOST}/b.css", b"b{}", content_type="text/css")
        w.add(f"https://{HOST}/x.js", b"x", content_type="application/javascript")
        w.add(f"https://{HOST}/i.png", b"png", content_type="image/png")
        w.add(f"https://{CDN}/a%20b.js", b"var x;", content_type="application/javascript")
        return w.commit(f"https://{HOST}/")


@pytest.fixture
def ctx(tmp_path: Path, page: Page) -> ServeContext:
    ips = {h: f"10.2.0.{i + 1}" for i, h in enumerate(page.origins)}
    return ServeContext("h2lab-x-servers", ips, tmp_path / "srv", tmp_path / "tls")


def test_quoting_leaves_dollars_and_quotes_literal() -> None:
    assert yaml_str('<a$b>; rel="x"') == '"<a$b>; rel=\\"x\\""'
    assert ruby_str("it's a \\ #{x}") == "'it\\'s a \\\\ #{x}'"


def test_config_has_one_host_per_origin_with_its_address_ports_and_certificate(
    page: Page, ctx: ServeContext
) -> None:
    conf = render_config(page, ctx, LocalCA(ctx.tls_dir), TOKEN)
    for host, ip in ctx.origin_ips.items():
        assert f'\n  "{host}":\n    listen:\n      host: {ip}\n      port: 80\n' in conf
        assert f"host: {ip}\n      port: 8080\n" in conf
        assert f"host: {ip}\n      port: 443\n      ssl:\n" in conf
        assert f'certificate-file: "{ctx.tls_dir / host}.pem"' in conf
    assert "http2-max-concurrent-requests-per-connection: 1000" in conf
    assert "http2-push-preload: OFF" in conf
    assert "ssl-session-resumption:\n  mode: off" in conf
    assert "compress" not in conf


def test_config_serves_each_200_body_from_an_internal_path_with_its_headers(
    page: Page, ctx: ServeContext
) -> None:
    conf = render_config(page, ctx, LocalCA(ctx.tls_dir), TOKEN)
    entry = f"/.h2lab/{TOKEN}/r0:\n"
    assert entry in conf
    block = conf.split(entry, 1)[1].split("/.h2lab/", 1)[0]
    assert f'file.file: "{page.body_file(page.entry)}"' in block
    assert 'file.mime.setdefaulttype: "text/html; charset=utf-8"' in block
    assert 'header.add: "cache-control: max-age=60"' in block
    assert 'header.add: "link: <a$b>; rel=\\"x\\""' in block
    assert "file.etag: OFF" in block
    # the redirect (3) and the 204 (4) are answered by the handler, not by a file
    assert f"/.h2lab/{TOKEN}/r3:" not in conf and f"/.h2lab/{TOKEN}/r4:" not in conf


def test_app_looks_up_exact_then_by_path_and_answers_redirects_and_204(page: Page) -> None:
    app = render_app(page, TOKEN, "/srv/unserved.log")
    exact = app.split("EXACT = {", 1)[1].split("}", 1)[0]
    by_path = app.split("BY_PATH = {", 1)[1].split("}", 1)[0]
    assert "'GET www.example.org/q?a=1' => 1," in exact
    assert "'GET www.example.org/q?a=2' => 2," in exact
    assert "'GET static.cdn.example.net/a%20b.js' => 9," in exact
    assert "'www.example.org/q' => 1," in by_path  # the first recorded one
    assert "=> 2" not in by_path
    by_query = app.split("BY_QUERY = {", 1)[1].split("}", 1)[0]
    assert by_query.strip() == "'GET www.example.org/q' => [['a=1', 1], ['a=2', 2]],"
    assert f"[:reproxy, '/.h2lab/{TOKEN}/r1', nil]," in app
    assert "[:respond, 301, {'content-type' => 'text/html', " in app
    assert "'location' => 'https://www.example.org/it\\'s'}, nil]," in app
    assert "[:respond, 204, {}, nil]," in app
    assert "UNSERVED = '/srv/unserved.log'" in app


def test_push_rules_pick_resources_of_the_entry_origin(page: Page) -> None:
    def targets(rule: str) -> list[str]:
        return [r.target for r in select(page, rule)]

    assert targets("critical-css") == ["/b.css"]  # the first the entry HTML links to
    assert targets("css-js") == ["/a.css", "/b.css", "/x.js"]
    assert targets("images") == ["/i.png"]
    assert targets("all") == ["/q?a=1", "/q?a=2", "/a.css", "/b.css", "/x.js", "/i.png"]
    assert targets("none") == []


def test_push_option_adds_preload_links_to_the_entry_and_turns_push_on(
    page: Page, ctx: ServeContext
) -> None:
    conf = render_config(page, ctx, LocalCA(ctx.tls_dir), TOKEN, push="css-js")
    assert "http2-push-preload: ON" in conf
    assert 'header.add: "link: </x.js>; rel=preload"' in conf
    assert conf.count("rel=preload") == 3


def test_options_are_parsed_and_unknown_ones_rejected() -> None:
    assert get_server("h2o").protocols >= {"h1c", "h1s", "h2s", "h2c"}
    with pytest.raises(SpecError, match="push"):
        get_server("h2o:push=sometimes")
    with pytest.raises(SpecError, match=r"no option 'scheduler' \(h2o takes: push"):
        get_server("h2o:scheduler=fcfs")


def test_delayed_page_is_refused(tmp_path: Path, ctx: ServeContext) -> None:
    with PageWriter("slow", root=tmp_path / "pages") as w:
        w.add(f"https://{HOST}/", b"x", content_type="text/html", delay_ms=5)
        slow = w.commit()
    with pytest.raises(SpecError, match="cannot delay"):
        render_config(slow, ctx, LocalCA(ctx.tls_dir), TOKEN)
