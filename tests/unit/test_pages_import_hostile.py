"""h2lab.pages.importers on hostile input: truncated and foreign files, bad URLs and
entries, limits, a page whose one bad record or entry is skipped with a note (split from
test_pages_import.py, whose small WARC, HAR and folder builders it uses)."""

from __future__ import annotations

import gzip
import os
import re
import tempfile
from pathlib import Path

import pytest

from h2lab.errors import SpecError
from h2lab.pages.importers import (
    import_folder,
    import_source,
    read_har,
    read_warc,
)
from h2lab.pages.importers.common import (
    check_url,
)
from h2lab.pages.importers.folder import content_type_for
from tests.unit.test_pages_import import (
    har_entry,
    leftovers,
    make_site,
    small_site,
    warc_bytes,
    write_har,
)


def fails(tmp_path: Path, spec: str, message: str) -> SpecError:
    """Import ``spec`` into a fresh root; it must fail naming the input, leaving nothing."""
    root = tmp_path / "pages"
    with pytest.raises(SpecError, match=message) as info:
        import_source(spec, root=root)
    assert leftovers(root) == []  # no page, no alias, no .tmp-* folder
    assert "\n" not in str(info.value)
    return info.value


def test_warc_truncated(tmp_path: Path) -> None:
    data = warc_bytes(small_site(), compress=False)
    cut = tmp_path / "cut.warc"
    body_at = data.index(b"Content-Encoding: br\r\n\r\n") + 24
    cut.write_bytes(data[: body_at + 5])  # inside the third record's body
    err = fails(tmp_path, f"warc:{cut}", "truncated")
    assert err.source == str(cut) and err.field.startswith("record 2 https://img.example.test/")
    gz = warc_bytes(small_site())
    cut_gz = tmp_path / "cut.warc.gz"
    cut_gz.write_bytes(gz[: len(gz) * 2 // 3])
    fails(tmp_path, f"warc:{cut_gz}", r"warc: file is truncated \(it ends inside a gzip member\)")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "no WARC records"),
        (b"hello world\n", "not a WARC file .it looks like text"),
        (b"<!DOCTYPE html><html></html>", "not a WARC file .it looks like HTML"),
        (b'{"log": {}}', "it looks like JSON: a HAR is imported as har:FILE"),
        (b"PK\x03\x04" + bytes(60), "not a WARC file .it looks like a ZIP archive"),
        (b"\x1f\x8b\x09\x00garbage", "corrupt gzip data"),
        (
            gzip.compress(b"WARC/1.0\r\nWARC-Type: response\r\n", mtime=0),
            "record headers cut short",
        ),
        (warc_bytes([("ftp://a.test/", "200 OK", [], b"x")]), "no response records"),
        (
            gzip.compress(
                b"WARC/1.0\r\nWARC-Type: warcinfo\r\nContent-Length: 0\r\n\r\n\r\n\r\n", mtime=0
            ),
            "no response records",
        ),
    ],
)
def test_warc_without_responses(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.warc.gz"
    path.write_bytes(content)
    fails(tmp_path, f"warc:{path}", message)


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("https://10.2.0.1/", "an address the lab uses itself"),
        ("https://[::1]/", "an IPv6 literal"),
        ("https://bad_host-.com/", "not a valid hostname"),
        ("https://example.test/\x01", "spaces or control"),
        ("https://example.test:99999/", "not a URL"),
    ],
)
def test_warc_bad_urls(tmp_path: Path, uri: str, message: str) -> None:
    path = tmp_path / "bad.warc"
    path.write_bytes(warc_bytes([(uri, "200 OK", [], b"x")], compress=False))
    err = fails(tmp_path, f"warc:{path}", message)
    # its only response was unusable: nothing is left, and the line says which and why
    assert (
        err.field == "warc"
        and "no response records (1 unusable; the first: skipped record 0" in err.reason
    )


def test_one_bad_record_is_skipped_with_a_note_and_the_rest_imports(tmp_path: Path) -> None:
    """Real captures are messy: an IPv6-literal beacon (the lab runs IPv4), a body that does
    not decode and a bogus Content-Encoding cost their record (or nothing), not the capture;
    an IPv4-literal beacon is kept (served at its own address)."""
    records = [
        *small_site(),
        ("http://[2001:db8::1]/beacon?x=1", "200 OK", [("Content-Type", "image/gif")], b"GIF"),
        ("https://www.example.test/z.js", "200 OK", [("Content-Encoding", "gzip")], b"plain"),
        ("http://66.102.1.1/b?x=1", "200 OK", [("Content-Type", "image/gif")], b"GIF89a"),
        (
            "https://www.example.test/n.css",
            "200 OK",
            [("Content-Type", "text/css"), ("Content-Encoding", "null")],
            b"body{}",
        ),
    ]
    path = tmp_path / "messy.warc"
    path.write_bytes(warc_bytes(records, compress=False))
    capture = read_warc(path)
    urls = [r.url for r in capture.responses]
    assert "https://www.example.test/n.css" in urls
    assert not any("2001:db8::1" in u or u.endswith("/z.js") for u in urls)
    css = next(r for r in capture.responses if r.url.endswith("/n.css"))
    assert css.body == b"body{}"  # passed through as identity
    n = len(small_site())
    assert (
        f"skipped record {n} http://[2001:db8::1]/beacon?x=1: host 2001:db8::1 cannot be an "
        "origin: an IPv6 literal: the lab runs IPv4 only" in "\n".join(capture.notes)
    )
    assert any(
        note.startswith(f"skipped record {n + 1} https://www.example.test/z.js: cannot decode")
        for note in capture.notes
    )
    assert "http://66.102.1.1/b?x=1" in urls
    assert f"record {n + 3} https://www.example.test/n.css: Content-Encoding 'null' unknown" in (
        "\n".join(capture.notes)
    )


def test_warc_undecodable_body(tmp_path: Path) -> None:
    path = tmp_path / "bad.warc"
    records = [("https://a.test/", "200 OK", [("Content-Encoding", "gzip")], b"plain")]
    path.write_bytes(warc_bytes(records, compress=False))
    fails(tmp_path, f"warc:{path}", "cannot decode body: gzip")


def test_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from h2lab.pages.importers import common

    path = tmp_path / "site.warc"
    path.write_bytes(warc_bytes(small_site(), compress=False))
    monkeypatch.setattr(common, "MAX_RESOURCES", 3)
    fails(tmp_path, f"warc:{path}", "more than 3 responses")
    monkeypatch.setattr(common, "MAX_RESOURCES", 100)
    monkeypatch.setattr(common, "MAX_PAGE_BYTES", 200)
    fails(tmp_path, f"warc:{path}", "bod")  # the 304-byte PNG exceeds the budget
    site = make_site(tmp_path / "site")
    (site / "big.bin").write_bytes(bytes(300))
    fails(tmp_path, f"dir:{site}", "exceed")
    monkeypatch.setattr(common, "MAX_PAGE_BYTES", 10**6)
    monkeypatch.setattr(common, "MAX_HOSTS", 2)
    fails(tmp_path, f"warc:{path}", "3 hosts")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "expected an object"),
        ('{"log": {}}', "log.entries: missing"),
        ('{"log": {"entries": {}}}', "log.entries: missing"),
        ('{"log": {"entries": []}}', "no entries with a response"),
        ('{"log": {"entries": [42]}}', r"log.entries\[0\]: expected an object"),
    ],
)
def test_har_not_a_har(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.har"
    path.write_text(content)
    fails(tmp_path, f"har:{path}", message)


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"url": "https://127.0.0.1/"}, "request.url", "a loopback address"),
        ({"url": "javascript:alert(1)"}, "request.url", "not an http"),
        ({"method": "G ET"}, "request.method", "not an HTTP method"),
        ({"status": "200"}, "response.status", "wrong type"),
        ({"status": 1000}, "response.status", "not an HTTP status"),
        ({"text": "!!!", "encoding": "base64"}, "response.content.text", "not base64"),
        ({"text": "x", "encoding": "rot13"}, "response.content.encoding", "unknown"),
        ({"headers": "x"}, "response.headers", "expected a list"),
    ],
)
def test_har_bad_entry_is_skipped_with_a_note(
    tmp_path: Path, change: dict[str, object], field: str, message: str
) -> None:
    entry = har_entry("https://a.test/", "<p>")
    req, resp = entry["request"], entry["response"]
    assert isinstance(req, dict) and isinstance(resp, dict)
    for key, value in change.items():
        if key in ("url", "method"):
            req[key] = value
        elif key in ("text", "encoding"):
            resp["content"][key] = value
        else:
            resp[key] = value
    # beside a good entry, the bad one is skipped with a note naming it, its field and why
    path = write_har(tmp_path / "messy.har", [har_entry("https://a.test/ok", "ok"), entry])
    capture = read_har(path)
    assert [r.url for r in capture.responses] == ["https://a.test/ok"]
    (note,) = [n for n in capture.notes if n.startswith("skipped log.entries[1] ")]
    assert f": log.entries[1].{field}: " in note and re.search(message, note), note
    # alone, nothing is left: the file fails, naming the first unusable entry
    path = write_har(tmp_path / "bad.har", [entry])
    err = fails(tmp_path, f"har:{path}", "no entries with a response")
    assert err.field == "log.entries"
    assert "(1 unusable; the first: skipped log.entries[0] " in err.reason


def test_missing_inputs(tmp_path: Path) -> None:
    fails(tmp_path, f"warc:{tmp_path / 'nope.warc'}", "cannot read")
    fails(tmp_path, f"har:{tmp_path / 'nope.har'}", "cannot read")
    fails(tmp_path, f"dir:{tmp_path / 'nope'}", "does not exist")
    fails(tmp_path, "warc:", "expected warc:FILE")
    (tmp_path / "file").write_text("x")
    fails(tmp_path, f"dir:{tmp_path / 'file'}", "is not a folder")


def test_folder_bad_entries(tmp_path: Path) -> None:
    site = make_site(tmp_path / "site")
    outside = tmp_path / "outside.html"
    outside.write_text("x")
    fails(tmp_path, f"dir:{site}#missing.html", "'missing.html' is not a file in the folder")
    fails(tmp_path, f"dir:{site}#../outside.html", "is not a file in the folder")
    fails(tmp_path, f"dir:{site}#sub/../../outside.html", "is not a file in the folder")
    fails(tmp_path, f"dir:{site}#sub", "is not a file in the folder")
    (site / "index.html").unlink()
    fails(tmp_path, f"dir:{site}", "no index.html")
    (tmp_path / "empty").mkdir()
    fails(tmp_path, f"dir:{tmp_path / 'empty'}", "no files")
    with pytest.raises(SpecError, match="host"):
        import_folder(site, "sub/app.js", host="not a host", root=tmp_path / "pages")


def test_content_types_do_not_depend_on_the_machine() -> None:
    assert content_type_for("APP.JS") == "text/javascript"
    assert content_type_for("font.woff2") == "font/woff2"
    assert content_type_for("lib.js?v=3") == "text/javascript"
    assert content_type_for("archive.tar.gz") == "application/gzip"
    assert content_type_for("README") == "application/octet-stream"


def test_check_url_refuses_spaces() -> None:
    with pytest.raises(SpecError, match=r"x\.har: f: URL has spaces"):
        check_url("https://a.test/a b", "x.har", "f")
    assert check_url("https://a.test/p?q=1#frag", "x.har", "f") == "https://a.test/p?q=1"


def test_a_warc_gzipped_twice_is_read_with_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a temporary folder of its own: another test reading a WARC gzipped twice meanwhile
    # has its inner copy in the shared one
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    once = tmp_path / "once.warc.gz"
    once.write_bytes(warc_bytes(small_site()))
    twice = tmp_path / "twice.warc.gz"
    twice.write_bytes(gzip.compress(once.read_bytes()))
    plain, wrapped = read_warc(once), read_warc(twice)
    assert [(r.url, r.body) for r in wrapped.responses] == [
        (r.url, r.body) for r in plain.responses
    ]
    assert wrapped.notes[0] == "the file is gzipped twice: read the gzipped WARC inside it"
    assert wrapped.notes[1:] == plain.notes
    assert not list(Path(tempfile.gettempdir()).glob("h2lab-warc-*"))  # the inner copy is gone


def test_folder_import_skips_a_file_it_cannot_read_with_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Root reads any file, so the refusal is made by hand: one unreadable file and one
    folder that cannot be listed are skipped, named in the notes; the rest imports."""
    site = make_site(tmp_path / "site")
    real_open, real_listdir = Path.open, os.listdir

    def deny_open(self: Path, *args: object, **kwargs: object) -> object:
        if self.name == "app.js":
            raise PermissionError(13, "Permission denied")
        return real_open(self, *args, **kwargs)  # type: ignore[call-overload]

    def deny_list(path: object) -> list[str]:
        if str(path).endswith("/locked"):
            raise PermissionError(13, "Permission denied")
        return real_listdir(path)  # type: ignore[call-overload,no-any-return]

    (site / "locked").mkdir()
    monkeypatch.setattr(Path, "open", deny_open)
    monkeypatch.setattr(os, "listdir", deny_list)
    page = import_folder(site, root=tmp_path / "pages")
    urls = {r.url() for r in page.resources}
    assert "https://site.h2lab.test/sub/app.js" not in urls
    assert "https://site.h2lab.test/style.CSS" in urls
    page_notes = read_folder_notes(site)
    assert "skipped sub/app.js: cannot read (Permission denied)" in page_notes
    assert "skipped locked/: cannot list (Permission denied)" in page_notes


def read_folder_notes(site: Path) -> tuple[str, ...]:
    from h2lab.pages.importers import read_folder

    return read_folder(site).notes
