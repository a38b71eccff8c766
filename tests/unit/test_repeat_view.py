"""The repeat view (the ``view`` factor): which clients may run it, what the servers do with
TLS session tickets for it, how Chromium's QUIC connections are found open, and how the 0-RTT
packets are counted."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from h2lab.clients.browser.chromium.repeat import quic_sockets
from h2lab.errors import SpecError
from h2lab.net.capture import dumpcap_argv, tcpdump_argv
from h2lab.pages import Page
from h2lab.pages.manifest import PageWriter
from h2lab.runner.captures import EARLY_DATA_BPF
from h2lab.runner.levels import validate_factors
from h2lab.servers import ServeContext, caddy, nginx
from h2lab.servers.origin import OriginOptions
from h2lab.spec.options import parse
from h2lab.tls import LocalCA


def parse_options(raw: dict[str, str]) -> OriginOptions:
    """What the registry makes of ``raw`` (:func:`h2lab.spec.options.parse`)."""
    return parse(OriginOptions, raw, "origin")


HOST = "a.example.org"
TABLE = {"protocol": ["h2s"], "network": ["cable"], "page": ["synthetic:n=1,size=1KB"]}


@pytest.fixture
def page(tmp_path: Path) -> Page:
    with PageWriter("repeat-test", root=tmp_path / "pages") as w:
        w.add(f"https://{HOST}/", b"<html></html>", content_type="text/html")
        return w.commit()


def _ctx(tmp_path: Path, resumption: bool) -> ServeContext:
    return ServeContext(
        "h2lab-x-servers", {HOST: "10.2.0.1"}, tmp_path / "srv", tmp_path / "tls",
        resumption=resumption,
    )  # fmt: skip


def test_only_a_client_with_a_browser_profile_runs_the_repeat_view() -> None:
    both = validate_factors(
        "e.toml", {**TABLE, "client": ["chromium"], "view": ["first", "repeat"]}
    )
    assert both["view"] == ("first", "repeat")
    for client in ("curl", "h2load", "firefox"):
        with pytest.raises(SpecError, match=rf"factors.view\[1\].*{client} does not") as e:
            validate_factors("e.toml", {**TABLE, "client": [client], "view": ["first", "repeat"]})
        assert e.value.source == "e.toml"
    validate_factors("e.toml", {**TABLE, "client": ["curl"], "view": ["first"]})


def test_nginx_sends_tickets_only_in_a_repeat_view(page: Page, tmp_path: Path) -> None:
    first = nginx.render_config(page, _ctx(tmp_path, False), LocalCA(tmp_path / "tls"), h3=True)
    repeat = nginx.render_config(page, _ctx(tmp_path, True), LocalCA(tmp_path / "tls"), h3=True)
    assert "ssl_session_tickets off;" in first and "NumTickets 0" in first
    assert "ssl_session_tickets on;" in repeat and "NumTickets" not in repeat
    assert "ssl_early_data" not in repeat  # nginx's default: off


def test_caddy_sends_tickets_only_in_a_repeat_view(page: Page, tmp_path: Path) -> None:
    def tickets(resumption: bool) -> object:
        conf = caddy.render_config(page, _ctx(tmp_path, resumption), LocalCA(tmp_path / "tls"))
        return conf["apps"]["tls"]["session_tickets"]

    assert tickets(False) == {"disabled": True}
    assert tickets(True) == {"disabled": False}


def test_the_origin_accepts_early_data_when_asked() -> None:
    assert parse_options({}).early_data is False
    assert parse_options({"early_data": "1"}).early_data is True
    with pytest.raises(ValueError, match="early_data: expected 0 or 1, got 'maybe'"):
        parse_options({"early_data": "maybe"})


UDP = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
  120: 0200000A:E1C3 0100020A:01BB 01 00000000:00000000 00:00000000 00000000     0        0 1 2
  121: 0200000A:E1C4 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 1 2
  122: 0200000A:E1C5 0200020A:0035 01 00000000:00000000 00:00000000 00000000     0        0 1 2
"""


def test_quic_sockets_are_the_udp_sockets_connected_to_port_443() -> None:
    assert quic_sockets(UDP) == 1
    assert quic_sockets(UDP.splitlines()[0]) == 0


def test_the_early_data_capture_takes_quic_0rtt_packets_only() -> None:
    argv = tcpdump_argv("vL1-L-x", Path("/a/early-data.pcap"), EARLY_DATA_BPF)
    assert argv[-1] == "udp dst port 443 and udp[8] & 0xf0 = 0xd0"
    assert dumpcap_argv("vL1-L-x", Path("/a/e.pcap"), EARLY_DATA_BPF)[-2:] == ["-f", EARLY_DATA_BPF]
    assert "-f" not in dumpcap_argv("vL1-L-x", Path("/a/e.pcap"))
    # the first byte of a QUIC v1 0-RTT packet under header protection: 1101xxxx
    assert all((b & 0xF0) == 0xD0 for b in (0xD0, 0xD3, 0xDF))
    assert not any(
        (b & 0xF0) == 0xD0 for b in (0xC3, 0xE1, 0xF0, 0x43)
    )  # Initial, Handshake, Retry, short


def test_a_repeat_serve_context_is_a_server_stretch_of_its_own() -> None:
    ctx = ServeContext("n", {}, Path("/s"), Path("/t"))
    assert not ctx.resumption and dataclasses.replace(ctx, resumption=True).resumption
