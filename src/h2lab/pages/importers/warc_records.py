"""One pass over a WARC's records (warcio's ``ArchiveIterator`` with ``no_record_parse``; the
HTTP heads are read by :mod:`.httphead`): what each record gives, and the responses to serve
once the pass is over (revisits resolved, 304s dropped, methods set).

Every note names its record (``record N URL``, N counting from 0 over all records); notes
come out in record order, then one line per kind of record skipped whole.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from warcio.limitreader import LimitReader

from h2lab.errors import SpecError
from h2lab.pages.importers.common import (
    BodyTooLarge,
    Bomb,
    Budget,
    DecodeError,
    RatioBudget,
    Recorded,
    check_url,
    clean_content_type,
    clean_headers,
    decode_body,
)
from h2lab.pages.importers.httphead import HeadTooLarge, HttpHead, read_head, shown
from h2lab.pages.importers.revisits import Found, Revisit, drop_not_modified, resolve, warc_value
from h2lab.pages.request_body import RequestBody, fingerprint

_READ_CHUNK = 1 << 20
MAX_REQUEST_BODY_BYTES = 1 << 20
"""Most bytes of a request record's body read (a form's; a larger upload is refused whole)."""
_HTTP_SCHEMES = ("http:", "https:")


class Unusable(Exception):
    """One record that cannot be replayed: it is skipped with a note, the rest imports."""


def _read_all(record: Any, path: Path, field: str, limit: int) -> bytes:
    """The rest of the record's block (the HTTP body, as stored); a record cut short by the end
    of the file (warcio silently returns fewer bytes) is a SpecError."""
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


def _read_upto(record: Any, limit: int) -> bytes | None:
    """A request record's body, or None past ``limit`` bytes (an upload: its response is then
    answered by method and URL alone, as any)."""
    data = record.raw_stream.read(limit + 1)
    return None if len(data) > limit else bytes(data)


def _head(record: Any) -> HttpHead:
    try:
        return read_head(record.raw_stream)
    except HeadTooLarge as exc:
        raise Unusable(str(exc)) from None


def _status(head: HttpHead) -> int:
    if not re.fullmatch(r"[0-9]+", head.status_code):
        raise Unusable(f"bad HTTP status line {shown(f'{head.first} {head.rest}'.strip())}")
    status = int(head.status_code)
    if not 100 <= status <= 599:
        raise Unusable(f"not an HTTP status: {status}")
    return status


def _body(
    raw: bytes, head: HttpHead, path: Path, field: str, budget: Budget, ratio: RatioBudget
) -> tuple[bytes, list[str]]:
    """The decoded body, and lines on what decoding let pass. A bomb costs its record; a body
    past what the page may still hold costs the capture (a page too big for the lab)."""
    said: list[str] = []
    try:
        body = decode_body(
            raw,
            head.get("transfer-encoding"),
            head.get("content-encoding"),
            budget.remaining_bytes,
            said,
            ratio,
        )
    except Bomb as exc:
        raise Unusable(str(exc)) from None
    except BodyTooLarge as exc:
        raise SpecError(path, field, f"cannot decode body: {exc}") from exc
    except DecodeError as exc:
        raise Unusable(f"cannot decode body: {exc}") from exc
    return body, said


class WarcPass:
    """Collects what each record of one WARC gives; :meth:`served` then says what to serve."""

    def __init__(self, path: Path, ratio: RatioBudget) -> None:
        self.path = path
        self.budget = Budget(path)
        self.ratio = ratio  # what the bodies may decode to, against the file's size on disk
        self.responses: list[Found] = []  # usable response records
        self.revisits: list[Revisit] = []
        self.methods: dict[str, str] = {}  # record id -> method of its request
        self.requests: dict[str, RequestBody] = {}  # record id -> what its request sent
        self.first_request: tuple[int, str] | None = None  # (index, URL)
        self.kinds: dict[str, int] = {}  # records skipped whole, by type
        self.skips: list[tuple[int, str]] = []  # (record index, why it is not served)
        self.unusable_ids: dict[str, int] = {}  # record ids of unusable records -> index
        self.notes: list[tuple[int, str]] = []  # (record index, note) on records served

    @property
    def unusable(self) -> list[str]:
        """Notes on the records skipped for what they hold (not their type), in record order."""
        return [text for _, text in sorted(self.skips, key=lambda n: n[0])]

    def add(self, index: int, record: Any) -> None:
        """Read record ``index`` (warcio's record, its HTTP head not parsed)."""
        rec_type = record.rec_type or "untyped"
        uri = warc_value(record.rec_headers.get_header("WARC-Target-URI"))
        field = f"record {index} {uri[:200]}".rstrip()
        if record.length is None:
            raise SpecError(self.path, field, "not a readable WARC (record headers cut short)")
        rec_id = warc_value(record.rec_headers.get_header("WARC-Record-ID")) or f"#{index}"
        read = {"request": self._request, "response": self._response, "revisit": self._revisit}
        handler = read.get(rec_type)
        has_http = uri.startswith(_HTTP_SCHEMES) and (record.length or rec_type == "revisit")
        try:
            if handler is None or not has_http:
                self.kinds[rec_type] = self.kinds.get(rec_type, 0) + 1
            else:
                handler(index, record, uri, field, rec_id)
        except Unusable as exc:
            self.skips.append((index, f"skipped {field}: {exc}"))
            self.unusable_ids[rec_id] = index

    def _request(self, index: int, record: Any, uri: str, field: str, _rec_id: str) -> None:
        head = _head(record)
        target = warc_value(record.rec_headers.get_header("WARC-Concurrent-To"))
        method = head.first.upper()
        if target and method.isalpha():
            self.methods[target] = method
        body = _read_upto(record, MAX_REQUEST_BODY_BYTES)
        if target and body:  # a POST's: replay answers it by its body (as digests only)
            self.requests[target] = fingerprint(body, head.get("content-type"))
        if self.first_request is None:  # a URL the page cannot start from is passed over
            with contextlib.suppress(SpecError):
                self.first_request = (index, check_url(uri, self.path, field))

    def _url(self, uri: str, field: str) -> str:
        try:
            return check_url(uri, self.path, field)
        except SpecError as exc:
            raise Unusable(exc.reason) from None

    def _response(self, index: int, record: Any, uri: str, field: str, rec_id: str) -> None:
        url = self._url(uri, field)
        head = _head(record)
        raw = _read_all(record, self.path, field, self.budget.remaining_bytes)
        status = _status(head)
        body, said = _body(raw, head, self.path, field, self.budget, self.ratio)
        self.budget.take(len(body), field)
        response = Recorded(
            url=url,
            method="GET",
            status=status,
            content_type=clean_content_type(head.get("content-type")),
            headers=clean_headers(head.headers),
            body=body,
        )
        rec = record.rec_headers
        digest = warc_value(rec.get_header("WARC-Payload-Digest")).lower()
        date = warc_value(rec.get_header("WARC-Date"))
        self.responses.append(Found(index, field, rec_id, response, uri, date, digest))
        notes = [*head.dropped_notes(field), *(f"{field}: {line}" for line in said)]
        self.notes.extend((index, note) for note in notes)

    def _revisit(self, index: int, record: Any, uri: str, field: str, rec_id: str) -> None:
        url = self._url(uri, field)
        head = _head(record) if record.length else None
        rec = record.rec_headers
        self.revisits.append(
            Revisit(
                index,
                field,
                rec_id,
                url,
                head if head is None or head.first else None,
                refers_to=warc_value(rec.get_header("WARC-Refers-To")),
                target=warc_value(rec.get_header("WARC-Refers-To-Target-URI")) or uri,
                date=warc_value(rec.get_header("WARC-Refers-To-Date")),
                digest=warc_value(rec.get_header("WARC-Payload-Digest")).lower(),
            )
        )

    def _resolved(self) -> list[Found]:
        """Responses and resolved revisits, in record order."""
        found = list(self.responses)
        for revisit in self.revisits:
            served, notes = resolve(revisit, self.responses, self.unusable_ids)
            if served is None:
                self.skips.extend((revisit.index, note) for note in notes)
                continue
            self.notes.extend((revisit.index, note) for note in notes)
            self.budget.take(len(served.response.body), revisit.field)
            found.append(served)
        return sorted(found, key=lambda f: f.index)

    def served(self) -> tuple[list[Recorded], str | None, list[str]]:
        """The responses to serve in record order, the start URL (that of the first request
        or usable response, whichever comes first), and the notes."""
        found = [
            replace(
                f,
                response=replace(
                    f.response,
                    method=self.methods.get(f.rec_id, "GET"),
                    request=self.requests.get(f.rec_id),
                ),
            )
            for f in self._resolved()
        ]
        starts = [(f.index, f.response.url) for f in found[:1]]
        starts += [self.first_request] if self.first_request else []
        start_url = min(starts)[1] if starts else None
        kept, dropped = drop_not_modified(found)
        self.skips.extend(dropped)
        notes = [text for _, text in sorted(self.notes + self.skips, key=lambda n: n[0])]
        notes += [f"skipped {n} {kind} record(s)" for kind, n in sorted(self.kinds.items())]
        return [f.response for f in kept], start_url, notes
