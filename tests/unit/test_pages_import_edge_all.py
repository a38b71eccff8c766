"""WARC edge cases from real captures (issue #31), continued: malformed header lines, and one
capture holding every edge case at once (the builders are test_pages_import_edge.py's)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from h2lab.pages.importers import httphead, import_warc, read_warc
from h2lab.pages.importers.httphead import shown
from h2lab.pages.manifest import Page
from tests.unit.test_pages_import_edge import (
    BEACON,
    CT_JS,
    IDENTICAL_10,
    IDENTICAL_11,
    JS,
    NO_HTML,
    NOT_MODIFIED_11,
    Header,
    body_of,
    http,
    record,
    request,
    response,
    revisit,
    stored,
    write,
)

# --------------------------------------------------------------------------- header lines


def test_malformed_header_lines_are_dropped_with_a_note(tmp_path: Path) -> None:
    long_line = "X-Long" + "\x01" + "v" * 200
    headers: list[Header] = [
        ("Content-Type", "text/html"),
        "X-Broken header without colon",
        ": value",
        ("Bad Name", "v"),
        long_line,
        ("ETag", '"e"'),
        ("Cache-Control", "max-age=60,"),
        " public",  # a continuation line: part of Cache-Control
    ]
    path = write(tmp_path, [response(0, "https://a.test/", "200 OK", headers, b"<p>hi")])
    capture = read_warc(path)
    field = "record 0 https://a.test/"
    assert capture.notes == (
        f"{field}: dropped header line 'X-Broken header without colon' (no colon)",
        f"{field}: dropped header line ': value' (empty header name)",
        f"{field}: dropped header line 'Bad Name: v' (header name is not a token)",
        f"{field}: dropped header line {shown(long_line)} (no colon)",
    )
    assert shown(long_line) == "'X-Long?" + "v" * 72 + "…'"
    home = capture.responses[0]
    assert home.body == b"<p>hi" and home.status == 200
    assert home.headers == (
        ("Content-Type", "text/html"),
        ("ETag", '"e"'),
        ("Cache-Control", "max-age=60, public"),
    )
    res = stored(tmp_path, path)["https://a.test/"]
    assert res.headers == (("etag", '"e"'), ("cache-control", "max-age=60, public"))


def test_header_lines_are_read_like_warcio_does(tmp_path: Path) -> None:
    """A header line that is not UTF-8 is read as ISO-8859-1, as warcio reads it."""
    block = b"HTTP/1.1 200 OK\r\nX-Latin: caf\xe9\r\nX-\xff\r\n\r\nbody"
    path = write(tmp_path, [record("response", 0, "https://a.test/", block)])
    capture = read_warc(path)
    assert capture.responses[0].headers == (("X-Latin", "café"),)
    assert capture.notes == (
        "record 0 https://a.test/: dropped header line 'X-ÿ' (no colon)",
        NO_HTML,
    )


def test_a_bad_status_line_costs_its_record_only(tmp_path: Path) -> None:
    """warcio raises StatusAndHeadersParserException on such a line when told to verify it (and
    would fail the file); read here, it costs only its record."""
    path = write(
        tmp_path,
        [
            response(0, "https://a.test/", "200 OK", [("Content-Type", "text/html")], b"<p>"),
            record("response", 1, "https://a.test/x", b"garbage\x00 status\r\nX: 1\r\n\r\nbody"),
        ],
    )
    assert read_warc(path).notes == (
        "skipped record 1 https://a.test/x: bad HTTP status line 'garbage? status'",
    )


def test_a_head_over_the_cap_skips_its_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(httphead, "MAX_HEAD_BYTES", 100)
    path = write(
        tmp_path,
        [
            response(0, "https://a.test/", "200 OK", [("Content-Type", "text/html")], b"<p>"),
            response(1, "https://a.test/big", "200 OK", [("X-Big", "x" * 200)], b"x"),
        ],
    )
    assert read_warc(path).notes == (
        "skipped record 1 https://a.test/big: HTTP head is longer than 100 bytes",
    )


def test_revisit_head_lines_are_noted_when_its_head_is_served(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [
            response(0, "https://a.test/a.js", "200 OK", [CT_JS], JS, WARC_Payload_Digest="sha1:A"),
            revisit(
                1,
                "https://a.test/b.js",
                IDENTICAL_11,
                http("200 OK", [CT_JS, "garbage"]),
                "1.1",
                WARC_Payload_Digest="sha1:A",
            ),
        ],
    )
    assert read_warc(path).notes == (
        "record 1 https://a.test/b.js: revisit of record 0, served with its body",
        "record 1 https://a.test/b.js: dropped header line 'garbage' (no colon)",
        NO_HTML,
    )


# --------------------------------------------------------------------------- all at once


def everything() -> list[bytes]:
    html = [("Content-Type", "text/html")]
    b = "https://www.b.test"
    app = {"WARC_Payload_Digest": "sha1:APPJS"}
    return [
        record("warcinfo", 0, block=b"software: test\r\n"),
        request(1, "http://a.test/", of=2),
        response(
            2, "http://a.test/", "301 Moved Permanently", [("Location", "https://www.a.test/")]
        ),
        response(3, "https://www.a.test/", "302 Found", [("Location", f"{b}/index.html")]),
        response(4, "https://ads.test/frame.html", "200 OK", html, b"<p>ad"),
        response(
            5,
            f"{b}/index.html",
            "200 OK",
            [*html, "X-Broken header without colon", ": value", ("ETag", '"i"')],
            b"<p>home",
        ),
        response(
            6,
            f"{b}/app.js",
            "200 OK",
            [CT_JS, ("Content-Encoding", "gzip")],
            gzip.compress(JS),
            **app,
        ),
        response(7, f"{b}/copy.js", "304 Not Modified", [("ETag", '"c"')]),
        revisit(
            8,
            f"{b}/copy.js",
            IDENTICAL_11,
            http("200 OK", [CT_JS, ("Cache-Control", "max-age=7")]),
            "1.1",
            WARC_Refers_To_Target_URI=f"{b}/app.js",
            **app,
        ),
        revisit(9, f"{b}/gone.js", IDENTICAL_10, WARC_Payload_Digest="sha1:GONE"),
        revisit(
            10,
            f"{b}/old.css",
            NOT_MODIFIED_11,
            http("304 Not Modified", [("ETag", '"o"')]),
            "1.1",
            WARC_Refers_To_Target_URI=f"{b}/old.css",
        ),
        response(11, f"{b}/logo.png", "304 Not Modified"),
        response(12, f"{b}/logo.png", "200 OK", [("Content-Type", "image/png")], b"\x89PNG"),
        response(13, f"{b}/style.css", "304 Not Modified"),
        response(14, BEACON, "200 OK", [("Content-Type", "image/gif")], b"GIF89a"),
        response(
            15,
            f"{b}/n.css",
            "200 OK",
            [("Content-Type", "text/css"), ("Content-Encoding", "null")],
            b"p{}",
        ),
    ]


def test_one_capture_with_every_edge_case(tmp_path: Path) -> None:
    path = write(tmp_path, everything(), "all.warc.gz")
    capture = read_warc(path)
    b = "https://www.b.test"
    assert capture.notes == (
        f"record 5 {b}/index.html: dropped header line 'X-Broken header without colon' (no colon)",
        f"record 5 {b}/index.html: dropped header line ': value' (empty header name)",
        f"skipped record 7 {b}/copy.js: 304 Not Modified; record 8 serves this URL (status 200)",
        f"record 8 {b}/copy.js: revisit of record 6, served with its body",
        f"skipped record 9 {b}/gone.js: revisit of a response not in this file",
        f"skipped record 10 {b}/old.css: revisit of a response not in this file",
        f"skipped record 11 {b}/logo.png: 304 Not Modified; record 12 serves this URL (status 200)",
        f"skipped record 13 {b}/style.css: 304 Not Modified with no recorded body to serve",
        f"record 15 {b}/n.css: Content-Encoding 'null' unknown: taken as identity",
        "skipped 1 warcinfo record(s)",
    )
    plain = tmp_path / "all.warc"  # not gzipped: the same capture
    plain.write_bytes(b"".join(everything()))
    assert read_warc(plain).notes == capture.notes
    assert read_warc(plain).responses == capture.responses
    page = import_warc(path, root=tmp_path / "pages")
    _check_everything(page)


def _check_everything(page: Page) -> None:
    b = "https://www.b.test"
    assert page.entry.url() == f"{b}/index.html"
    got = {r.url(): (r.status, r.content_type, r.headers) for r in page.resources}
    beacon = {"https://66.102.1.1/beacon": (200, "image/gif", ())}  # served at its address
    assert got == {
        "https://a.test/": (
            301,
            "application/octet-stream",
            (("location", "https://www.a.test/"),),
        ),
        "https://www.a.test/": (
            302,
            "application/octet-stream",
            (("location", f"{b}/index.html"),),
        ),
        "https://ads.test/frame.html": (200, "text/html", ()),
        f"{b}/index.html": (200, "text/html", (("etag", '"i"'),)),
        f"{b}/app.js": (200, "text/javascript", ()),
        f"{b}/copy.js": (200, "text/javascript", (("cache-control", "max-age=7"),)),
        f"{b}/logo.png": (200, "image/png", ()),
        **beacon,
        f"{b}/n.css": (200, "text/css", ()),
    }
    bodies = {r.url(): body_of(page.docroot, r) for r in page.resources if r.size_bytes}
    assert bodies == {
        "https://ads.test/frame.html": b"<p>ad",
        f"{b}/index.html": b"<p>home",
        f"{b}/app.js": JS,
        f"{b}/copy.js": JS,
        f"{b}/logo.png": b"\x89PNG",
        "https://66.102.1.1/beacon": b"GIF89a",
        f"{b}/n.css": b"p{}",
    }
