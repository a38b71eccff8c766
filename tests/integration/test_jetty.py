"""The Jetty server level (Jetty 12.0, HTTP/3 over quiche; docs/servers.md, "jetty"): it replays
a manifest page as the other servers do (status, content type, kept headers, query fallback,
404 logged in unserved.log) over h1c, h1s, h2s and h2c, and the corpus's Wikipedia and Baidu
pages load from it in Chromium and Firefox over h2s and h3: over h3 every request that went over
the network went over h3 and no TCP connection was opened; over h2s every one went over h2."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from h2lab.artifacts import RESULTS_DB
from h2lab.net.lab import Lab
from h2lab.pages import Page
from h2lab.pages.manifest import PageWriter
from h2lab.servers import ServeContext
from h2lab.servers import get as get_server
from h2lab.spec.network import parse_network
from h2lab.spec.tcp import TcpSettings
from tests.integration.conftest import ROOT, run_experiment
from tests.integration.test_servers_h2o_apache import _curl

HOST = "www.example.org"
CDN = "static.cdn.example.net"
WARCS = ("wikipedia", "baidu")

SQL = """
SELECT SUM(r.protocol = ?), COUNT(r.url), GROUP_CONCAT(DISTINCT r.protocol)
FROM resources r
WHERE r.trial_id = ? AND r.error IS NULL AND r.from_cache = 0 AND r.url NOT LIKE 'data:%'
"""
"""the requests of a trial that went over the network (not failed, not from the browser's
cache, not a ``data:`` URL): how many over the trial's protocol, of how many, and which"""


@pytest.fixture
def page(tmp_path: Path) -> Page:
    with PageWriter("jetty-test", root=tmp_path / "pages") as w:
        w.add(f"https://{HOST}/", b"<html>entry</html>", content_type="text/html; charset=utf-8",
              headers=[("Cache-Control", "max-age=60"), ("Link", '<a$b>; rel="x"')])  # fmt: skip
        w.add(f"https://{HOST}/q?a=1", b"first", content_type="text/plain")
        w.add(f"https://{HOST}/q?a=2", b"second", content_type="text/plain")
        w.add(f"https://{HOST}/old", None, content_type="text/html", status=301,
              headers=[("Location", f"https://{HOST}/")])  # fmt: skip
        w.add(f"https://{HOST}/beacon", None, content_type="text/plain", status=204)
        w.add(f"https://{CDN}/a%20b.js", b"var x;", content_type="application/javascript")
        return w.commit(f"https://{HOST}/")


def test_replays_status_headers_and_query_fallback(page: Page) -> None:
    with Lab(page.origins) as lab:
        ctx = ServeContext(
            lab.servers_ns, lab.origin_ips, lab.state_dir / "srv", lab.state_dir / "tls"
        )
        with (
            get_server("jetty").serve(page, ctx),
            lab.link(parse_network("rtt=2ms"), 1, TcpSettings()) as link,
        ):
            ip, cdn_ip = lab.origin_ips[HOST], lab.origin_ips[CDN]

            def get(url: str, *extra: str, via: str = ip) -> tuple[str, bytes]:
                return _curl(link.client_ns, via, url, *extra)

            head, body = get(f"https://{HOST}/")
            assert head.startswith("http/2 200") and body == b"<html>entry</html>"
            assert "content-type: text/html; charset=utf-8" in head
            assert "cache-control: max-age=60" in head
            assert 'link: <a$b>; rel="x"' in head
            assert "server:" not in head and "alt-svc" not in head
            assert get(f"https://{HOST}/q?a=2")[1] == b"second"  # exact match
            assert get(f"https://{HOST}/q?a=9")[1] == b"first"  # best match on path
            head, body = get(f"http://{HOST}/q?a=1")
            assert head.startswith("http/1.1 200") and body == b"first"
            head, _ = get(f"http://{HOST}/old")
            assert head.startswith("http/1.1 301") and f"location: https://{HOST}/" in head
            assert get(f"https://{HOST}/beacon")[0].startswith("http/2 204")
            assert get(f"https://{CDN}/a%20b.js", via=cdn_ip)[1] == b"var x;"
            assert get(f"https://{HOST}/missing?x=1")[0].startswith("http/2 404")
            assert get(f"https://{HOST}/.h2lab/r0")[0].startswith("http/2 404")  # not logged
            head, body = get(f"http://{HOST}:8080/q?a=2", "--http2-prior-knowledge")
            assert head.startswith("http/2 200") and body == b"second"
            head, _ = get(f"https://{HOST}/", "--http1.1")
            assert head.startswith("http/1.1 200")  # ALPN http/1.1 on the same port
            # TLS 1.3 only (the default tls factor): curl's handshake at 1.2 fails (exit 35)
            tls12 = ["curl", "-sk", "--tlsv1.2", "--tls-max", "1.2", f"https://{ip}/"]
            argv = ["ip", "netns", "exec", link.client_ns, *tls12]
            assert subprocess.run(argv, capture_output=True, timeout=10).returncode == 35
        unserved = (ctx.state_dir / "unserved.log").read_text().splitlines()
    assert unserved == [f"GET https://{HOST}/missing?x=1"]


def test_corpus_pages_over_h2s_and_h3_in_both_browsers(tmp_path: Path) -> None:
    pages = [f"warc:{ROOT / 'corpus' / 'warc' / f'{w}.warc.gz'}" for w in WARCS]
    records = run_experiment(
        tmp_path,
        "jetty",
        {"protocol": ["h2s", "h3"], "network": ["cable"], "page": pages,
         "server": ["jetty"], "client": ["chromium", "firefox"]},
        seed=53,
        repetitions=1,
    )  # fmt: skip
    assert [r.status for r in records] == ["ok"] * 8, [r.error for r in records]
    db = sqlite3.connect(tmp_path / RESULTS_DB)
    try:
        for r in records:
            wire = "h2" if r.protocol == "h2s" else "h3"
            over, requests, protocols = db.execute(SQL, (wire, r.id)).fetchone()
            client, page = db.execute(
                "SELECT client, page FROM trials WHERE id = ?", (r.id,)
            ).fetchone()
            print(f"jetty {client} {r.protocol} {page.rsplit('/', 1)[-1]}: {over}/{requests} "
                  f"over {wire} ({protocols}), {r.tcp_connections} TCP connections, "
                  f"plt {r.plt_ms} ms")  # fmt: skip
            assert requests >= 5 and over == requests  # Wikipedia: 7
            if r.protocol == "h3":
                assert r.tcp_connections == 0
            else:
                assert (r.tcp_connections or 0) >= 1
            assert "jetty 12.0" in json.dumps(r.versions)
    finally:
        db.close()
