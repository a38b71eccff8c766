"""Issue #31: the capture of every edge case (tests/unit/test_pages_import_edge_all.py: revisits,
304s, a redirect chain, malformed header lines, an IP-literal beacon, a bogus Content-Encoding)
imported and served by the lab's servers: each stored response is answered with its status,
Location and body, the beacon at its own address, and what was skipped gets 404."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from h2lab.net.lab import Lab
from h2lab.pages.importers import import_warc
from h2lab.servers import ServeContext
from h2lab.servers import get as get_server
from h2lab.spec.network import parse_network
from h2lab.spec.tcp import TcpSettings
from tests.unit.test_pages_import_edge import write
from tests.unit.test_pages_import_edge_all import everything

SKIPPED = ("https://www.b.test/gone.js", "https://www.b.test/style.css")
"""a revisit of a response not in the file, a 304 with no body to serve"""


def _fetch(ns: str, url: str, ip: str) -> tuple[int, str | None, bytes]:
    host = url.split("/")[2]
    argv = ["ip", "netns", "exec", ns, "curl", "-sk", "--max-time", "10", "-D", "-", url]
    if host != ip:  # a name: no resolver in the lab; an address is reached by routing
        argv[6:6] = ["--resolve", f"{host}:443:{ip}"]
    out = subprocess.run(argv, capture_output=True, timeout=15, check=True).stdout
    head, _, body = out.partition(b"\r\n\r\n")
    lines = head.decode().lower().splitlines()
    location = next((ln.split(": ", 1)[1] for ln in lines if ln.startswith("location: ")), None)
    return int(lines[0].split()[1]), location, body


@pytest.mark.parametrize("server", ["nginx", "origin"])
def test_every_edge_case_is_served_as_imported(tmp_path: Path, server: str) -> None:
    page = import_warc(write(tmp_path, everything(), "all.warc.gz"), root=tmp_path / "pages")
    assert "66.102.1.1" in page.origins
    with Lab(page.origins) as lab:
        assert lab.origin_ips["66.102.1.1"] == "66.102.1.1"
        ctx = ServeContext(
            lab.servers_ns, lab.origin_ips, lab.state_dir / "srv", lab.state_dir / "tls"
        )
        with (
            get_server(server).serve(page, ctx),
            lab.link(parse_network("rtt=2ms"), 1, TcpSettings()) as link,
        ):
            got = {
                r.url(): _fetch(link.client_ns, r.url(), lab.origin_ips[r.origin])
                for r in page.resources
            }
            skipped = {
                u: _fetch(link.client_ns, u, lab.origin_ips["www.b.test"])[0] for u in SKIPPED
            }
    for r in page.resources:
        status, location, body = got[r.url()]
        print(f"{server} {r.url()}: {status} {location or ''} {len(body)} bytes")
        assert status == r.status, r.url()
        assert location == r.header("location"), r.url()
        if r.status == 200:
            assert body == page.body_file(r).read_bytes(), r.url()
    assert got["https://66.102.1.1/beacon"][2] == b"GIF89a"
    assert skipped == dict.fromkeys(SKIPPED, 404)
