"""WARC (ISO 28500, 1.0/1.1, gzip per record or not) -> :class:`~.common.Capture`.

``response`` records become resources (status, headers, body); the ``request`` record sent with
each (``WARC-Concurrent-To``) gives its method. ``warcio`` parses the records and HTTP headers;
the body is read from ``record.raw_stream`` and decoded here, strictly (warcio's own
``content_stream()`` falls back to the raw bytes when decoding fails, and would hide a broken
capture). Other record types (warcinfo, metadata, resource, revisit, conversion) are skipped.
"""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.limitreader import LimitReader
from warcio.statusandheaders import StatusAndHeadersParserException

from h2lab.errors import SpecError
from h2lab.pages.importers.common import (
    BodyTooLarge,
    Budget,
    Capture,
    DecodeError,
    Recorded,
    check_url,
    clean_content_type,
    clean_headers,
    decode_body,
    finish,
)

_READ_CHUNK = 1 << 20


def _read_all(record: Any, path: Path, field: str, limit: int) -> bytes:
    """The record's HTTP body as stored; a record cut short by the end of the file (warcio
    silently returns fewer bytes) is a SpecError."""
    stream = record.raw_stream
    parts = []
    size = 0
    while chunk := stream.read(_READ_CHUNK):
        parts.append(chunk)
        size += len(chunk)
        if size > limit:
            raise SpecError(path, field, f"body is larger than the {limit}-byte budget left")
    if isinstance(stream, LimitReader) and stream.limit > 0:
        raise SpecError(path, field, "record is truncated (file ends inside it)")
    return b"".join(parts)


def _check_gzip_complete(path: Path) -> None:
    """A ``.warc.gz`` is a series of gzip members; warcio stops quietly where the file ends,
    even inside a member. Inflate the file once (output discarded) to find that."""
    try:
        with path.open("rb") as fh:
            if fh.read(2) != b"\x1f\x8b":
                return
            fh.seek(0)
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            in_member = False
            while chunk := fh.read(_READ_CHUNK):
                data = chunk
                while data:
                    in_member = True
                    d.decompress(data, _READ_CHUNK)
                    if d.eof:
                        data = d.unused_data
                        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                        in_member = False
                    else:
                        data = d.unconsumed_tail
    except OSError as exc:
        raise SpecError(path, "warc", f"cannot read: {exc.strerror}") from exc
    except zlib.error as exc:
        raise SpecError(path, "warc", f"corrupt gzip data: {exc}") from exc
    if in_member:
        raise SpecError(path, "warc", "file is truncated (it ends inside a gzip member)")


class Unusable(Exception):
    """One record that cannot be replayed: it is skipped with a note, the rest imports."""


def _response(
    record: Any, uri: str, path: Path, field: str, budget: Budget, notes: list[str]
) -> Recorded:
    """A response record's status, headers and decoded body (taken from ``budget``);
    :class:`Unusable` for a record that cannot be replayed (its URL, status or body)."""
    try:
        url = check_url(uri, path, field)
    except SpecError as exc:
        raise Unusable(exc.reason) from None
    http = record.http_headers
    try:
        status = int(http.get_statuscode())
    except (TypeError, ValueError):
        raise Unusable(f"bad HTTP status line {http.statusline!r}") from None
    if not 100 <= status <= 599:
        raise Unusable(f"not an HTTP status: {status}")
    raw = _read_all(record, path, field, budget.remaining_bytes)
    said: list[str] = []
    try:
        body = decode_body(
            raw,
            http.get_header("transfer-encoding"),
            http.get_header("content-encoding"),
            budget.remaining_bytes,
            said,
        )
    except BodyTooLarge as exc:
        raise SpecError(path, field, f"cannot decode body: {exc}") from exc
    except DecodeError as exc:
        raise Unusable(f"cannot decode body: {exc}") from exc
    notes.extend(f"{field}: {line}" for line in said)
    budget.take(len(body), field)
    return Recorded(
        url=url,
        method="GET",
        status=status,
        content_type=clean_content_type(http.get_header("content-type")),
        headers=clean_headers(http.headers),
        body=body,
    )


def read_warc(path: Path) -> Capture:
    """Read every response of a WARC file. Errors name the file and the record
    (``record N <target URI>``, N counting from 0 over all records). A file gzipped twice (a
    gzip member holding a ``.warc.gz``) is unwrapped once, with a note."""
    _check_gzip_complete(path)
    inner = _unwrap_double_gzip(path)
    if inner is None:
        return _read_warc(path, path)
    try:
        capture = _read_warc(path, inner)
    finally:
        inner.unlink(missing_ok=True)
    note = "the file is gzipped twice: read the gzipped WARC inside it"
    return replace(capture, notes=(note, *capture.notes))


def _unwrap_double_gzip(path: Path) -> Path | None:
    """When ``path``'s gzip data is itself gzip, the outer layer inflated into a temporary
    file (the caller removes it); else None."""
    try:
        with gzip.open(path, "rb") as outer:
            if outer.read(2) != b"\x1f\x8b":
                return None
    except (OSError, EOFError, zlib.error):
        return None  # not gzip at all: the WARC reader says what it is
    fd, name = tempfile.mkstemp(prefix="h2lab-warc-", suffix=".warc.gz")
    try:
        with os.fdopen(fd, "wb") as out, gzip.open(path, "rb") as outer:
            shutil.copyfileobj(outer, out, _READ_CHUNK)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    _check_gzip_complete(Path(name))
    return Path(name)


_KINDS = (
    (b"<!doctype html", "it looks like HTML"),
    (b"<html", "it looks like HTML"),
    (b"{", "it looks like JSON: a HAR is imported as har:FILE"),
    (b"PK\x03\x04", "it looks like a ZIP archive"),
    (b"%PDF", "it looks like a PDF"),
    (b"\x1f\x8b", "it is gzip, but of something else"),
)


def looks_like(path: Path) -> str:
    """What a file that is not a WARC looks like, from its first bytes (never the bytes)."""
    try:
        with path.open("rb") as f:
            head = f.read(512)
    except OSError:
        return "it cannot be read"
    if not head:
        return "it is empty"
    start = head.lstrip().lower()
    for magic, kind in _KINDS:
        if start.startswith(magic.lower()):
            return kind
    printable = sum(32 <= b < 127 or b in b"\r\n\t" for b in head) / len(head)
    return "it looks like text" if printable > 0.95 else "it looks like binary data"


def _read_warc(path: Path, data: Path) -> Capture:
    """:func:`read_warc` of the WARC in ``data`` (``path``: the file the user named)."""
    budget = Budget(path)
    responses: list[tuple[str, Recorded]] = []  # (record id, response)
    methods: dict[str, str] = {}  # response record id -> method of its request
    start_url: str | None = None
    skipped: dict[str, int] = {}
    notes: list[str] = []
    unusable: list[str] = []  # response records skipped, with why
    try:
        fh = data.open("rb")
    except OSError as exc:
        raise SpecError(path, "warc", f"cannot read: {exc.strerror}") from exc
    i = -1
    field = "warc"
    try:
        with fh:
            for i, record in enumerate(ArchiveIterator(fh, ensure_http_headers=False)):
                rec_type = record.rec_type
                uri = record.rec_headers.get_header("WARC-Target-URI") or ""
                field = f"record {i} {uri[:200]}".rstrip()
                if rec_type == "request" and record.http_headers is not None:
                    target = record.rec_headers.get_header("WARC-Concurrent-To")
                    method = (record.http_headers.protocol or "").upper()
                    if target and method.isalpha():
                        methods[target] = method
                    if start_url is None and uri:
                        start_url = check_url(uri, path, field)
                    continue
                if rec_type != "response" or record.http_headers is None:
                    skipped[rec_type] = skipped.get(rec_type, 0) + 1
                    continue
                try:
                    response = _response(record, uri, path, field, budget, notes)
                except Unusable as exc:
                    unusable.append(f"skipped {field}: {exc}")
                    continue
                if start_url is None:
                    start_url = response.url
                rec_id = record.rec_headers.get_header("WARC-Record-ID") or f"#{i}"
                responses.append((rec_id, response))
    except SpecError:
        raise
    except (ArchiveLoadFailed, StatusAndHeadersParserException) as exc:
        if i < 0:  # not even a first record: say what the file is instead, not its bytes
            raise SpecError(path, "warc", f"not a WARC file ({looks_like(data)})") from exc
        raise SpecError(path, field, f"not a readable WARC: {str(exc)[:200]}") from exc
    except (AttributeError, IndexError) as exc:
        where = "warc" if i < 0 else f"after record {i}"
        raise SpecError(path, where, "not a readable WARC (record headers cut short)") from exc
    except (zlib.error, EOFError, OSError, ValueError) as exc:
        where = "warc" if i < 0 else f"after record {i}"
        raise SpecError(path, where, f"not a readable WARC ({type(exc).__name__}: {exc})") from exc
    if i < 0:
        raise SpecError(path, "warc", "no WARC records")
    notes = [
        *unusable,
        *notes,
        *(f"skipped {n} {kind} record(s)" for kind, n in sorted(skipped.items())),
    ]
    with_methods = [replace(r, method=methods.get(rid, "GET")) for rid, r in responses]
    if not with_methods:
        why = f" ({len(unusable)} unusable; the first: {unusable[0]})" if unusable else ""
        raise SpecError(path, "warc", f"no response records{why}")
    return finish("warc", path, with_methods, start_url, notes)
