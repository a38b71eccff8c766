"""h2lab.metrics.nghttp: HAR, frame log and ``-a`` link rules, on output captured in the lab
(nghttp 1.52.0 against nginx 1.22.1 pushing /obj/00000.png, rtt=20ms,rate=20Mbps; request and
response header lists shortened)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from h2lab.metrics.nghttp import (
    NghttpParseError,
    complete_har,
    linked_assets,
    parse_frame_log,
    parse_har,
    unlinked,
)
from tests.har_schema import assert_valid_har

HAR = """{"log": {"version": "1.2", "creator": {"name": "nghttp", "version": "1.52.0"}, "pages":
[{"startedDateTime": "2026-11-22T15:21:20.988Z", "id": "page_0", "title": "", "pageTimings": {}}],
"entries": [{"startedDateTime": "2026-11-22T15:21:20.988Z", "time": 65.277, "comment": "",
"request": {"headers": [{"name": ":method", "value": "GET"}, {"name": ":path", "value":
"/index.html"}], "method": "GET", "url": "https://o1.h2lab.test/index.html", "httpVersion":
"HTTP/2.0", "cookies": [], "queryString": [], "headersSize": -1, "bodySize": -1}, "response":
{"headers": [{"name": ":status", "value": "200"}], "status": 200, "statusText": "",
"httpVersion": "HTTP/2.0", "cookies": [], "content": {"size": 512, "mimeType": "text/html"},
"redirectURL": "", "headersSize": -1, "bodySize": -1}, "cache": {}, "timings": {"dns": 0.223,
"connect": 43.713, "blocked": 0.0, "send": 0.0, "wait": 21.007, "receive": 0.208}, "pageref":
"page_0", "connection": "13"}, {"startedDateTime": "2026-11-22T15:21:21.053Z", "time": 6.744,
"comment": "Pushed Object", "request": {"headers": [{"name": ":method", "value": "GET"},
{"name": ":path", "value": "/obj/00000.png"}], "method": "", "url":
"https://o1.h2lab.test/obj/00000.png", "httpVersion": "HTTP/2.0", "cookies": [],
"queryString": [], "headersSize": -1, "bodySize": -1}, "response": {"headers": [{"name":
":status", "value": "200"}], "status": 200, "statusText": "", "httpVersion": "HTTP/2.0",
"cookies": [], "content": {"size": 10000, "mimeType": "image/png"}, "redirectURL": "",
"headersSize": -1, "bodySize": -1}, "cache": {}, "timings": {"dns": 0.0, "connect": 0.0,
"blocked": 0.0, "send": 0.0, "wait": 5.948, "receive": 0.796}, "pageref": "page_0",
"connection": "2"}, {"startedDateTime": "2026-11-22T15:21:21.053Z", "time": 24.2, "comment":
"", "request": {"headers": [{"name": ":method", "value": "GET"}, {"name": ":path", "value":
"/obj/00002.png"}], "method": "GET", "url": "https://o1.h2lab.test/obj/00002.png",
"httpVersion": "HTTP/2.0", "cookies": [], "queryString": [], "headersSize": -1, "bodySize":
-1}, "response": {"headers": [{"name": ":status", "value": "200"}], "status": 200,
"statusText": "", "httpVersion": "HTTP/2.0", "cookies": [], "content": {"size": 10000,
"mimeType": "image/png"}, "redirectURL": "", "headersSize": -1, "bodySize": -1}, "cache": {},
"timings": {"dns": 0.0, "connect": 0.0, "blocked": 0.0, "send": 0.0, "wait": 24.122,
"receive": 0.077}, "pageref": "page_0", "connection": "15"}]}}"""

FRAMES = """\
[  0.101] send HEADERS frame <length=37, flags=0x25, stream_id=13>
          ; END_STREAM | END_HEADERS | PRIORITY
          (padlen=0, dep_stream_id=11, weight=16, exclusive=0)
          ; Open new stream
          :method: GET
          :path: /index.html
[  0.121] recv SETTINGS frame <length=18, flags=0x00, stream_id=0>
          (niv=3)
          [SETTINGS_MAX_CONCURRENT_STREAMS(0x03):1000]
[  0.122] recv (stream_id=13) :path: /obj/00000.png
[  0.122] recv PUSH_PROMISE frame <length=53, flags=0x04, stream_id=13>
          ; END_HEADERS
          (padlen=0, promised_stream_id=2)
[  0.122] recv (stream_id=13) :status: 200
[  0.122] recv HEADERS frame <length=85, flags=0x04, stream_id=13>
          ; END_HEADERS
          (padlen=0)
          ; First response header
[  0.122] recv DATA frame <length=512, flags=0x01, stream_id=13>
          ; END_STREAM
[  0.122] send HEADERS frame <length=23, flags=0x25, stream_id=15>
          ; END_STREAM | END_HEADERS | PRIORITY
          (padlen=0, dep_stream_id=11, weight=12, exclusive=0)
          ; Open new stream
[  0.128] recv (stream_id=2) :status: 200
[  0.128] recv HEADERS frame <length=87, flags=0x04, stream_id=2>
          ; END_HEADERS
          (padlen=0)
          ; First push response header
[  0.129] recv DATA frame <length=8192, flags=0x00, stream_id=2>
[  0.129] recv DATA frame <length=1808, flags=0x01, stream_id=2>
          ; END_STREAM
[  0.146] recv HEADERS frame <length=87, flags=0x04, stream_id=15>
          ; END_HEADERS
          (padlen=0)
          ; First response header
"""

T0 = datetime(2026, 11, 22, 15, 21, 20, 988000, tzinfo=UTC).timestamp() * 1000


def test_har_entries_times_sizes_and_push() -> None:
    entry, pushed, image = parse_har(HAR)
    assert (entry.url, entry.stream_id, entry.status, entry.body_bytes) == (
        "https://o1.h2lab.test/index.html",
        13,
        200,
        512,
    )
    assert entry.http_version == "HTTP/2.0" and not entry.pushed
    # the request goes out after DNS + connect (+0.126 ms nghttp counts in no phase)
    assert entry.end_ms - T0 == pytest.approx(65.277, abs=1e-3)
    assert entry.ttfb_ms - T0 == pytest.approx(65.277 - 0.208, abs=1e-3)
    assert entry.start_ms - T0 == pytest.approx(65.277 - 0.208 - 21.007, abs=1e-3)
    assert pushed.pushed and pushed.stream_id == 2 and pushed.body_bytes == 10000
    assert pushed.start_ms - T0 == pytest.approx(65.0, abs=1e-3)  # when the PUSH_PROMISE came
    assert pushed.end_ms - T0 == pytest.approx(65 + 6.744, abs=1e-3)
    assert not image.pushed and image.end_ms - T0 == pytest.approx(65 + 24.2, abs=1e-3)


@pytest.mark.parametrize(
    "text", ["", "{}", '{"log": {"entries": [{"url": 1}]}}', HAR.replace("2026-11-22T", "x")]
)
def test_har_malformed_is_a_parse_error(text: str) -> None:
    with pytest.raises(NghttpParseError):
        parse_har(text)


def test_har_without_entries_is_empty() -> None:
    assert parse_har(json.dumps({"log": {"entries": []}})) == ()


def test_frame_log_header_bytes_and_priorities() -> None:
    log = parse_frame_log(FRAMES)
    assert log.request_header_bytes == (37 - 5) + (23 - 5)  # priority fields are not headers
    assert log.response_header_bytes == 85 + 87 + 87  # PUSH_PROMISE is not counted
    assert dict(log.priorities) == {13: "weight=16,dep=11", 15: "weight=12,dep=11"}


def test_frame_log_padding_continuation_and_exclusive() -> None:
    text = """\
[  0.010] send HEADERS frame <length=60, flags=0x28, stream_id=1>
          ; PADDED | PRIORITY
          (padlen=10, dep_stream_id=0, weight=256, exclusive=1)
[  0.010] send CONTINUATION frame <length=7, flags=0x04, stream_id=1>
          ; END_HEADERS
[  0.020] recv HEADERS frame <length=9, flags=0x00, stream_id=1>
          (padlen=0)
"""
    log = parse_frame_log(text)
    assert log.request_header_bytes == 60 - 11 - 5 + 7
    assert log.response_header_bytes == 9
    assert dict(log.priorities) == {1: "weight=256,dep=0,exclusive"}


HTML = """<!doctype html><html><head>
<link rel="stylesheet" href="/a.css"><link rel="preload" href="/p.js" as="script">
<link rel="preload" href="/no-as.js"><link rel="icon" href="/favicon.ico">
<link rel="Shortcut Icon" href="/s.ico"><script src="h.js"></script></head><body>
<img src="//o1.h2lab.test/obj/1.png"><img src="//o2.h2lab.test/obj/2.png"><img src="">
<img src="/obj/1.png"><script src="https://o1.h2lab.test:8443/x.js"></script></body></html>"""


def test_linked_assets_follows_nghttp_rules_same_origin_only() -> None:
    assert linked_assets(HTML, "https://o1.h2lab.test/dir/index.html") == [
        "https://o1.h2lab.test/a.css",
        "https://o1.h2lab.test/p.js",
        "https://o1.h2lab.test/s.ico",
        "https://o1.h2lab.test/dir/h.js",
        "https://o1.h2lab.test/obj/1.png",
    ]


def test_linked_assets_port_must_match() -> None:
    # h2c on :8080: "//host/path" resolves to :80, another origin for nghttp -a
    base = "http://o1.h2lab.test:8080"
    assert linked_assets(HTML, f"{base}/index.html") == [
        f"{base}/a.css", f"{base}/p.js", f"{base}/s.ico", f"{base}/h.js", f"{base}/obj/1.png"
    ]  # fmt: skip


def test_unlinked_is_what_must_be_listed() -> None:
    wanted = ["https://o1.h2lab.test/obj/1.png", "https://o1.h2lab.test/obj/3.png"]
    assert unlinked(wanted, HTML, "https://o1.h2lab.test/") == ["https://o1.h2lab.test/obj/3.png"]


def test_nghttps_own_har_validates_and_is_mended_as_har_1_2() -> None:
    """nghttp 1.52's ``--har`` (with a pushed stream) validates as it is; mended, its
    ``connection`` is the connection's, its reused set-up -1, its times its timings' sums."""
    assert_valid_har(json.loads(HAR))
    mended = complete_har(HAR, "o1.h2lab.test#0")
    assert_valid_har(mended)
    first, pushed, third = mended["log"]["entries"]
    assert {e["connection"] for e in (first, pushed, third)} == {"o1.h2lab.test#0"}
    assert [e["_stream_id"] for e in (first, pushed, third)] == [13, 2, 15]
    assert (first["timings"]["dns"], first["timings"]["connect"]) == (0.223, 43.713)
    assert first["timings"]["blocked"] == pytest.approx(65.277 - 0.223 - 43.713 - 21.007 - 0.208)
    assert (pushed["timings"]["dns"], pushed["timings"]["connect"]) == (-1, -1)
    assert pushed["request"]["method"] == "GET"
    for e in (first, pushed, third):
        t = e["timings"]
        assert sum(v for k, v in t.items() if v >= 0) == pytest.approx(e["time"], abs=0.002)
    assert mended["log"]["pages"][0]["title"] == "https://o1.h2lab.test/index.html"
    # parsed again, the mended HAR tells the same streams
    assert parse_har(json.dumps(mended)) == parse_har(HAR)
    with pytest.raises(NghttpParseError, match="not an nghttp HAR"):
        complete_har('{"log": {}}', "o1.h2lab.test#0")
