"""nghttp's outputs, parsed without I/O: its HAR (``--har``), its frame log (``-v``) and the
asset links its ``-a`` follows in an HTML document.

* The HAR has one entry per stream: URL, status, body size, HTTP/2 stream id (in the field
  ``connection``) and durations in microseconds. Its ``startedDateTime`` is the only absolute
  time, with 1 ms resolution; the rest is derived from it and the durations (see
  :func:`parse_har`). A stream with an even id was opened by the server: a push (RFC 9113 5.1.1).
* The frame log gives what the HAR leaves out (``headersSize`` is -1 there): the header block
  bytes sent and received, and the priority each request was sent with.

nghttp's HAR validates against the HAR 1.2 schema as it is, but is not HAR 1.2 in four ways
that :func:`complete_har` mends (the file h2lab keeps is the mended one): ``connection`` holds
the HTTP/2 stream id (h2lab's connection id goes there, the stream id to ``_stream_id``); the
set-up of the connection a request found open is 0, not -1; the connection's first request
has a ``time`` 0.1-0.2 ms longer than its timings' sum (connect end to request sent is in no
phase: it goes to ``blocked``); and a pushed request's ``method`` is empty (its ``:method``
pseudo-header's value goes there).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit


class NghttpParseError(ValueError):
    """nghttp's output is not what this module expects."""


@dataclass(frozen=True)
class HarEntry:
    """One stream of one nghttp run."""

    url: str
    stream_id: int
    status: int
    body_bytes: int
    """response body bytes received (``content.size``)"""
    http_version: str
    """as the HAR says it, e.g. ``HTTP/2.0``"""
    start_ms: float
    """request sent (a push: PUSH_PROMISE received), ms since the epoch"""
    ttfb_ms: float
    """first response byte, ms since the epoch"""
    end_ms: float
    """last response byte, ms since the epoch"""

    @property
    def pushed(self) -> bool:
        """Server-initiated streams have even ids (RFC 9113 section 5.1.1)."""
        return self.stream_id % 2 == 0


def _epoch_ms(stamp: str) -> float:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000
    except ValueError as exc:
        raise NghttpParseError(f"bad startedDateTime {stamp!r}") from exc


def complete_har(text: str, connection: str) -> dict[str, Any]:
    """nghttp's HAR of one ``connection`` (h2lab's id, ``origin#0``) mended as HAR 1.2 (see
    the module's docstring); its page titled with its first URL."""
    try:
        har: dict[str, Any] = json.loads(text)
        log = har["log"]
        entries = log["entries"]
        for e in entries:
            t = e["timings"]
            if "_stream_id" not in e:
                e["_stream_id"] = int(e["connection"])
            e["connection"] = connection
            request = e["request"]
            if not request.get("method"):
                pseudo = {h["name"]: h["value"] for h in request.get("headers") or ()}
                request["method"] = pseudo.get(":method", "GET")
            if t.get("connect") == 0 and t.get("dns") == 0:
                t["dns"] = t["connect"] = -1.0
            gap = float(e["time"]) - sum(v for k, v in t.items() if k != "ssl" and v >= 0)
            if gap > 0:
                t["blocked"] = round(max(t.get("blocked", 0.0), 0.0) + gap, 3)
        for page in log.get("pages") or ():
            if not page.get("title") and entries:
                page["title"] = entries[0]["request"]["url"]
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise NghttpParseError(f"not an nghttp HAR: {exc}") from exc
    log["comment"] = (
        "nghttp's --har, mended by h2lab: connection is h2lab's connection id (the stream id "
        "is _stream_id), -1 for the set-up of a connection found open, the time no phase held "
        "in blocked, a pushed request's method from its :method"
    )
    return har


def _entry(e: Mapping[str, Any]) -> HarEntry:
    t = e["timings"]
    # nghttp's ``time`` runs from the entry's start (for the first request of a connection
    # that is DNS start) to the last byte; send/wait/receive are the last three phases. The
    # gap between connect end and request start (~0.1 ms) is in ``time`` but in no phase, so
    # the request start is counted back from the end, not forward from the start.
    end = _epoch_ms(e["startedDateTime"]) + float(e["time"])
    ttfb = end - float(t["receive"])
    start = ttfb - float(t["wait"]) - float(t["send"])
    return HarEntry(
        url=e["request"]["url"],
        stream_id=int(e.get("_stream_id", e["connection"])),
        status=int(e["response"]["status"]),
        body_bytes=int(e["response"]["content"]["size"]),
        http_version=e["response"]["httpVersion"],
        start_ms=start,
        ttfb_ms=ttfb,
        end_ms=end,
    )


def parse_har(text: str) -> tuple[HarEntry, ...]:
    """The entries of nghttp's HAR, in the file's order."""
    try:
        entries = json.loads(text)["log"]["entries"]
        return tuple(_entry(e) for e in entries)
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, NghttpParseError):
            raise
        raise NghttpParseError(f"not an nghttp HAR: {exc}") from exc


@dataclass(frozen=True)
class FrameLog:
    """What nghttp's ``-v`` frame log adds to its HAR."""

    request_header_bytes: int
    """header block bytes of the HEADERS and CONTINUATION frames sent (HPACK-compressed;
    without frame headers, padding and priority fields)"""
    response_header_bytes: int
    """the same for frames received (PUSH_PROMISE not included: it carries a request)"""
    priorities: Mapping[int, str]
    """stream id -> the priority its request was sent with, ``weight=W,dep=D[,exclusive]``"""


_FRAME = re.compile(
    r"^\[\s*[\d.]+\] (send|recv) (HEADERS|CONTINUATION) frame "
    r"<length=(\d+), flags=0x([0-9a-f]+), stream_id=(\d+)>"
)
_PRIO = re.compile(r"dep_stream_id=(\d+), weight=(\d+), exclusive=([01])")
_PADLEN = re.compile(r"\(padlen=(\d+)")
_FLAG_PADDED, _FLAG_PRIORITY = 0x08, 0x20
_PRIORITY_FIELD_BYTES = 5  # stream dependency (4) + weight (1), RFC 9113 6.2


def parse_frame_log(text: str) -> FrameLog:
    sent = received = 0
    priorities: dict[int, str] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _FRAME.match(line)
        if not m:
            continue
        direction, kind, length, flags, stream = m.groups()
        size, flag_bits = int(length), int(flags, 16)
        # the frame line is followed by "; FLAG | FLAG" (when any flag is set), then by
        # "(padlen=.., dep_stream_id=.., ..)"
        detail = next((ln for ln in lines[i + 1 : i + 3] if ln.lstrip().startswith("(")), "")
        if kind == "HEADERS":
            pad = _PADLEN.search(detail)
            if flag_bits & _FLAG_PADDED and pad:
                size -= int(pad.group(1)) + 1
            if flag_bits & _FLAG_PRIORITY:
                size -= _PRIORITY_FIELD_BYTES
                prio = _PRIO.search(detail)
                if prio and direction == "send":
                    dep, weight, excl = prio.groups()
                    extra = ",exclusive" if excl == "1" else ""
                    priorities[int(stream)] = f"weight={weight},dep={dep}{extra}"
        if direction == "send":
            sent += size
        else:
            received += size
    return FrameLog(sent, received, priorities)


# -------------------------------------------------------------------------------------------
# What ``nghttp -a`` fetches from an HTML document: the rules of nghttp's HtmlParser.cc
# (nghttp2 1.52): <link rel="stylesheet|shortcut icon" href>, <link rel="preload" as=.. href>,
# <img src>, <script src>; each resolved against the document's URL and kept when its
# scheme, host and port are the document's (nghttp.cc, update_html_parser).


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k.lower(): v or "" for k, v in attrs}
        if tag == "link":
            rel, href = a.get("rel", "").lower(), a.get("href", "")
            if href and (
                rel in ("stylesheet", "shortcut icon") or (rel == "preload" and a.get("as"))
            ):
                self.links.append(href)
        elif tag in ("img", "script") and a.get("src"):
            self.links.append(a["src"])


def _origin(url: str) -> tuple[str, str, int | None]:
    u = urlsplit(url)
    default = {"http": 80, "https": 443}.get(u.scheme)
    return u.scheme, (u.hostname or ""), u.port or default


def linked_assets(html: str, base_url: str) -> list[str]:
    """The absolute URLs ``nghttp -a`` requests after fetching ``html`` from ``base_url``, in
    document order (a prediction: where it is wrong, the client lists the URL itself)."""
    parser = _Links()
    parser.feed(html)
    parser.close()
    base = _origin(base_url)
    out: list[str] = []
    for link in parser.links:
        url = urljoin(base_url, link.strip())
        if _origin(url) == base and url not in out:
            out.append(url)
    return out


def unlinked(wanted: Iterable[str], html: str, base_url: str) -> list[str]:
    """Of ``wanted`` URLs, those ``nghttp -a`` will not find in ``html``."""
    found = set(linked_assets(html, base_url))
    return [u for u in wanted if u not in found]
