"""h2lab.clients.browser.log: browser-neutral network events -> resource rows, HAR and the
lines that name what a failed load was missing. Events are built here, no browser."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from h2lab.clients.browser.log import (
    BodyRead,
    DataReceived,
    NetworkLog,
    Phases,
    Redirect,
    RequestFailed,
    RequestFinished,
    RequestSent,
    ResponseHeaderBytes,
    ResponseStarted,
    ServedFromCache,
    describe_failed,
    describe_unfinished,
    failed_load_har,
    failed_page_requests,
)
from h2lab.pages import Page
from h2lab.pages.synthetic import layout, parse
from tests.har_schema import assert_valid_har

WALL_S = 1_795_000_000.0
"""A wall-clock time (2026-11-18T11:06:40Z) the browser's clock 10.0 s stands for."""


def response(rid: str, **fields: Any) -> ResponseStarted:
    values: dict[str, Any] = {
        "status": 200,
        "protocol": "h2",
        "connection": "42",
        "remote": None,
        "from_cache": False,
        "headers": {},
        "ttfb_s": None,
    }
    return ResponseStarted(request_id=rid, **{**values, **fields})


def synthetic_page(spec: str) -> Page:
    origins, resources, _ = layout(parse(spec))
    return Page(name=spec, origins=origins, resources=resources, docroot=Path("/x"), digest="d")


def test_rows_and_har_of_finished_requests() -> None:
    log = NetworkLog()
    log.add(
        RequestSent(
            "1", "https://o1.h2lab.test/a.png", 10.0, "Low", {"accept": "*/*"}, wall_s=WALL_S
        )
    )
    log.add(response("1", ttfb_s=10.03, remote="10.2.0.1", headers={"server": "x"}))
    log.add(ResponseHeaderBytes("1", 120))
    log.add(DataReceived("1", 600))
    log.add(DataReceived("1", 400))
    log.add(RequestFinished("1", 10.05, 1130))
    log.add(RequestSent("2", "https://o1.h2lab.test/b", 10.01))
    log.add(RequestFailed("2", 10.02, "x"))
    row, failed = log.resources(t0_s=9.99)
    assert (failed.url, failed.error, failed.start_ms) == ("https://o1.h2lab.test/b", "x", 20.0)
    assert row.origin == "o1.h2lab.test"
    assert (row.start_ms, row.ttfb_ms, row.end_ms) == pytest.approx((10.0, 40.0, 60.0))
    assert (row.bytes, row.protocol, row.connection, row.priority) == (1000, "h2", "42", "Low")
    metrics = {"plt_ms": 70.0, "dcl_ms": 50.0, "_frames": 3.0}
    har = log.har("https://o1.h2lab.test/", 9.99, metrics)
    assert_valid_har(har)
    entry, failed_entry = har["log"]["entries"]
    assert failed_entry["request"]["url"] == "https://o1.h2lab.test/b"
    assert failed_entry["_error"] == "x"
    assert entry["startedDateTime"] == "2026-11-18T11:06:40.000Z"
    assert failed_entry["startedDateTime"] == "2026-11-18T11:06:40.010Z"
    assert har["log"]["pages"][0]["startedDateTime"] == "2026-11-18T11:06:39.990Z"
    # no phases from the browser: what it cannot tell is -1, the wait runs from the start
    assert entry["timings"] == {
        "blocked": -1, "dns": -1, "connect": -1, "ssl": -1, "send": 0, "wait": 30.0,
        "receive": 20.0,
    }  # fmt: skip
    assert entry["time"] == 50.0
    assert failed_entry["timings"]["wait"] == 10.0 and failed_entry["time"] == 10.0
    assert entry["connection"] == "42" and entry["serverIPAddress"] == "10.2.0.1"
    assert entry["request"]["headers"] == [{"name": "accept", "value": "*/*"}]
    assert entry["response"]["httpVersion"] == "h2"
    assert (entry["response"]["headersSize"], entry["response"]["_transferSize"]) == (120, 1130)
    assert entry["_priority"] == "Low" and "_error" not in entry
    timings = har["log"]["pages"][0]["pageTimings"]
    assert (timings["onLoad"], timings["onContentLoad"], timings["_plt_ms"]) == (70.0, 50.0, 70.0)
    assert timings["_frames"] == 3.0 and "__frames" not in timings


def test_every_request_of_a_failed_load_with_its_error() -> None:
    log = NetworkLog()
    assert failed_load_har(log, "https://o1.h2lab.test/") is None
    log.add(RequestSent("1", "https://o1.h2lab.test/g", 10.0))
    log.add(RequestFinished("1", 10.05, 0))
    log.add(RequestSent("2", "https://o1.h2lab.test/b", 10.01))
    log.add(RequestFailed("2", 10.02, "x"))
    log.add(RequestSent("3", "https://o1.h2lab.test/c", 10.03))
    every = log.har("https://o1.h2lab.test/", 9.99, {}, every=True)["log"]["entries"]
    assert [(e["request"]["url"][-1], e.get("_error")) for e in every] == [
        ("g", None),
        ("b", "x"),
        ("c", "unfinished"),
    ]
    har = failed_load_har(log, "https://o1.h2lab.test/")
    assert har is not None
    assert_valid_har(har)
    page = har["log"]["pages"][0]
    # the page starts with the first request; no load event: -1
    assert page["startedDateTime"] == har["log"]["entries"][0]["startedDateTime"]
    assert (page["pageTimings"]["onLoad"], page["pageTimings"]["onContentLoad"]) == (-1, -1)
    assert [e.get("_error") for e in har["log"]["entries"]] == [None, "x", "unfinished"]
    assert [e["response"]["status"] for e in har["log"]["entries"]] == [0, 0, 0]


def test_a_redirect_is_its_own_row_with_its_status() -> None:
    log = NetworkLog()
    log.add(RequestSent("1", "https://a.test/old", 1.0, "VeryHigh"))
    moved = Redirect(status=301, protocol="h2", connection="7")
    log.add(RequestSent("1", "https://a.test/new", 1.1, "VeryHigh", redirect=moved))
    log.add(response("1", connection="7"))
    log.add(DataReceived("1", 10))
    log.add(RequestFinished("1", 1.3, 10))
    rows = log.resources(1.0)
    assert [(r.url, r.status, r.connection) for r in rows] == [
        ("https://a.test/old", 301, "7"),
        ("https://a.test/new", 200, "7"),
    ]
    assert [r.end_ms for r in rows] == pytest.approx([100.0, 300.0])
    har = log.har("https://a.test/old", 1.0, {})
    assert_valid_har(har)
    old, new = har["log"]["entries"]
    assert (old["response"]["status"], old["response"]["redirectURL"]) == (
        301,
        "https://a.test/new",
    )
    assert new["response"]["redirectURL"] == ""


def test_events_of_requests_never_sent_are_ignored() -> None:
    log = NetworkLog()
    log.add(DataReceived("9", 10))
    log.add(RequestFinished("9", 1.0, 10))
    assert log.requests == {}


def test_cache_and_response_fields() -> None:
    log = NetworkLog()
    log.add(RequestSent("1", "https://a.test/x", 1.0))
    log.add(ServedFromCache("1"))
    assert log.requests["1"].from_cache
    log.add(response("1", from_cache=False, ttfb_s=None))
    r = log.requests["1"]
    assert not r.from_cache  # the response's word is the last
    assert r.ttfb_s is None and r.status == 200


def test_a_timeout_names_the_requests_still_unfinished() -> None:
    log = NetworkLog()
    assert describe_unfinished(log) == ""
    for i in range(6):
        log.add(RequestSent(str(i), f"https://o1.h2lab.test/{i}.js", 10.0 + i))
    log.add(RequestFinished("0", 11.0, 0))
    log.add(RequestFailed("1", 11.0, "x"))
    log.add(DataReceived("2", 12000))
    assert describe_unfinished(log) == (
        "; 4 of 6 requests unfinished: https://o1.h2lab.test/2.js (12,000 B received), "
        "https://o1.h2lab.test/3.js (0 B received), https://o1.h2lab.test/4.js (0 B received), "
        "and 1 more"
    )


def test_failed_requests_for_the_pages_own_resources_fail_the_load() -> None:
    """Seed 000 Fig. 1(c) sharded on cellular poor: 18 of 30 images failed, the load event
    fired without them, and the trial stored plt 168 s for a 2.6 MB page of 6.5 MB. Only
    failures of the page's own resources count: not a cancel by the page, not a URL the page
    does not have."""
    page = synthetic_page("synthetic:n=4,size=1KB,origins=1")
    log = NetworkLog()
    urls = [r.url() for r in page.resources] + ["https://tracker.example/x.gif"]
    for i, url in enumerate(urls):
        log.add(RequestSent(str(i), url, 10.0 + i))
    log.add(RequestFinished("0", 11.0, 0))
    assert failed_page_requests(log, page) == []
    log.add(RequestFailed("1", 12.0, "net::ERR_ABORTED", cancelled=True))
    log.add(RequestFailed("5", 12.0, "net::ERR_NAME_NOT_RESOLVED"))  # not the page's
    log.add(RequestFailed("3", 12.0, "net::ERR_CONNECTION_TIMED_OUT"))
    log.add(RequestFailed("2", 12.0, "net::ERR_HTTP2_PING_FAILED"))
    failed = failed_page_requests(log, page)
    assert [r.url for r in failed] == [urls[2], urls[3]]
    assert describe_failed(failed, log) == (
        "2 of 6 requests for the page's resources failed: "
        "https://o1.h2lab.test/obj/00001.png (net::ERR_HTTP2_PING_FAILED), "
        "https://o1.h2lab.test/obj/00002.png (net::ERR_CONNECTION_TIMED_OUT)"
    )


def test_har_timings_split_as_the_browser_reports_them() -> None:
    """The request that opened the connection has its DNS, connect (TLS in it) and send; the
    one on the reused connection has -1 there. ``blocked`` is the rest before the send, and
    the timings add up to the request's whole time."""
    log = NetworkLog()
    log.add(RequestSent("1", "https://a.test/", 10.0, wall_s=WALL_S))
    opened = Phases(
        dns_ms=2.0, connect_ms=50.0, ssl_ms=30.0, send_start_s=10.055, send_end_s=10.0555
    )
    log.add(response("1", ttfb_s=10.1, phases=opened))
    log.add(RequestFinished("1", 10.12, 100))
    log.add(RequestSent("2", "https://a.test/x.css", 10.2))
    reused = Phases(send_start_s=10.201, send_end_s=10.201)
    log.add(response("2", ttfb_s=10.25, phases=reused))
    log.add(RequestFinished("2", 10.3, 100))
    har = log.har("https://a.test/", 10.0, {})
    assert_valid_har(har)
    first, second = (e["timings"] for e in har["log"]["entries"])
    assert first == {
        "blocked": 3.0, "dns": 2.0, "connect": 50.0, "ssl": 30.0, "send": 0.5, "wait": 44.5,
        "receive": 20.0,
    }  # fmt: skip
    assert har["log"]["entries"][0]["time"] == pytest.approx(120.0)
    assert second == {
        "blocked": 1.0, "dns": -1, "connect": -1, "ssl": -1, "send": 0.0, "wait": 49.0,
        "receive": 50.0,
    }  # fmt: skip
    assert har["log"]["entries"][1]["time"] == pytest.approx(100.0)


def test_har_fields_of_hars_spec_cookies_query_type_and_bodies() -> None:
    log = NetworkLog()
    headers = {"Cookie": "a=1; b=two"}
    log.add(RequestSent("1", "https://a.test/s?q=h2+lab&e=", 1.0, headers=headers, wall_s=WALL_S))
    set_cookie = "sid=xyz; Path=/; HttpOnly\nlang=en; Expires=Wed, 21 Oct 2026 07:28:00 GMT"
    response_headers = {"content-type": "text/css; charset=utf-8", "set-cookie": set_cookie}
    log.add(response("1", headers=response_headers, remote="[::1]:443", status_text="OK"))
    log.add(DataReceived("1", 3))
    log.add(RequestFinished("1", 1.1, 3))
    log.add(BodyRead("1", "a{}", base64=False))
    log.add(RequestSent("2", "https://a.test/x.png", 1.0))
    log.add(response("2", headers={}, mime_type="image/png"))
    log.add(RequestFinished("2", 1.1, 4))
    log.add(BodyRead("2", "iVBO", base64=True))
    har = log.har("https://a.test/s", 1.0, {})
    assert_valid_har(har)
    css, png = har["log"]["entries"]
    assert css["request"]["cookies"] == [
        {"name": "a", "value": "1"},
        {"name": "b", "value": "two"},
    ]
    assert css["request"]["queryString"] == [
        {"name": "q", "value": "h2 lab"},
        {"name": "e", "value": ""},
    ]
    assert css["response"]["cookies"] == [
        {"name": "sid", "value": "xyz", "path": "/", "httpOnly": True},
        {"name": "lang", "value": "en", "expires": "2026-10-21T07:28:00.000Z"},
    ]
    # repeated headers, one a line in Chromium's report, are one HAR header each
    assert [h["name"] for h in css["response"]["headers"]] == [
        "content-type", "set-cookie", "set-cookie",
    ]  # fmt: skip
    assert css["response"]["content"] == {
        "size": 3, "mimeType": "text/css; charset=utf-8", "text": "a{}",
    }  # fmt: skip
    assert (css["response"]["statusText"], css["serverIPAddress"]) == ("OK", "::1")
    assert css["cache"] == {}
    assert png["response"]["content"] == {
        "size": 0, "mimeType": "image/png", "text": "iVBO", "encoding": "base64",
    }  # fmt: skip
    assert "serverIPAddress" not in png  # no address: left out, as the schema takes only one
