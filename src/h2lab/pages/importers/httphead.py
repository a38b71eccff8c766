"""The HTTP head (status or request line, then header lines) that starts the block of a WARC
``request``, ``response`` or ``revisit`` record.

Parsed here rather than by warcio, for the lines it loses without a word: warcio 1.8 drops a
header line without a colon (and the continuation lines after it) and keeps ``: value`` as a
header with an empty name (its parser never raises on a header line; it raises
``StatusAndHeadersParserException`` only on a bad status line with ``verify_http``, which the
importer does not set). Here such a line is dropped too, and named in :attr:`HttpHead.dropped`
so the import can say so. Otherwise parsing matches warcio's: lines are UTF-8 (else
ISO-8859-1), stripped at the right; a line starting with a space or tab continues the header
before it; the name ends at the first colon.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

MAX_HEAD_BYTES = 1 << 20
"""Cap on one HTTP head (status line and headers). Servers refuse far less (nginx: 8 KB per
line, 32 KB in all by default); the cap bounds the memory a hostile record can take."""

NOTE_LINE_CHARS = 80
"""A dropped line is named in a note by at most this many characters."""

_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


class HeadTooLarge(ValueError):
    """An HTTP head longer than :data:`MAX_HEAD_BYTES`."""


@dataclass(frozen=True)
class HttpHead:
    """One parsed HTTP head."""

    first: str
    """first word of the first line: the protocol of a response (``HTTP/1.1``), the method of
    a request (``GET``)"""
    rest: str
    """the rest of the first line: ``200 OK``; ``/ HTTP/1.1``"""
    headers: tuple[tuple[str, str], ...]
    """header lines kept, as (name, value); every name is a token (RFC 9110 §5.1)"""
    dropped: tuple[str, ...] = ()
    """header lines left out, each as ``'LINE' (why)``, printable and truncated"""

    @property
    def status_code(self) -> str:
        """The status of a response's head as written (``200``); not checked."""
        return self.rest.split(" ", 1)[0]

    def dropped_notes(self, field: str) -> list[str]:
        """One note per dropped line, naming ``field`` (the record)."""
        return [f"{field}: dropped header line {line}" for line in self.dropped]

    def get(self, name: str) -> str | None:
        """The first header called ``name`` (any case), else None."""
        low = name.lower()
        return next((v for k, v in self.headers if k.lower() == low), None)


def shown(line: str, limit: int = NOTE_LINE_CHARS) -> str:
    """``line`` quoted for a note: non-printable characters as ``?``, at most ``limit``
    characters (then ``…``)."""
    text = "".join(c if c.isprintable() else "?" for c in line)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return repr(text)


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("iso-8859-1")


def _lines(stream: Any) -> Iterator[str]:
    """The head's lines, right-stripped, up to the blank line that ends it (read and left
    out) or the end of ``stream``."""
    size = 0
    while True:
        raw = stream.readline(MAX_HEAD_BYTES + 1 - size)
        size += len(raw)
        if size > MAX_HEAD_BYTES:
            raise HeadTooLarge(f"HTTP head is longer than {MAX_HEAD_BYTES} bytes")
        line = _decode(raw).rstrip()
        if not line:
            return
        yield line


_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _fields(lines: list[str]) -> list[str]:
    """Header lines with their continuation lines appended (obsolete line folding)."""
    fields: list[str] = []
    for line in lines:
        if fields and line[:1] in {" ", "\t"}:
            fields[-1] += line
        else:
            fields.append(line)
    return fields


def _header(field: str) -> tuple[str, str] | str:
    """(name, value) of one header field, or why it is dropped."""
    name, colon, value = field.partition(":")
    name = name.rstrip(" \t")
    if not colon:
        return "no colon"
    if not name:
        return "empty header name"
    if not _TOKEN.fullmatch(name):
        return "header name is not a token"
    if _CONTROL.search(value):
        return "control character in the value"  # a bare CR, a NUL (RFC 9110 §5.5)
    return name, value.lstrip()


def read_head(stream: Any) -> HttpHead:
    """The HTTP head at the start of ``stream`` (anything with ``readline(size)``), read up to
    and including the blank line that ends it; the body follows in ``stream``. An empty head
    (empty stream, blank first line) has empty ``first`` and ``rest``. :class:`HeadTooLarge`
    past :data:`MAX_HEAD_BYTES`."""
    lines = list(_lines(stream))
    if not lines:
        return HttpHead("", "", ())
    first, _, rest = lines[0].partition(" ")
    headers: list[tuple[str, str]] = []
    dropped: list[str] = []
    for field in _fields(lines[1:]):
        parsed = _header(field)
        if isinstance(parsed, tuple):
            headers.append(parsed)
        else:
            dropped.append(f"{shown(field)} ({parsed})")
    return HttpHead(first, rest.strip(), tuple(headers), tuple(dropped))
