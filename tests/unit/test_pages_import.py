"""h2lab.pages.importers: the visible corpus (WARC, HAR, Debian doc folder), determinism,
body decoding, entry choice, and small WARC/HAR/folder inputs built in tmp_path."""

from __future__ import annotations

import base64
import gzip
import json
import os
import zlib
from collections import Counter
from pathlib import Path

import brotli
import pytest

from h2lab.net.addresses import valid_hostname
from h2lab.pages import resolve_page
from h2lab.pages.importers import (
    DEFAULT_HOST,
    import_folder,
    import_har,
    import_source,
    import_warc,
    read_folder,
    read_har,
    read_warc,
    store,
)
from h2lab.pages.importers.common import (
    DecodeError,
    Recorded,
    choose_entry,
    dechunk,
    decode_body,
)
from h2lab.pages.manifest import check_bodies, load_page

CORPUS = Path(__file__).resolve().parents[2] / "corpus"  # the shipped real-page corpus
APACHE_MANUAL = Path("/usr/share/doc/apache2-doc/manual")


def leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


# --------------------------------------------------------------------------- corpus

WARC_CASES = [
    # file, response records, stored (first per method+URL, and a POST's body), hosts,
    # statuses, decoded bytes: reddit's two error beacons and yahoo's analytics POSTs to one
    # URL with other bodies are each kept (docs/pages.md, "POSTs")
    ("wikipedia", 6, 6, 1, {200: 6}, 150_082),
    ("baidu", 15, 15, 2, {200: 15}, 588_247),
    ("reddit", 69, 69, 19, {200: 67, 301: 1, 302: 1}, 2_545_907),
    ("yahoo", 185, 179, 10, {200: 172, 204: 6, 302: 1}, 4_650_600),
]


@pytest.mark.parametrize(("stem", "records", "stored", "hosts", "statuses", "size"), WARC_CASES)
def test_corpus_warc_counts(
    stem: str,
    records: int,
    stored: int,
    hosts: int,
    statuses: dict[int, int],
    size: int,
    tmp_path: Path,
) -> None:
    capture = read_warc(CORPUS / "warc" / f"{stem}.warc.gz")
    duplicates = sum(n.startswith("duplicate") for n in capture.notes)
    assert len(capture.responses) == stored
    assert len(capture.responses) + duplicates == records
    assert len(capture.hosts) == hosts
    assert Counter(r.status for r in capture.responses) == statuses
    assert capture.body_bytes == size
    assert capture.entry_url == f"https://www.{stem}.{'org' if stem == 'wikipedia' else 'com'}/"
    page = store(capture, root=tmp_path)
    assert page.name == stem
    assert page.entry.url() == capture.entry_url
    assert page.total_body_bytes == size
    assert check_bodies(page) == []
    assert load_page(page.docroot).digest == page.digest


def test_corpus_warc_redirects_204_and_methods_are_kept(tmp_path: Path) -> None:
    reddit = import_warc(CORPUS / "warc" / "reddit.warc.gz", root=tmp_path)
    moved = next(r for r in reddit.resources if r.status == 301)
    assert moved.url() == "https://reddit.com/static/pixel.png"
    assert moved.header("location") == "https://www.reddit.com/static/pixel.png"
    assert moved.size_bytes == 0
    assert any(r.method == "POST" for r in reddit.resources)
    assert all(
        k != "set-cookie" and k != "strict-transport-security"
        for r in reddit.resources
        for k, _ in r.headers
    )
    yahoo = read_warc(CORPUS / "warc" / "yahoo.warc.gz")
    no_content = [r for r in yahoo.responses if r.status == 204]
    assert len(no_content) == 6 and all(r.body == b"" for r in no_content)
    # brotli bodies are decoded: the home page's scripts are text again
    assert {r.url for r in yahoo.responses if r.body.startswith(b"\x1f\x8b")} == set()


HAR_CASES = [
    # file, entries, stored, hosts, statuses, decoded bytes, entries without a body
    ("mitmproxy-org-safari", 19, 17, 2, {200: 17}, 673_526, 0, "https://mitmproxy.org/"),
    ("http2-github-io", 21, 19, 7, {200: 18, 302: 1}, 542_122, 2, "https://http2.github.io/"),
]


@pytest.mark.parametrize(
    ("stem", "entries", "stored", "hosts", "statuses", "size", "missing", "entry"), HAR_CASES
)
def test_corpus_har_counts(
    stem: str,
    entries: int,
    stored: int,
    hosts: int,
    statuses: dict[int, int],
    size: int,
    missing: int,
    entry: str,
    tmp_path: Path,
) -> None:
    capture = read_har(CORPUS / "har" / f"{stem}.har")
    duplicates = sum(n.startswith("duplicate") for n in capture.notes)
    assert len(capture.responses) == stored
    assert len(capture.responses) + duplicates == entries
    assert len(capture.hosts) == hosts
    assert Counter(r.status for r in capture.responses) == statuses
    assert capture.body_bytes == size
    assert len(capture.missing_bodies) == missing
    assert capture.entry_url == entry
    page = store(capture, root=tmp_path)
    assert page.name == stem
    assert check_bodies(page) == []


def test_corpus_har_keeps_post_and_base64_bodies() -> None:
    capture = read_har(CORPUS / "har" / "http2-github-io.har")
    post = next(r for r in capture.responses if r.method == "POST")
    assert post.status == 302 and not post.body_recorded
    png = next(r for r in capture.responses if r.url == "https://g.twimg.com/Twitter_logo_blue.png")
    assert png.body.startswith(b"\x89PNG") and len(png.body) == 22_689


def test_import_twice_gives_the_same_id_and_leaves_no_temp(tmp_path: Path) -> None:
    warc = CORPUS / "warc" / "baidu.warc.gz"
    first = import_warc(warc, root=tmp_path / "a")
    again = import_warc(warc, root=tmp_path / "a")
    elsewhere = import_warc(warc, name="other", root=tmp_path / "b")
    assert first.digest == again.digest == elsewhere.digest
    assert leftovers(tmp_path / "a") == sorted([first.digest, "names"])
    har = CORPUS / "har" / "mitmproxy-org-safari.har"
    assert import_har(har, root=tmp_path).digest == import_har(har, root=tmp_path).digest


def test_resolve_page_imports_specs_into_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("H2LAB_CACHE", str(tmp_path))
    page = resolve_page(f"warc:{CORPUS / 'warc' / 'wikipedia.warc.gz'}")
    assert page.docroot == tmp_path / "pages" / page.digest
    assert resolve_page("wikipedia").digest == page.digest  # by the name it was stored under
    har = resolve_page(f"har:{CORPUS / 'har' / 'http2-github-io.har'}")
    assert har.name == "http2-github-io"


def test_debian_apache_manual_folder(tmp_path: Path) -> None:
    page = import_source(f"dir:{APACHE_MANUAL}#en/mod/prefork.html", root=tmp_path)
    assert page.origins == (DEFAULT_HOST,)
    assert page.entry.url() == f"https://{DEFAULT_HOST}/en/mod/prefork.html"
    assert page.entry.content_type == "text/html"
    assert page.name == "manual-prefork"
    targets = {r.target: r for r in page.resources}
    assert targets["/style/css/manual.css"].content_type == "text/css"
    assert targets["/images/feather.png"].content_type == "image/png"
    assert targets["/"].body_sha256 == targets["/index.html"].body_sha256
    assert 2_000 < len(page.resources) < 5_000


# --------------------------------------------------------------------------- decoding


BODY = b"<!doctype html><title>x</title>" + bytes(range(256)) * 40


def chunked(data: bytes, size: int = 1000) -> bytes:
    parts = [
        b"%x;ext=1\r\n%s\r\n" % (len(data[i : i + size]), data[i : i + size])
        for i in range(0, len(data), size)
    ]
    return b"".join(parts) + b"0\r\nX-Trailer: 1\r\n\r\n"


@pytest.mark.parametrize(
    ("raw", "te", "ce"),
    [
        (BODY, None, None),
        (gzip.compress(BODY), None, "gzip"),
        (gzip.compress(BODY[:100]) + gzip.compress(BODY[100:]), None, "x-gzip"),  # 2 members
        (zlib.compress(BODY), None, "deflate"),
        (zlib.compress(BODY)[2:-4], None, "deflate"),  # raw deflate, as some servers send
        (brotli.compress(BODY), None, "br"),
        (chunked(BODY), "chunked", None),
        (chunked(gzip.compress(BODY)), "chunked", "gzip"),
        (chunked(brotli.compress(gzip.compress(BODY))), "Chunked", "gzip, br"),
        (gzip.compress(BODY), "chunked", "gzip"),  # recorded de-chunked, header kept
        (BODY, None, "identity"),
    ],
)
def test_decode_body(raw: bytes, te: str | None, ce: str | None) -> None:
    assert decode_body(raw, te, ce, 10**6) == BODY


def test_decode_empty_body_ignores_codings() -> None:
    assert decode_body(b"", "chunked", "gzip", 100) == b""
    assert decode_body(b"0\r\n\r\n", "chunked", "br", 100) == b""


@pytest.mark.parametrize(
    ("raw", "te", "ce", "message"),
    [
        (gzip.compress(BODY)[:-20], None, "gzip", "truncated"),
        (b"not gzip at all", None, "gzip", "gzip"),
        (brotli.compress(BODY)[:-5], None, "br", "br"),
        (BODY, None, "compress", "unsupported coding"),
        (chunked(BODY)[:500], "chunked", None, "inside a chunk"),
        (b"5\r\nhello\r\n", "chunked", None, "before its last chunk"),
        (gzip.compress(bytes(10**6)), None, "gzip", "more than"),  # a small bomb
        (brotli.compress(bytes(10**6)), None, "br", "more than"),
    ],
)
def test_decode_body_errors(raw: bytes, te: str | None, ce: str | None, message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        decode_body(raw, te, ce, 100_000)


def test_dechunk_accepts_bare_lf() -> None:
    assert dechunk(b"3\nabc\n2\nde\n0\n\n") == b"abcde"


@pytest.mark.parametrize(
    ("host", "ok"),
    [
        ("www.example.com", True),
        ("a-b_c.example", True),
        ("localhost", True),
        ("", False),
        ("-a.com", False),
        ("a-.com", False),
        ("10.0.0.1", False),
        ("[::1]", False),
        ("exa mple.com", False),
        ("éxample.com", False),
        ("example.com\n", False),
        ("a..com", False),
        ("com.", False),
        ("x" * 64 + ".com", False),
        (("a" * 60 + ".") * 5 + "com", False),
    ],
)
def test_valid_hostname(host: str, ok: bool) -> None:
    assert valid_hostname(host) is ok


def rec(url: str, status: int = 200, ctype: str = "text/html", location: str = "") -> Recorded:
    headers = (("Location", location),) if location else ()
    return Recorded(url, "GET", status, ctype, headers, b"")


def test_entry_follows_redirects_to_html() -> None:
    responses = (
        rec("http://a.test/", 301, location="https://www.a.test/"),
        rec("https://cdn.a.test/x.js", ctype="text/javascript"),
        rec("https://www.a.test/", 302, location="/home?x=1"),
        rec("https://www.a.test/home?x=1", ctype="text/html; charset=utf-8"),
        rec("https://www.a.test/other.html"),
    )
    assert choose_entry(responses, "http://a.test/") == ("https://www.a.test/home?x=1", [])


def test_entry_falls_back_to_first_html() -> None:
    loop = (
        rec("https://a.test/", 302, location="/b"),
        rec("https://a.test/b", 302, location="/"),
        rec("https://a.test/c.css", ctype="text/css"),
        rec("https://a.test/page.html"),
    )
    entry, notes = choose_entry(loop, "https://a.test/")
    assert entry == "https://a.test/page.html" and "first HTML" in notes[0]
    entry, notes = choose_entry(loop[2:3], None)
    assert entry == "https://a.test/c.css" and "no HTML" in notes[0]


# --------------------------------------------------------------------------- small WARCs


def warc_record(rec_type: str, uri: str, rec_id: str, block: bytes, extra: str = "") -> bytes:
    head = (
        f"WARC/1.0\r\nWARC-Type: {rec_type}\r\nWARC-Record-ID: <urn:uuid:{rec_id}>\r\n"
        f"WARC-Target-URI: {uri}\r\nWARC-Date: 2018-02-09T20:30:34Z\r\n{extra}"
        f"Content-Type: application/http; msgtype={rec_type}\r\n"
        f"Content-Length: {len(block)}\r\n\r\n"
    )
    return head.encode() + block + b"\r\n\r\n"


def warc_bytes(
    records: list[tuple[str, str, list[tuple[str, str]], bytes]],
    *,
    compress: bool = True,
    requests: dict[str, str] | None = None,
) -> bytes:
    """A WARC (gzip per record if ``compress``) of response records (uri, status line,
    headers, raw body), each followed by a request record if ``requests`` names its method."""
    out = []
    for i, (uri, statusline, headers, raw) in enumerate(records):
        http = f"HTTP/1.1 {statusline}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
        out.append(warc_record("response", uri, f"r{i}", http.encode() + b"\r\n" + raw))
        method = (requests or {}).get(uri)
        if method:
            req = f"{method} / HTTP/1.1\r\nHost: x\r\n\r\n".encode()
            link = f"WARC-Concurrent-To: <urn:uuid:r{i}>\r\n"
            out.append(warc_record("request", uri, f"q{i}", req, link))
    return b"".join(gzip.compress(r, mtime=0) if compress else r for r in out)


HTML = b"<html><img src=/a.png></html>"


def small_site() -> list[tuple[str, str, list[tuple[str, str]], bytes]]:
    return [
        ("http://example.test/", "301 Moved", [("Location", "https://www.example.test/")], b""),
        (
            "https://www.example.test/",
            "200 OK",
            [
                ("Content-Type", "text/html"),
                ("Transfer-Encoding", "chunked"),
                ("Content-Encoding", "gzip"),
                ("Set-Cookie", "a=b"),
                ("Cache-Control", "max-age=60"),
                ("Connection", "keep-alive"),
            ],
            chunked(gzip.compress(HTML), 7),
        ),
        (
            "https://img.example.test/a.png?v=2",
            "200 OK",
            [("Content-Type", "image/png"), ("Content-Encoding", "br")],
            brotli.compress(b"\x89PNG" + bytes(300)),
        ),
        ("https://www.example.test/beacon", "204 No Content", [("Content-Encoding", "gzip")], b""),
    ]


def test_small_warc_decodes_and_keeps_what_replay_needs(tmp_path: Path) -> None:
    path = tmp_path / "site.warc.gz"
    path.write_bytes(warc_bytes(small_site(), requests={"https://www.example.test/beacon": "POST"}))
    capture = read_warc(path)
    assert capture.entry_url == "https://www.example.test/"  # after the 301
    assert [r.body for r in capture.responses] == [b"", HTML, b"\x89PNG" + bytes(300), b""]
    assert [r.method for r in capture.responses] == ["GET", "GET", "GET", "POST"]
    page = store(capture, root=tmp_path / "pages")
    assert page.name == "site"
    home = page.entry
    assert home.headers == (("cache-control", "max-age=60"),)
    assert home.content_type == "text/html"
    png = next(r for r in page.resources if r.origin == "img.example.test")
    assert png.query == "v=2" and png.size_bytes == 304
    assert page.resources[0].header("location") == "https://www.example.test/"
    assert page.schemes["example.test"] == "http"


def test_uncompressed_warc_reads_too(tmp_path: Path) -> None:
    path = tmp_path / "plain.warc"
    path.write_bytes(warc_bytes(small_site(), compress=False))
    assert len(read_warc(path).responses) == 4


def test_small_inputs_are_deterministic(tmp_path: Path) -> None:
    path = tmp_path / "site.warc"
    path.write_bytes(warc_bytes(small_site(), compress=False))
    ids = {import_warc(path, root=tmp_path / f"r{i}").digest for i in range(2)}
    copy = tmp_path / "copy.warc"
    copy.write_bytes(path.read_bytes())
    ids.add(import_warc(copy, root=tmp_path / "r2").digest)
    assert len(ids) == 1


# --------------------------------------------------------------------------- small HARs


def har_entry(
    url: str, text: str | None, *, status: int = 200, mime: str = "text/html", b64: bool = False
) -> dict[str, object]:
    content: dict[str, object] = {"mimeType": mime, "size": 0}
    if text is not None:
        content["text"] = text
    if b64:
        content["encoding"] = "base64"
    return {
        "pageref": "p1",
        "request": {"method": "GET", "url": url, "headers": []},
        "response": {
            "status": status,
            "headers": [{"name": "Content-Type", "value": mime}, {"name": "ETag", "value": '"1"'}],
            "content": content,
        },
    }


def write_har(path: Path, entries: list[dict[str, object]]) -> Path:
    path.write_text(json.dumps({"log": {"pages": [{"id": "p1"}], "entries": entries}}))
    return path


def test_small_har(tmp_path: Path) -> None:
    png = b"\x89PNG\r\n" + bytes(range(50))
    path = write_har(
        tmp_path / "small.har",
        [
            har_entry("https://a.test/", "<p>é</p>", mime="text/html; charset=iso-8859-1"),
            har_entry(
                "https://b.test/i.png", base64.b64encode(png).decode(), mime="image/png", b64=True
            ),
            har_entry("https://b.test/gone", None, status=0),
            har_entry("https://b.test/x.js", None, mime="text/javascript"),
            har_entry("https://b.test/x.js", "late()", mime="text/javascript"),
            har_entry("https://a.test/u", "€", mime="text/plain; charset=latin-1"),
        ],
    )
    capture = read_har(path)
    bodies = {r.url: r.body for r in capture.responses}
    assert bodies["https://a.test/"] == "<p>é</p>".encode("latin-1")
    assert bodies["https://b.test/i.png"] == png
    assert bodies["https://b.test/x.js"] == b"late()"  # the duplicate with a body wins
    assert "https://b.test/gone" not in bodies
    euro = next(r for r in capture.responses if r.url == "https://a.test/u")
    assert euro.body == "€".encode() and euro.content_type == "text/plain; charset=utf-8"
    assert any("status 0" in n for n in capture.notes)
    page = store(capture, root=tmp_path / "pages")
    assert page.entry.url() == "https://a.test/" and page.entry.header("etag") == '"1"'


# --------------------------------------------------------------------------- folders


def make_site(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "index.html").write_text("<a href=sub/>sub</a>")
    (root / "sub" / "index.html").write_text("<p>sub</p>")
    (root / "sub" / "app.js").write_text("x()")
    (root / "style.CSS").write_text("p{}")
    (root / "data.weird-ext").write_bytes(b"\0")
    (root / "a b#c.html").write_text("odd name")
    return root


def test_folder_single_origin(tmp_path: Path) -> None:
    site = make_site(tmp_path / "mysite")
    page = import_folder(site, root=tmp_path / "pages")
    assert page.origins == (DEFAULT_HOST,)
    assert page.name == "mysite"
    types = {r.target: r.content_type for r in page.resources}
    assert types == {
        "/a%20b%23c.html": "text/html",
        "/data.weird-ext": "application/octet-stream",
        "/index.html": "text/html",
        "/": "text/html",
        "/style.CSS": "text/css",
        "/sub/app.js": "text/javascript",
        "/sub/index.html": "text/html",
        "/sub/": "text/html",
    }
    assert page.entry.target == "/index.html"
    other = import_folder(site, "sub/app.js", host="Docs.Example", root=tmp_path / "pages")
    assert other.entry.url() == "https://docs.example/sub/app.js"
    assert other.name == "mysite-app"


def test_folder_wget_mirror_has_one_origin_per_host_dir(tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    (mirror / "www.example.com" / "css").mkdir(parents=True)
    (mirror / "cdn.example.net").mkdir()
    (mirror / "www.example.com" / "index.html").write_text("<p>home</p>")
    (mirror / "www.example.com" / "css" / "site.css").write_text("p{}")
    (mirror / "cdn.example.net" / "lib.js?v=3").write_text("lib()")
    capture = read_folder(mirror)
    assert capture.entry_url == "https://www.example.com/index.html"
    assert set(capture.hosts) == {"www.example.com", "cdn.example.net"}
    assert "https://cdn.example.net/lib.js?v=3" in {r.url for r in capture.responses}
    assert read_folder(mirror, "cdn.example.net/lib.js?v=3").entry_url.endswith("lib.js?v=3")


def test_folder_symlinks_inside_are_followed_outside_skipped(tmp_path: Path) -> None:
    site = make_site(tmp_path / "site")
    (site / "alias.js").symlink_to("sub/app.js")
    (site / "loop").symlink_to(".")
    secret = tmp_path / "secret.txt"
    secret.write_text("password")
    assert "https://site.h2lab.test/alias.js" in {r.url for r in read_folder(site).responses}
    (site / "leak.txt").symlink_to(secret)
    (site / "up").symlink_to("..")
    capture = read_folder(site)
    assert b"password" not in {r.body for r in capture.responses}
    assert "skipped leak.txt: symlink leads out of the folder" in capture.notes
    assert "skipped up: symlink leads out of the folder" in capture.notes
    followed = read_folder(site, follow_symlinks=True)
    assert b"password" in {r.body for r in followed.responses}


def test_folder_skips_fifos(tmp_path: Path) -> None:
    site = make_site(tmp_path / "site")
    os.mkfifo(site / "pipe")
    capture = read_folder(site)
    assert any("pipe: not a regular file" in n for n in capture.notes)
