"""Issue #31: every replaying server answers a request whose exact target was not recorded by
the closest recorded query for the same method, host and path (Mahimahi's longest common
prefix; ties to the first recorded), then by path, and agrees with ``Page.match``."""

from __future__ import annotations

from pathlib import Path

import pytest

from h2lab.net.lab import Lab
from h2lab.pages import Page
from h2lab.pages.manifest import PageWriter
from h2lab.servers import ServeContext
from h2lab.servers import get as get_server
from h2lab.spec.network import parse_network
from h2lab.spec.tcp import TcpSettings
from tests.integration.test_replay import _curl

HOST = "www.example.org"
RECORDED = (
    ("/poll?t=1520301377&x=a", b"first"),
    ("/poll?t=1520301399&x=b", b"second"),
    ("/poll?u=1", b"third"),
    ("/one?t=1", b"only"),
    ("/a%20b?t=1", b"spaced-1"),
    ("/a%20b?t=2", b"spaced-2"),
)
ASKED = {
    "/poll?t=1520301390&x=a": b"second",  # "t=15203013" beats "t=1520301"
    "/poll?t=1795656749&x=b": b"first",  # "t=1" ties: the first recorded
    "/poll?u=7": b"third",
    "/poll": b"first",
    "/poll?zz": b"first",
    "/one?t=999": b"only",
    "/a%20b?t=29": b"spaced-2",
}


@pytest.fixture
def page(tmp_path: Path) -> Page:
    with PageWriter("closest", root=tmp_path / "pages") as w:
        w.add(f"https://{HOST}/", b"<html>entry</html>", content_type="text/html")
        for target, body in RECORDED:
            w.add(f"https://{HOST}{target}", body, content_type="application/json")
        return w.commit(f"https://{HOST}/")


@pytest.mark.parametrize("server", ["nginx", "apache", "h2o", "origin"])
def test_servers_answer_by_closest_query(page: Page, server: str) -> None:
    for target, want in ASKED.items():
        match = page.match("GET", f"https://{HOST}{target}")
        assert match is not None and page.body_file(match).read_bytes() == want, target
    with Lab(page.origins) as lab:
        ctx = ServeContext(
            lab.servers_ns, lab.origin_ips, lab.state_dir / "srv", lab.state_dir / "tls"
        )
        with (
            get_server(server).serve(page, ctx),
            lab.link(parse_network("rtt=2ms"), 1, TcpSettings()) as link,
        ):
            got = {
                t: _curl(link.client_ns, lab.origin_ips[HOST], f"https://{HOST}{t}")[1]
                for t in ASKED
            }
    print(f"{server}: {got}")
    assert got == ASKED
