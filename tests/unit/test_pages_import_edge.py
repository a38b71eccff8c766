"""WARC edge cases from real captures (issue #31), each imported as a replay tool would serve
it, with a note: revisit records, 304 Not Modified, a redirect chain across hosts, malformed
header lines (continued, with one capture holding them all, in
test_pages_import_edge_all.py)."""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from pathlib import Path

import pytest

from h2lab.pages.importers import import_warc, read_warc, store
from h2lab.pages.importers.common import Recorded, finish
from h2lab.pages.importers.httphead import read_head
from h2lab.pages.importers.revisits import Found, Revisit, resolve
from h2lab.pages.manifest import Resource
from tests.unit.test_pages_import_hostile import fails

REVISIT = "http://netpreserve.org/warc/{}/revisit/{}"
IDENTICAL_10 = REVISIT.format("1.0", "identical-payload-digest")
IDENTICAL_11 = REVISIT.format("1.1", "identical-payload-digest")
NOT_MODIFIED_10 = REVISIT.format("1.0", "server-not-modified")
NOT_MODIFIED_11 = REVISIT.format("1.1", "server-not-modified")

Header = tuple[str, str] | str  # a str is written as the raw header line


def rid(n: int) -> str:
    return f"<urn:uuid:r{n}>"


def http(statusline: str, headers: Sequence[Header] = (), body: bytes = b"") -> bytes:
    lines = [h if isinstance(h, str) else f"{h[0]}: {h[1]}" for h in headers]
    return "".join(f"{x}\r\n" for x in [f"HTTP/1.1 {statusline}", *lines, ""]).encode() + body


def record(
    rec_type: str, n: int, uri: str = "", block: bytes = b"", version: str = "1.0", **fields: str
) -> bytes:
    """WARC record ``n`` (id ``rid(n)``); ``fields``: more WARC headers, ``_`` for ``-``."""
    head = {
        "WARC-Type": rec_type,
        "WARC-Record-ID": rid(n),
        "WARC-Date": "2024-05-01T10:00:00Z",
        **({"WARC-Target-URI": uri} if uri else {}),
        **{k.replace("_", "-"): v for k, v in fields.items()},
        **({"Content-Type": f"application/http; msgtype={rec_type}"} if block else {}),
        "Content-Length": str(len(block)),
    }
    text = f"WARC/{version}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in head.items()) + "\r\n"
    return text.encode() + block + b"\r\n\r\n"


def response(
    n: int,
    uri: str,
    statusline: str,
    headers: Sequence[Header] = (),
    body: bytes = b"",
    **fields: str,
) -> bytes:
    return record("response", n, uri, http(statusline, headers, body), **fields)


def revisit(
    n: int, uri: str, profile: str, head: bytes = b"", version: str = "1.0", /, **fields: str
) -> bytes:
    return record("revisit", n, uri, head, version, WARC_Profile=profile, **fields)


def request(n: int, uri: str, of: int, method: str = "GET") -> bytes:
    block = f"{method} / HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    return record("request", n, uri, block, WARC_Concurrent_To=rid(of))


def write(tmp_path: Path, records: list[bytes], name: str = "edge.warc.gz") -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(gzip.compress(r, mtime=0) for r in records))
    return path


def stored(tmp_path: Path, path: Path) -> dict[str, Resource]:
    page = import_warc(path, root=tmp_path / "pages")
    return {r.url(): r for r in page.resources}


def body_of(page_root: Path, res: Resource) -> bytes:
    return (page_root / "bodies" / str(res.body_sha256)).read_bytes()


JS = b"console.log('app');" * 20
CT_JS = ("Content-Type", "text/javascript")
NO_HTML = "no HTML response with status 200: entry is the first response"
BEACON = "http://66.102.1.1/beacon"


# --------------------------------------------------------------------------- revisits


@pytest.mark.parametrize(
    ("version", "profile", "link"),
    [
        ("1.0", IDENTICAL_10, {"WARC_Refers_To_Target_URI": "https://a.test/app.js"}),
        ("1.1", IDENTICAL_11, {"WARC_Refers_To_Target_URI": "https://a.test/app.js"}),
        ("1.1", IDENTICAL_11, {"WARC_Refers_To": rid(0)}),
        ("1.0", IDENTICAL_10, {}),  # the payload digest alone finds it
    ],
)
def test_revisit_is_served_with_its_own_head_and_the_original_body(
    tmp_path: Path, version: str, profile: str, link: dict[str, str]
) -> None:
    digest = {"WARC_Payload_Digest": "sha1:APPJS"}
    original = [CT_JS, ("Content-Encoding", "gzip"), ("ETag", '"v1"')]
    own = [("Content-Type", "application/javascript"), ("ETag", '"v2"'), ("Age", "3")]
    path = write(
        tmp_path,
        [
            response(0, "https://a.test/app.js", "200 OK", original, gzip.compress(JS), **digest),
            revisit(
                1,
                "https://a.test/app.js?v=2",
                profile,
                http("203 Non-Authoritative Information", own),
                version,
                **digest,
                **link,
            ),
        ],
    )
    capture = read_warc(path)
    assert (
        capture.notes[0]
        == "record 1 https://a.test/app.js?v=2: revisit of record 0, served with its body"
    )
    copy = capture.responses[1]
    assert (copy.url, copy.status, copy.content_type, copy.body) == (
        "https://a.test/app.js?v=2",
        203,
        "application/javascript",
        JS,
    )
    res = stored(tmp_path, path)["https://a.test/app.js?v=2"]
    assert res.headers == (("etag", '"v2"'),) and res.size_bytes == len(JS)


def test_revisit_without_head_or_with_a_304_takes_the_original_status_and_headers(
    tmp_path: Path,
) -> None:
    target = {"WARC_Refers_To_Target_URI": "https://a.test/app.js"}
    path = write(
        tmp_path,
        [
            response(0, "https://a.test/app.js", "200 OK", [CT_JS, ("ETag", '"v1"')], JS),
            revisit(1, "https://a.test/empty.js", IDENTICAL_10, **target),
            revisit(
                2,
                "https://a.test/nm.js",
                NOT_MODIFIED_11,
                http("304 Not Modified", [("ETag", '"v1"')]),
                "1.1",
                WARC_Refers_To_Date="2024-05-01T10:00:00Z",
                **target,
            ),
        ],
    )
    capture = read_warc(path)
    assert capture.notes == (
        "record 1 https://a.test/empty.js: revisit of record 0, "
        "served with its status, headers and body",
        "record 2 https://a.test/nm.js: revisit of record 0 (304 Not Modified), "
        "served with its status, headers and body",
        NO_HTML,
    )
    res = stored(tmp_path, path)
    for url in ("https://a.test/empty.js", "https://a.test/nm.js"):
        assert (res[url].status, res[url].content_type) == (200, "text/javascript")
        assert res[url].headers == (("etag", '"v1"'),)
        assert res[url].body_sha256 == res["https://a.test/app.js"].body_sha256


def test_server_not_modified_revisit_of_the_same_url(tmp_path: Path) -> None:
    """The usual server-not-modified revisit repeats its own URL: it resolves, and the page keeps
    the one response for that URL (the first recorded)."""
    path = write(
        tmp_path,
        [
            response(
                0, "https://a.test/d.json", "200 OK", [("Content-Type", "application/json")], b"{}"
            ),
            revisit(
                1,
                "https://a.test/d.json",
                NOT_MODIFIED_10,
                http("304 Not Modified", [("Date", "x")]),
                WARC_Refers_To=rid(0),
            ),
        ],
    )
    capture = read_warc(path)
    assert capture.notes == (
        "record 1 https://a.test/d.json: revisit of record 0 (304 Not Modified), "
        "served with its status, headers and body",
        "duplicate GET https://a.test/d.json: kept the first recorded with a body",
        NO_HTML,
    )
    assert [(r.url, r.status, r.body) for r in capture.responses] == [
        ("https://a.test/d.json", 200, b"{}")
    ]


def test_resolve_prefers_the_target_uri_and_date() -> None:
    def found(n: int, uri: str, date: str, body: bytes) -> Found:
        rec = Recorded(uri, "GET", 200, "text/css", (), body)
        return Found(n, f"record {n} {uri}", rid(n), rec, uri, date, "sha1:x")

    responses = [
        found(0, "https://a.test/other.css", "2024", b"a"),
        found(1, "https://a.test/s.css", "2023", b"b"),
        found(2, "https://a.test/s.css", "2024", b"c"),
    ]
    head = read_head(_Lines(http("304 Not Modified", [("ETag", "1")])))
    rev = Revisit(
        3,
        "record 3 u",
        rid(3),
        "https://a.test/u.css",
        head,
        "",
        "https://a.test/s.css",
        "2024",
        "sha1:x",
    )
    served, notes = resolve(rev, responses, {})
    assert (
        served is not None
        and served.response.body == b"c"
        and served.response.url.endswith("u.css")
    )
    assert notes == [
        "record 3 u: revisit of record 2 (304 Not Modified), "
        "served with its status, headers and body"
    ]


class _Lines:
    def __init__(self, data: bytes) -> None:
        self.lines = data.splitlines(keepends=True)

    def readline(self, size: int) -> bytes:
        return self.lines.pop(0)[:size] if self.lines else b""


@pytest.mark.parametrize(
    ("profile", "fields"),
    [
        (IDENTICAL_10, {"WARC_Payload_Digest": "sha1:GONE"}),
        (
            IDENTICAL_11,
            {"WARC_Refers_To": rid(99), "WARC_Refers_To_Target_URI": "https://b.test/x"},
        ),
        (NOT_MODIFIED_11, {"WARC_Refers_To_Target_URI": "https://b.test/x"}),
        # the URL is there but its payload is another one
        (
            IDENTICAL_10,
            {"WARC_Payload_Digest": "sha1:NEW", "WARC_Refers_To_Target_URI": "https://a.test/"},
        ),
    ],
)
def test_revisit_whose_original_is_not_in_the_file_is_skipped(
    tmp_path: Path, profile: str, fields: dict[str, str]
) -> None:
    html = [("Content-Type", "text/html")]
    path = write(
        tmp_path,
        [
            response(0, "https://a.test/", "200 OK", html, b"<p>", WARC_Payload_Digest="sha1:OLD"),
            revisit(1, "https://a.test/r.js", profile, http("200 OK", [CT_JS]), "1.1", **fields),
        ],
    )
    capture = read_warc(path)
    assert capture.notes == (
        "skipped record 1 https://a.test/r.js: revisit of a response not in this file",
    )
    assert [r.url for r in capture.responses] == ["https://a.test/"]


def test_revisit_of_a_skipped_record_says_so(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [
            response(0, "https://a.test/", "200 OK", [("Content-Type", "text/html")], b"<p>"),
            response(1, "https://a.test/z.js", "200 OK", [("Content-Encoding", "gzip")], b"plain"),
            revisit(2, "https://a.test/y.js", IDENTICAL_10, WARC_Refers_To=rid(1)),
        ],
    )
    notes = read_warc(path).notes
    assert notes[0].startswith("skipped record 1 https://a.test/z.js: cannot decode body: gzip")
    assert notes[1:] == (
        "skipped record 2 https://a.test/y.js: revisit of record 1, which was skipped",
    )


def test_a_capture_of_revisits_only_fails_saying_why(tmp_path: Path) -> None:
    path = write(
        tmp_path, [revisit(0, "https://a.test/", IDENTICAL_10, WARC_Payload_Digest="sha1:X")]
    )
    fails(
        tmp_path,
        f"warc:{path}",
        r"no response records \(1 unusable; the first: skipped record 0 https://a.test/: "
        "revisit of a response not in this file",
    )


# --------------------------------------------------------------------------- 304


def test_304_gives_way_to_a_200_of_the_same_url(tmp_path: Path) -> None:
    png = b"\x89PNG" + bytes(50)
    path = write(
        tmp_path,
        [
            response(0, "https://a.test/", "200 OK", [("Content-Type", "text/html")], b"<p>"),
            response(1, "https://a.test/logo.png", "304 Not Modified", [("ETag", '"1"')]),
            response(
                2,
                "https://a.test/logo.png",
                "200 OK",
                [("Content-Type", "image/png"), ("ETag", '"1"')],
                png,
            ),
            response(3, "https://a.test/s.css", "304 Not Modified"),
        ],
    )
    capture = read_warc(path)
    assert capture.notes == (
        "skipped record 1 https://a.test/logo.png: 304 Not Modified; "
        "record 2 serves this URL (status 200)",
        "skipped record 3 https://a.test/s.css: 304 Not Modified with no recorded body to serve",
    )
    logo = stored(tmp_path, path)["https://a.test/logo.png"]
    assert (logo.status, logo.size_bytes, logo.headers) == (200, len(png), (("etag", '"1"'),))


def test_dedupe_lets_a_later_response_replace_a_304() -> None:
    """HAR and folder captures go through the same dedupe: a 304 recorded first loses."""
    first = Recorded("https://a.test/x.js", "GET", 304, "text/javascript", (), b"")
    later = Recorded("https://a.test/x.js", "GET", 200, "text/javascript", (), b"x()")
    capture = finish("har", Path("p.har"), [first, later], None)
    assert capture.responses == (later,)
    assert (
        capture.notes[0]
        == "duplicate GET https://a.test/x.js: kept the later 200 over the 304 Not Modified"
    )


# --------------------------------------------------------------------------- redirects


def test_redirect_chain_across_hosts_leads_to_the_entry(tmp_path: Path) -> None:
    html = [("Content-Type", "text/html; charset=utf-8")]
    path = write(
        tmp_path,
        [
            request(0, "http://a.test/", of=1),
            response(
                1, "http://a.test/", "301 Moved Permanently", [("Location", "https://www.a.test/")]
            ),
            response(2, "https://ads.test/frame.html", "200 OK", html, b"<p>ad"),  # a decoy
            response(
                3, "https://www.a.test/", "302 Found", [("Location", "https://www.b.test/home")]
            ),
            response(4, "https://www.b.test/home", "200 OK", html, b"<p>home"),
        ],
    )
    capture = read_warc(path)
    assert capture.notes == ()
    assert capture.entry_url == "https://www.b.test/home"
    page = store(capture, root=tmp_path / "pages")
    assert page.entry.url() == "https://www.b.test/home"
    hops = {r.url(): (r.status, r.header("location")) for r in page.resources if r.status != 200}
    assert hops == {
        "https://a.test/": (301, "https://www.a.test/"),
        "https://www.a.test/": (302, "https://www.b.test/home"),
    }
    assert page.schemes["a.test"] == "http"
