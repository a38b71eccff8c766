"""h2lab.record.log: DevTools Network events -> recorded responses (redirect hops, bodies
in base64 or text, failures, header filtering), and the checks of a URL to record."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import pytest

from h2lab.errors import SpecError
from h2lab.record.log import (
    RecordLog,
    build_recording,
    check_record_url,
    describe_in_flight,
    devtools_body,
    navigation_failure,
    response_headers,
)

A = "https://www.a.test"
B = "https://cdn.b.test"


class Script:
    """Feeds a RecordLog the events of a load, as Chromium would send them."""

    def __init__(self) -> None:
        self.log = RecordLog()
        self.fetch: list[tuple[str, str]] = []
        """(request id, session) of each body the log asked for"""

    def event(self, method: str, params: Mapping[str, Any], session: str = "page") -> None:
        rid = self.log.add(session, method, params)
        if rid is not None:
            self.fetch.append((rid, session))

    def sent(self, rid: str, url: str, *, session: str = "page", **extra: Any) -> None:
        request = {"url": url, "method": extra.pop("method", "GET"), "headers": {"Accept": "*/*"}}
        request.update(extra.pop("request", {}))
        self.event("Network.requestWillBeSent", {"requestId": rid, "request": request, **extra},
                   session)  # fmt: skip

    def response(self, rid: str, status: int, headers: Mapping[str, str], **kw: Any) -> None:
        session = kw.pop("session", "page")
        resp = {"status": status, "headers": dict(headers), **kw}
        self.event("Network.responseReceived", {"requestId": rid, "response": resp}, session)

    def done(self, rid: str, body: bytes | None = None, session: str = "page") -> None:
        if body:
            self.event("Network.dataReceived", {"requestId": rid, "dataLength": len(body)}, session)
        self.event("Network.loadingFinished", {"requestId": rid}, session)

    def body(self, rid: str, body: bytes) -> None:
        answer = {"body": base64.b64encode(body).decode(), "base64Encoded": True}
        self.log.set_body(rid, answer)


def small_load() -> Script:
    """A document reached by a 301, a script on another host, a 204 beacon, a failed image."""
    s = Script()
    s.sent("1", f"{A}/old")
    s.sent("1", f"{A}/", redirectResponse={"status": 301, "statusText": "Moved Permanently",
           "headers": {"Location": "/", "Content-Length": "0"}})  # fmt: skip
    s.response("1", 200, {"content-type": "text/html", "content-encoding": "gzip",
               "link": "</a.js>; rel=preload\n</b.css>; rel=preload"})  # fmt: skip
    s.log.document_id = "1"
    s.done("1", b"<html>hi</html>")
    s.body("1", b"<html>hi</html>")
    s.sent("2", f"{B}/a.js")
    s.response("2", 200, {"Content-Type": "text/javascript", "Cache-Control": "max-age=9"},
               session="frame")  # fmt: skip
    s.done("2", b"var a;", session="frame")
    s.log.set_body("2", {"body": "var a;", "base64Encoded": False})
    s.sent("3", f"{A}/beacon", method="POST", request={"postData": "x=1"})
    s.response("3", 204, {})
    s.done("3")
    s.sent("4", f"{A}/img.png")
    s.event("Network.loadingFailed", {"requestId": "4", "errorText": "net::ERR_FAILED"})
    s.sent("5", "data:,")
    s.done("5")
    return s


def test_a_load_becomes_one_response_per_hop() -> None:
    s = small_load()
    assert s.fetch == [("1", "page"), ("2", "frame")]  # no body for the 204, the redirect
    rec = build_recording(f"{A}/old", s.log)
    got = [(r.method, r.url, r.status, r.body) for r in rec.responses]
    assert got == [
        ("GET", f"{A}/old", 301, b""),
        ("GET", f"{A}/", 200, b"<html>hi</html>"),
        ("GET", f"{B}/a.js", 200, b"var a;"),
        ("POST", f"{A}/beacon", 204, b""),
    ]
    old, doc, script, beacon = rec.exchanges
    assert old.response.headers == (("Location", "/"),)  # Content-Length dropped
    assert old.status_text == "Moved Permanently"
    assert doc.response.content_type == "text/html"
    assert doc.response.headers == (
        ("content-type", "text/html"),
        ("link", "</a.js>; rel=preload"),
        ("link", "</b.css>; rel=preload"),
    )
    assert script.response.content_type == "text/javascript"
    assert beacon.request_body == b"x=1" and beacon.status_text == "No Content"
    assert rec.entry_url == f"{A}/"  # the redirect followed
    assert rec.hosts == ("www.a.test", "cdn.b.test")
    assert rec.body_bytes == len(b"<html>hi</html>var a;")
    assert rec.notes == (f"not recorded: {A}/img.png failed in Chromium (net::ERR_FAILED)",)


def test_a_body_chromium_did_not_keep_is_empty_with_a_note() -> None:
    s = Script()
    s.sent("1", f"{A}/")
    s.response("1", 200, {"content-type": "text/html"})
    s.done("1", b"<p>x</p>")
    s.log.set_body_error("1", "No resource with given identifier found")
    (r,) = build_recording(f"{A}/", s.log).responses
    assert r.body == b"" and not r.body_recorded
    assert "kept no body (No resource with given identifier found)" in " ".join(
        build_recording(f"{A}/", s.log).notes
    )


def test_unfinished_and_304_responses_are_left_out_with_notes() -> None:
    s = Script()
    s.sent("1", f"{A}/")
    s.response("1", 200, {"content-type": "text/html"})
    s.done("1", b"x")
    s.body("1", b"x")
    s.sent("2", f"{A}/poll")
    s.sent("3", f"{A}/cond")
    s.response("3", 304, {})
    s.done("3")
    assert describe_in_flight(s.log) == f"1 request(s) unfinished: {A}/poll"
    rec = build_recording(f"{A}/", s.log)
    assert [r.url for r in rec.responses] == [f"{A}/"]
    assert any("/poll was unfinished" in n for n in rec.notes)
    assert any("/cond answered 304" in n for n in rec.notes)


def test_a_second_target_seeing_the_same_request_does_not_make_a_second_hop() -> None:
    s = Script()
    s.sent("w", f"{A}/worker.js")
    s.sent("w", f"{A}/worker.js", session="worker")
    s.response("w", 200, {"content-type": "text/javascript"}, session="worker")
    s.done("w", b"onmessage=1", session="worker")
    assert len(s.log.hops) == 1
    assert s.fetch == [("w", "worker")]
    assert s.log.sessions_of("w") == ["worker", "page"]


def test_an_error_document_is_recorded_with_a_note() -> None:
    s = Script()
    s.sent("1", f"{A}/gone")
    s.log.document_id = "1"
    s.response("1", 404, {"content-type": "text/html"})
    s.done("1", b"nope")
    s.body("1", b"nope")
    rec = build_recording(f"{A}/gone", s.log)
    assert [(r.status, r.body) for r in rec.responses] == [(404, b"nope")]
    assert rec.entry_url == f"{A}/gone"
    assert any("answered 404: recorded as it is" in n for n in rec.notes)


def test_nothing_storable_is_an_error_naming_the_url() -> None:
    s = Script()
    s.sent("1", f"{A}/")
    s.event("Network.loadingFailed", {"requestId": "1", "errorText": "net::ERR_ABORTED"})
    with pytest.raises(SpecError, match=r"https://www.a.test/: Chromium received no response"):
        build_recording(f"{A}/", s.log)


def test_header_filtering() -> None:
    notes: list[str] = []
    raw = {
        "Content-Type": "text/css",
        "Content-Encoding": "br",
        "Transfer-Encoding": "chunked",
        "content-length": "12",
        "Set-Cookie": "a=1\nb=2",
        "X-Bad Name": "v",
        "X-Ctl": "a\x01b",
        "X-Utf": "caf\u00e9",
        "Vary": "  Accept-Encoding ",
    }
    assert response_headers(raw, notes, "https://a.test/x") == (
        ("Content-Type", "text/css"),
        ("Set-Cookie", "a=1"),
        ("Set-Cookie", "b=2"),
        ("Vary", "Accept-Encoding"),
    )
    assert notes == ["https://a.test/x: dropped header 'X-Utf': its value is not ASCII"]


def test_devtools_bodies_are_bytes_again() -> None:
    raw = bytes(range(256))
    assert devtools_body({"body": base64.b64encode(raw).decode(), "base64Encoded": True}, "", 256) \
        == (raw, "")  # fmt: skip
    assert devtools_body({"body": "caf\u00e9"}, "", 5) == ("caf\u00e9".encode(), "")
    assert devtools_body({"body": "caf\u00e9"}, "windows-1252", 4) == (b"caf\xe9", "")
    # no charset named: the guess whose size is what Chromium received
    assert devtools_body({"body": "body{}"}, "", 9) == (b"\xef\xbb\xbfbody{}", "")  # a BOM
    assert devtools_body({"body": "caf\u00e9 \u20ac"}, "", 6) == (b"caf\xe9 \x80", "")
    body, note = devtools_body({"body": "\ufffd"}, "", 1)  # an invalid byte Chromium replaced
    assert body == "\ufffd".encode() and note == (
        "Chromium returned this body as text that is 3 B in utf-8, it received 1 B: not byte "
        "for byte the server's"
    )
    body, note = devtools_body({"body": "\u0416"}, "iso-8859-1", 2)  # not in latin-1
    assert body == "\u0416".encode() and note == ""
    assert devtools_body({"body": "x"}, "no-such-charset", 0) == (b"x", "")
    body, note = devtools_body({"body": ""}, "", 0)
    assert (body, note) == (b"", "")
    empty = {"body": "", "base64Encoded": True}
    assert "keeps no data of an image" in devtools_body(empty, "", 100)[1]


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://x", "only http:// and https:// URLs can be recorded (scheme 'ftp')"),
        ("file:///etc/passwd", "only http:// and https:// URLs can be recorded (scheme 'file')"),
        ("www.a.test", "only http:// and https:// URLs can be recorded (no scheme)"),
        ("javascript:alert(1)", "can be recorded (scheme 'javascript')"),
        ("http://127.0.0.1:8000/", "host 127.0.0.1 cannot be an origin: a loopback address"),
        ("https://b\u00fccher.de/", "is not a valid hostname"),
        ("https://a.test/a b", "URL has spaces or control characters"),
    ],
)
def test_urls_that_cannot_be_recorded_are_refused(url: str, why: str) -> None:
    with pytest.raises(SpecError) as info:
        check_record_url(url)
    line = info.value.line()
    assert line.startswith(f"command line: URL: {url}: ") and why in line
    assert "\n" not in line


def test_a_url_that_can_be_recorded_loses_its_fragment() -> None:
    assert check_record_url("https://www.a.test/p?q=1#top") == "https://www.a.test/p?q=1"
    assert check_record_url("HTTP://www.a.test") == "http://www.a.test"


def test_navigation_failures_name_the_reason() -> None:
    err = navigation_failure("https://x.test/", "net::ERR_NAME_NOT_RESOLVED")
    assert err is not None
    assert err.line() == (
        "command line: URL: https://x.test/: its host name does not resolve "
        "(net::ERR_NAME_NOT_RESOLVED)"
    )
    refused = navigation_failure("https://x.test/", "net::ERR_CONNECTION_REFUSED")
    assert refused is not None and "refused the connection" in refused.line()
    odd = navigation_failure("https://x.test/", "net::ERR_SOMETHING")
    assert odd is not None and odd.line().endswith("Chromium: net::ERR_SOMETHING")
    assert navigation_failure("https://x.test/", "") is None
    assert navigation_failure("https://x.test/", "net::ERR_HTTP_RESPONSE_CODE_FAILURE") is None
