"""Firefox's preferences and profile, its BiDi network events -> resources, and the small
WebSocket framing, without a browser."""

from __future__ import annotations

import base64
import hashlib
import struct
from typing import Any

import pytest

from h2lab.clients.browser.firefox.client import session_cpu_s
from h2lab.clients.browser.firefox.events import BidiNetwork, RawLoad, analyse, phases
from h2lab.clients.browser.firefox.options import (
    OFFLINE_PREFS,
    PROTOCOLS,
    Options,
    h3_mapping,
    profile_prefs,
    user_js,
)
from h2lab.clients.browser.firefox.websocket import GUID, accept_key, encode_frame
from h2lab.clients.browser.log import Phases
from h2lab.errors import SpecError, TrialFailed
from h2lab.runner.levels import validate_factors
from h2lab.spec.options import parse
from tests.har_schema import assert_valid_har

HOSTS = {"b.h2lab.test": "10.1.2.2", "a.h2lab.test": "10.1.2.1"}


def parse_options(raw: dict[str, str]) -> Options:
    """What the registry makes of ``raw`` (:func:`h2lab.spec.options.parse`)."""
    return parse(Options, raw, "firefox")


T0_MS = 1_700_000_000_000.0


def test_protocols_are_the_four_firefox_loads_in_the_lab() -> None:
    assert sorted(PROTOCOLS) == ["h1c", "h1s", "h2s", "h3"]


@pytest.mark.parametrize("protocol", ["h1c", "h1s", "h2s"])
def test_tcp_protocols_have_no_quic_and_no_alt_svc(protocol: str) -> None:
    prefs = profile_prefs(protocol, HOSTS)
    assert prefs["network.http.http3.enable"] is False
    assert prefs["network.http.altsvc.enabled"] is False
    assert "network.http.http3.alt-svc-mapping-for-testing" not in prefs
    assert prefs.get("network.http.http2.enabled", True) is (protocol != "h1s")
    assert prefs["dom.security.https_first"] is False


def test_h3_maps_every_lab_origin_to_quic_from_the_first_request() -> None:
    prefs = profile_prefs("h3", HOSTS)
    assert prefs["network.http.http3.enable"] is True
    assert prefs["network.http.http3.disable_when_third_party_roots_found"] is False
    delay_ms = prefs["network.http.http3.backup_timer_delay"]
    assert isinstance(delay_ms, int) and delay_ms >= 60_000  # no TCP fallback race
    mapping = "a.h2lab.test;h3=:443,b.h2lab.test;h3=:443"
    assert prefs["network.http.http3.alt-svc-mapping-for-testing"] == mapping
    assert h3_mapping({}) == ""


def test_alt_svc_discovery_maps_nothing_and_keeps_firefoxs_tcp_race() -> None:
    prefs = profile_prefs("h3", HOSTS, "alt-svc")
    assert prefs["network.http.http3.enable"] is True
    assert prefs["network.http.altsvc.enabled"] is True
    assert prefs["network.http.http3.disable_when_third_party_roots_found"] is False
    assert "network.http.http3.alt-svc-mapping-for-testing" not in prefs
    assert "network.http.http3.backup_timer_delay" not in prefs  # Firefox's own fallback
    for name, value in OFFLINE_PREFS.items():
        assert prefs[name] == value, name
    assert profile_prefs("h2s", HOSTS, "alt-svc") == profile_prefs("h2s", HOSTS)


def test_https_rr_asks_the_system_resolver_for_https_records_in_both_protocols() -> None:
    for protocol in ("h2s", "h3"):
        prefs = profile_prefs(protocol, HOSTS, "https-rr")
        assert prefs["network.dns.native_https_query"] is True
        assert prefs["network.dns.native_https_query_in_automation"] is True  # under BiDi
        assert prefs["network.dns.use_https_rr_as_altsvc"] is True
        assert prefs["network.trr.mode"] == 5  # no DoH: the lab's resolver, over plain DNS
        assert "network.http.http3.alt-svc-mapping-for-testing" not in prefs
    h3 = profile_prefs("h3", HOSTS, "https-rr")
    assert h3["network.http.http3.enable"] is True and h3["network.http.altsvc.enabled"] is True
    assert profile_prefs("h2s", HOSTS, "https-rr")["network.http.http3.enable"] is False
    assert profile_prefs("h3", HOSTS)["network.dns.native_https_query"] is False


def test_h3_origins_maps_those_only() -> None:
    first = frozenset({"a.h2lab.test"})
    prefs = profile_prefs("h3", HOSTS, "forced", first)
    assert prefs["network.http.http3.alt-svc-mapping-for-testing"] == "a.h2lab.test;h3=:443"
    # alt-svc: nothing mapped, the servers' headers decide
    assert profile_prefs("h3", HOSTS, "alt-svc", first) == profile_prefs("h3", HOSTS, "alt-svc")
    assert profile_prefs("h3", HOSTS, "forced", frozenset(HOSTS)) == profile_prefs("h3", HOSTS)


def test_every_profile_is_offline() -> None:
    for protocol in PROTOCOLS:
        prefs = profile_prefs(protocol, HOSTS)
        for name, value in OFFLINE_PREFS.items():
            assert prefs[name] == value, name
    prefs = profile_prefs("h2s", HOSTS)
    assert prefs["network.trr.mode"] == 5
    assert prefs["network.proxy.type"] == 0
    assert prefs["network.http.speculative-parallel-limit"] == 0
    assert prefs["browser.cache.disk.enable"] is False


def test_user_js_writes_json_literals() -> None:
    text = user_js({"a.b": True, "c": 5, "d": 'x"y'})
    assert text == 'user_pref("a.b", true);\nuser_pref("c", 5);\nuser_pref("d", "x\\"y");\n'


def test_options() -> None:
    assert parse_options({}).idle_ms == 0
    assert parse_options({"idle": "2s"}).idle_ms == 2000
    with pytest.raises(ValueError, match=r"no option 'netlog' \(firefox takes: device, idle"):
        parse_options({"netlog": "1"})
    with pytest.raises(ValueError, match="idle: expected 0 or a duration"):
        parse_options({"idle": "soon"})
    assert parse_options({}).speed_index == "h2lab"
    assert parse_options({"speed_index": "wpt"}).speed_index == "wpt"
    with pytest.raises(ValueError, match=r"^speed_index: expected one of h2lab, wpt, got 'x'$"):
        parse_options({"speed_index": "x"})


# ------------------------------------------------------------------------- BiDi -> the log


def _headers(**items: str) -> list[dict[str, Any]]:
    return [{"name": k, "value": {"type": "string", "value": v}} for k, v in items.items()]


def _request(rid: str, url: str, **timings: float) -> dict[str, Any]:
    base = {"timeOrigin": 0, "requestTime": T0_MS + 1, "responseStart": 0, "responseEnd": 0}
    return {
        "request": rid,
        "url": url,
        "headers": _headers(Priority="u=4, i"),
        "timings": {**base, **{k: T0_MS + v for k, v in timings.items()}},
    }


def _response(status: int = 200, body: int = 1000, protocol: str = "h2") -> dict[str, Any]:
    return {
        "status": status,
        "protocol": protocol,
        "fromCache": False,
        "headers": _headers(**{"content-type": "image/png"}),
        "headersSize": 120,
        "bodySize": body,
        "bytesReceived": body + 120,
    }


def _load(net: BidiNetwork, rid: str, url: str, body: int, start: float, end: float) -> None:
    sent = {"request": _request(rid, url, requestTime=start), "timestamp": T0_MS + start}
    net.add("network.beforeRequestSent", sent)
    timings = {"requestTime": start, "responseStart": start + 20, "responseEnd": end}
    done = {
        "request": _request(rid, url, **timings),
        "response": _response(body=body),
        "timestamp": T0_MS + end + 3,
    }
    net.add("network.responseStarted", done)
    net.add("network.responseCompleted", done)


def test_events_become_resources_with_their_timings() -> None:
    net = BidiNetwork()
    _load(net, "1", "https://a.h2lab.test/", 500, 2, 40)
    _load(net, "2", "https://a.h2lab.test/x.png", 30_000, 50, 120)
    rows = net.log.resources(T0_MS / 1000)
    assert [(r.url, r.bytes, r.protocol, r.status) for r in rows] == [
        ("https://a.h2lab.test/", 500, "h2", 200),
        ("https://a.h2lab.test/x.png", 30_000, "h2", 200),
    ]
    x = rows[1]
    assert (x.start_ms, x.ttfb_ms, x.end_ms) == pytest.approx((50, 70, 120))
    assert x.priority == "u=4, i"
    assert x.connection == ""


def test_data_urls_are_no_resources_and_a_fetch_error_is_a_failed_row() -> None:
    net = BidiNetwork()
    _load(net, "1", "https://a.h2lab.test/", 500, 2, 40)
    net.add("network.beforeRequestSent", {"request": _request("2", "data:,"), "timestamp": T0_MS})
    lost = {"request": _request("3", "https://a.h2lab.test/y.png"), "timestamp": T0_MS + 60}
    net.add("network.beforeRequestSent", lost)
    net.add("network.fetchError", {**lost, "errorText": "NS_ERROR_NET_RESET"})
    aborted = {"request": _request("4", "https://a.h2lab.test/z.png"), "timestamp": T0_MS + 61}
    net.add("network.beforeRequestSent", aborted)
    net.add("network.fetchError", {**aborted, "errorText": "NS_BINDING_ABORTED"})
    rows = net.log.resources(T0_MS / 1000)
    assert [(r.url, r.error) for r in rows] == [
        ("https://a.h2lab.test/", None),
        ("https://a.h2lab.test/y.png", "NS_ERROR_NET_RESET"),
    ]
    assert [r.url for r in net.log.failed()] == ["https://a.h2lab.test/y.png"]


def test_a_redirect_keeps_its_3xx_as_a_row() -> None:
    net = BidiNetwork()
    first = {"request": _request("1", "https://a.h2lab.test/old", requestTime=1)}
    net.add("network.beforeRequestSent", {**first, "timestamp": T0_MS + 1})
    moved = {**first, "response": _response(status=301, body=0), "timestamp": T0_MS + 30}
    net.add("network.responseStarted", moved)
    net.add("network.responseCompleted", moved)
    again = {"request": _request("1", "https://a.h2lab.test/new", requestTime=31)}
    net.add("network.beforeRequestSent", {**again, "redirectCount": 1, "timestamp": T0_MS + 31})
    done = {**again, "response": _response(), "timestamp": T0_MS + 60}
    net.add("network.responseCompleted", done)
    rows = net.log.resources(T0_MS / 1000)
    assert sorted((r.url, r.status) for r in rows) == [
        ("https://a.h2lab.test/new", 200),
        ("https://a.h2lab.test/old", 301),
    ]


def test_analyse_takes_time_zero_from_the_page() -> None:
    net = BidiNetwork()
    _load(net, "1", "https://a.h2lab.test/", 500, 2, 40)
    _load(net, "2", "https://a.h2lab.test/x.png", 30_000, 50, 120)
    timing = {"timeOrigin": T0_MS, "responseStart": 22.5, "dcl": 45, "loadEventEnd": 130,
              "fcp": 60, "lcp": 125, "connectEnd": 0}  # fmt: skip
    analysis = analyse(RawLoad(timing, net.log), "https://a.h2lab.test/")
    r = analysis.result
    assert (r.ttfb_ms, r.dcl_ms, r.plt_ms, r.fcp_ms, r.lcp_ms) == (22.5, 45, 130, 60, 125)
    assert r.connect_ms is None  # 0: not reported
    assert r.body_bytes == 30_500 and r.response_header_bytes == 240
    assert r.pdt_ms == pytest.approx(118)
    assert r.speed_index_ms is None and r.fp_ms is None
    page = analysis.har["log"]["pages"][0]
    assert page["pageTimings"]["onLoad"] == 130
    assert len(analysis.har["log"]["entries"]) == 2
    assert_valid_har(analysis.har)
    assert page["startedDateTime"] == "2023-11-14T22:13:20.000Z"
    assert analysis.har["log"]["entries"][1]["startedDateTime"] == "2023-11-14T22:13:20.050Z"


def test_bidi_timings_become_the_phases_of_a_request() -> None:
    """A new TLS connection's DNS, connect (TLS in it) and TLS from BiDi's ``timings`` (ms
    since the epoch); a reused connection's set-up (0: not reached) is -1."""
    opened = {
        "requestTime": T0_MS, "dnsStart": T0_MS + 1, "dnsEnd": T0_MS + 2,
        "connectStart": T0_MS + 2, "connectEnd": T0_MS + 62, "tlsStart": T0_MS + 22,
        "requestStart": T0_MS + 63, "responseStart": T0_MS + 100,
    }  # fmt: skip
    assert phases(opened) == Phases(
        dns_ms=1.0, connect_ms=60.0, ssl_ms=40.0, send_start_s=1_700_000_000.063,
        send_end_s=1_700_000_000.063,
    )  # fmt: skip
    reused = {"requestTime": T0_MS, "dnsStart": 0, "dnsEnd": 0, "connectStart": 0,
              "connectEnd": 0, "tlsStart": 0, "requestStart": T0_MS + 1}  # fmt: skip
    got = phases(reused)
    assert (got.dns_ms, got.connect_ms, got.ssl_ms) == (-1, -1, -1)


def test_fully_loaded_with_idle_cls_when_reported_and_no_tbt() -> None:
    net = BidiNetwork()
    _load(net, "1", "https://a.h2lab.test/", 500, 2, 40)
    _load(net, "2", "https://a.h2lab.test/late.json", 100, 900, 1250)  # after the load event
    timing = {"timeOrigin": T0_MS, "loadEventEnd": 130, "fcp": 60, "layoutShifts": None}
    plain = analyse(RawLoad(timing, net.log), "https://a.h2lab.test/").result
    assert plain.fully_loaded_ms is None  # without idle= nobody waited for the network
    assert plain.cls is None and plain.tbt_ms is None  # Firefox reports neither
    idle = analyse(RawLoad(timing, net.log), "https://a.h2lab.test/", idle=True).result
    assert idle.fully_loaded_ms == pytest.approx(1250)
    shifted = {**timing, "layoutShifts": [[100.0, 0.25, False], [300.0, 0.5, True]]}
    assert analyse(RawLoad(shifted, net.log), "https://a.h2lab.test/").result.cls == 0.25


def test_analyse_fails_a_load_that_fetched_nothing() -> None:
    with pytest.raises(TrialFailed, match="fetched nothing"):
        analyse(RawLoad({}, BidiNetwork().log), "https://a.h2lab.test/")


# ------------------------------------------------------------------ WebSocket, CPU, quiet


def test_accept_key_is_rfc_6455s_example() -> None:
    # RFC 6455 section 1.3
    assert accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    digest = hashlib.sha1(("k" + GUID).encode()).digest()
    assert accept_key("k") == base64.b64encode(digest).decode()


@pytest.mark.parametrize("size", [5, 126, 70_000])
def test_client_frames_are_masked_with_the_right_length(size: int) -> None:
    payload = bytes(range(256)) * (size // 256) + bytes(size % 256)
    mask = b"\x01\x02\x03\x04"
    frame = encode_frame(0x1, payload, mask)
    assert frame[0] == 0x81 and frame[1] & 0x80
    if size < 126:
        n, head = frame[1] & 0x7F, 2
    elif size < 1 << 16:
        (n,), head = struct.unpack("!H", frame[2:4]), 4
    else:
        (n,), head = struct.unpack("!Q", frame[2:10]), 10
    assert n == size and frame[head : head + 4] == mask
    body = frame[head + 4 :]
    assert bytes(b ^ mask[i % 4] for i, b in enumerate(body)) == payload


def test_session_cpu_counts_only_the_browsers_processes() -> None:
    def stat(session: int, utime: int, stime: int) -> str:
        # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
        # utime stime
        return f"1 (fire fox) S 1 1 {session} 0 -1 0 0 0 0 0 {utime} {stime} 0 0"

    stats = {1: stat(7, 100, 50), 2: stat(7, 10, 0), 3: stat(8, 999, 999)}
    assert session_cpu_s(7, stats, 100.0) == pytest.approx(1.6)


def test_h3_is_accepted_and_h1p_h2c_are_refused() -> None:
    """h3 against the Go origin is a Firefox protocol; pipelining and cleartext HTTP/2 are
    not, and the refusal says which protocols Firefox runs."""
    validate_factors(
        "e.toml",
        {"protocol": ["h2s", "h3"], "client": ["firefox"], "page": ["synthetic:n=1"],
         "network": ["lan"], "server": ["origin"]},
    )  # fmt: skip
    for protocol in ("h1p", "h2c"):
        with pytest.raises(SpecError, match=rf"firefox cannot run protocol {protocol} \(.*h3"):
            validate_factors(
                "e.toml",
                {"protocol": [protocol], "client": ["firefox"], "page": ["synthetic:n=1"],
                 "network": ["lan"], "server": ["origin"]},
            )  # fmt: skip
