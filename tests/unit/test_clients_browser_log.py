"""h2lab.clients.browser_log: browser-neutral network events -> resource rows, HAR and the
lines that name what a failed load was missing. Events are built here, no browser."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from h2lab.clients.browser_log import (
    DataReceived,
    NetworkLog,
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
    log.add(RequestSent("1", "https://o1.h2lab.test/a.png", 10.0, "Low", {"accept": "*/*"}))
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
    har = log.har("https://o1.h2lab.test/", 9.99, {"plt_ms": 70.0, "dcl_ms": 50.0})
    entry, failed_entry = har["log"]["entries"]
    assert failed_entry["request"]["url"] == "https://o1.h2lab.test/b"
    assert failed_entry["_error"] == "x"
    assert entry["startedDateTime"] == "+10.000ms"
    assert entry["timings"]["wait"] == pytest.approx(30.0)
    assert entry["timings"]["receive"] == pytest.approx(20.0)
    assert entry["connection"] == "42" and entry["serverIPAddress"] == "10.2.0.1"
    assert entry["request"]["headers"] == [{"name": "accept", "value": "*/*"}]
    assert entry["response"]["httpVersion"] == "h2"
    assert (entry["response"]["headersSize"], entry["response"]["_transferSize"]) == (120, 1130)
    assert entry["_priority"] == "Low" and "_error" not in entry
    timings = har["log"]["pages"][0]["pageTimings"]
    assert (timings["onLoad"], timings["onContentLoad"], timings["_plt_ms"]) == (70.0, 50.0, 70.0)


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
    assert har["log"]["entries"][0]["startedDateTime"] == "+0.000ms"  # from the first request
    assert [e.get("_error") for e in har["log"]["entries"]] == [None, "x", "unfinished"]


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
