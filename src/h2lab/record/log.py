"""A live page's load, as Chromium's DevTools ``Network`` events tell it, -> the responses to
store as a page (``h2lab record``, docs/pages-import.md). Pure: no browser, no clock, no I/O.

The browser's side (:mod:`h2lab.record.chromium`) hands every ``Network.*`` event of
the page and of its own targets (cross-site iframes, workers) to a :class:`RecordLog`, fetches
the body the log asks for when a response completes, and hands it back. The log keeps one
:class:`Hop` per request and per redirect: a request id that goes on to a ``Location`` ends
its previous hop with the redirect response (whose body Chromium does not keep: stored empty).
:func:`build_recording` then turns the hops into :class:`~h2lab.pages.importers.Recorded`
responses the way the WARC importer reads them back (same URL checks, header cleaning,
de-duplication, 304s left out, entry chosen by
:func:`~h2lab.pages.importers.common.choose_entry`), so the recording and its WARC give one
page id.

Bodies. ``Network.getResponseBody`` answers binary bodies in base64 (decoded here) and text
as Chromium decoded it (a UTF-8 byte-order mark taken off, bytes not valid in the charset
replaced; the charset is the one the response names, else one Chromium chose and does not
report). Text is encoded back in the charset the response names, else in the first of a few
likely ones (:data:`TEXT_GUESSES`) that gives the size Chromium counted as received; when none
does, a note says the stored body is not byte for byte what the server sent. An image Chromium
could not decode comes back empty: a note says so too.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import http
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from h2lab.errors import SpecError
from h2lab.pages.importers.common import (
    MAX_HOSTS,
    Budget,
    Recorded,
    check_url,
    choose_entry,
    clean_content_type,
    clean_headers,
    dedupe,
    host_of,
)
from h2lab.pages.request_body import RequestBody, fingerprint

NO_BODY_STATUSES = frozenset({204, 205, 304})
"""Responses without content (RFC 9110 §15.3.5, §15.3.6, §15.4.5), besides 1xx and HEAD."""

FRAMING_HEADERS = frozenset({"content-encoding", "transfer-encoding", "content-length"})
"""Dropped from every recorded response: its body is stored decoded (no content or transfer
coding), and the WARC writer states the stored length itself."""

NOT_MODIFIED = 304

UNFINISHED_NAMED = 3
"""How many unfinished requests a line names."""

NAVIGATION_ERRORS: Mapping[str, str] = {
    "net::ERR_NAME_NOT_RESOLVED": "its host name does not resolve",
    "net::ERR_NAME_RESOLUTION_FAILED": "its host name does not resolve",
    "net::ERR_CONNECTION_REFUSED": "the server refused the connection",
    "net::ERR_CONNECTION_TIMED_OUT": "the connection timed out",
    "net::ERR_CONNECTION_RESET": "the connection was reset",
    "net::ERR_CONNECTION_CLOSED": "the server closed the connection",
    "net::ERR_EMPTY_RESPONSE": "the server closed the connection without an answer",
    "net::ERR_ADDRESS_UNREACHABLE": "its address is unreachable",
    "net::ERR_INTERNET_DISCONNECTED": "this machine has no network",
    "net::ERR_CERT_AUTHORITY_INVALID": "its certificate is not signed by a trusted authority",
    "net::ERR_CERT_COMMON_NAME_INVALID": "its certificate is for another name",
    "net::ERR_CERT_DATE_INVALID": "its certificate has expired or is not yet valid",
    "net::ERR_SSL_PROTOCOL_ERROR": "the TLS handshake failed",
    "net::ERR_TOO_MANY_REDIRECTS": "it redirects in a loop",
    "net::ERR_ABORTED": "the navigation was aborted (a download, or no document)",
}
"""Chromium's ``errorText`` of a navigation that failed -> what the one-line error says."""

RESPONSE_CODE_FAILURE = "net::ERR_HTTP_RESPONSE_CODE_FAILURE"
"""What ``Page.navigate`` says of a document answered with an HTTP error and an empty body:
recorded like any other response, not an error of the recording."""


def refuse(url: str, reason: str) -> SpecError:
    """The one-line error of a URL that cannot be recorded: names the URL and why."""
    return SpecError("command line", "URL", f"{url[:300]}: {reason}")


def check_record_url(url: str) -> str:
    """``url`` (its fragment dropped) when it can be recorded and replayed: http(s), a host the
    lab can serve (:func:`~h2lab.pages.importers.common.check_url`); else a SpecError naming
    it. Checked before any browser starts: ``file:///etc/passwd`` is never opened."""
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError as exc:  # "Invalid IPv6 URL"
        raise refuse(url, f"not a URL ({exc})") from None
    if scheme not in {"http", "https"}:
        shown = f"scheme {scheme!r}" if scheme else "no scheme"
        raise refuse(url, f"only http:// and https:// URLs can be recorded ({shown})")
    try:
        return check_url(url, "command line", "URL")
    except SpecError as exc:
        raise refuse(url, exc.reason) from None


def navigation_failure(url: str, error_text: str) -> SpecError | None:
    """The error of a navigation Chromium refused with ``error_text`` (None: not an error of
    the recording, :data:`RESPONSE_CODE_FAILURE`)."""
    if not error_text or error_text == RESPONSE_CODE_FAILURE:
        return None
    words = NAVIGATION_ERRORS.get(error_text)
    return refuse(url, f"{words} ({error_text})" if words else f"Chromium: {error_text}")


# ----------------------------------------------------------------------------- the hops


@dataclass
class Hop:
    """One request of the load and its response: a redirect chain is one hop per URL."""

    request_id: str
    """Chromium's id; a redirect keeps it for the next hop"""
    url: str
    method: str
    request_headers: tuple[tuple[str, str], ...]
    request_body: bytes
    """what the request sent (POST data as Chromium reports it; empty if none)"""
    sessions: list[str] = field(default_factory=list)
    """DevTools sessions whose events named it (a body is asked on the last first)"""
    status: int | None = None
    status_text: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    """response headers as Chromium reports them (repeated ones joined by newlines)"""
    charset: str = ""
    """the charset Chromium decoded text with"""
    received_bytes: int = 0
    """body bytes received, decoded, by Chromium's count (``dataReceived``)"""
    finished: bool = False
    """its response complete (a redirect's too)"""
    failed: str = ""
    """Chromium's errorText when it failed"""
    body: bytes | None = None
    """the body fetched (None: none yet, or Chromium kept none)"""
    body_error: str = ""
    """why Chromium gave no body"""
    body_note: str = ""
    """why the body may not be byte for byte the server's"""
    set_cookies: tuple[str, ...] = ()
    """its response's ``Set-Cookie`` values, from the raw headers (``responseReceivedExtraInfo``:
    the headers of ``responseReceived`` leave them out)"""


def _request_body(request: Mapping[str, Any]) -> bytes:
    entries = request.get("postDataEntries")
    if entries:
        return b"".join(_b64(str(e.get("bytes", ""))) for e in entries)
    data = request.get("postData")
    return data.encode() if isinstance(data, str) else b""


def _b64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return b""


def _request_of(hop: Hop) -> RequestBody | None:
    """What the hop's request sent, as a page keeps it (None: no body)."""
    if not hop.request_body:
        return None
    kind = next((v for k, v in hop.request_headers if k.lower() == "content-type"), None)
    return fingerprint(hop.request_body, kind)


def wants_body(hop: Hop) -> bool:
    """Whether a finished hop's response has a body to fetch."""
    status = hop.status or 0
    return hop.method != "HEAD" and status >= 200 and status not in NO_BODY_STATUSES


class RecordLog:
    """Every request of one load, from its DevTools events (in the order they came), and the
    bodies fetched for them. Not thread-safe: the browser's side holds a lock around it."""

    def __init__(self) -> None:
        self.hops: list[Hop] = []
        """in the order they were sent"""
        self._current: dict[str, Hop] = {}
        self.document_id = ""
        """request id of the page's document (``Page.navigate``'s loaderId)"""

    def add(self, session: str, method: str, p: Mapping[str, Any]) -> str | None:
        """Take one ``Network.*`` event of ``session``. Returns the request id whose body is
        to be fetched now (its response complete), on ``session``; else None."""
        rid = str(p.get("requestId", ""))
        if method == "Network.requestWillBeSent":
            self._sent(session, rid, p)
            return None
        if method == "Network.responseReceivedExtraInfo":
            self._cookies(rid, p)
            return None
        hop = self._current.get(rid)
        if hop is None:
            return None
        if session not in hop.sessions:
            hop.sessions.append(session)
        if method == "Network.responseReceived":
            self._response(hop, p["response"])
        elif method == "Network.dataReceived":
            hop.received_bytes += int(p.get("dataLength", 0))
        elif method == "Network.loadingFinished":
            hop.finished = True
            hop.sessions.remove(session)
            hop.sessions.append(session)  # ask its body where it finished
            return rid if wants_body(hop) else None
        elif method == "Network.loadingFailed":
            hop.failed = str(p.get("errorText") or "failed")
        return None

    def _cookies(self, rid: str, p: Mapping[str, Any]) -> None:
        """A response's raw headers: its ``Set-Cookie`` values, to the hop of ``rid`` it
        answers. It may come before or after the hop's own events (a redirect's, after the
        next hop was sent): the latest hop of ``rid`` with its status, else its pending one."""
        hops = [h for h in reversed(self.hops) if h.request_id == rid]
        code = p.get("statusCode")
        hop = next((h for h in hops if h.status is not None and h.status == code), None)
        hop = hop or next((h for h in hops if h.status is None), None)
        if hop is None:
            return
        raw = {str(k).lower(): str(v) for k, v in dict(p.get("headers") or {}).items()}
        cookies = raw.get("set-cookie", "")
        hop.set_cookies = tuple(c for c in cookies.split("\n") if c.strip())[:50]

    def _sent(self, session: str, rid: str, p: Mapping[str, Any]) -> None:
        request = p["request"]
        old = self._current.get(rid)
        if old is not None and "redirectResponse" in p:
            self._response(old, p["redirectResponse"])
            old.finished = True
            old.body = b""  # Chromium keeps no body of a redirect
        elif old is not None and old.url == request["url"]:
            old.sessions.append(session)  # the same request, seen by a second target
            return
        hop = Hop(
            request_id=rid,
            url=str(request["url"]),
            method=str(request.get("method", "GET")).upper(),
            request_headers=tuple((str(k), str(v)) for k, v in request.get("headers", {}).items()),
            request_body=_request_body(request),
            sessions=[session],
        )
        self.hops.append(hop)
        self._current[rid] = hop

    @staticmethod
    def _response(hop: Hop, response: Mapping[str, Any]) -> None:
        hop.status = int(response.get("status", 0)) or None
        hop.status_text = str(response.get("statusText", ""))
        hop.headers = {str(k): str(v) for k, v in response.get("headers", {}).items()}
        hop.charset = str(response.get("charset", ""))

    def set_body(self, rid: str, answer: Mapping[str, Any]) -> None:
        """The answer of ``Network.getResponseBody`` for ``rid``'s last hop."""
        hop = self._current.get(rid)
        if hop is not None:
            hop.body, hop.body_note = devtools_body(answer, hop.charset, hop.received_bytes)

    def set_body_error(self, rid: str, error: str) -> None:
        """``Network.getResponseBody`` failed for ``rid`` (Chromium kept no body)."""
        hop = self._current.get(rid)
        if hop is not None:
            hop.body_error = error

    def sessions_of(self, rid: str) -> list[str]:
        """The sessions that named ``rid``, the one it finished on last."""
        hop = self._current.get(rid)
        return list(reversed(hop.sessions)) if hop else []

    def in_flight(self) -> list[Hop]:
        """http(s) requests with neither a response complete nor a failure yet."""
        return [h for h in self.hops if is_http(h.url) and not (h.finished or h.failed)]

    def document(self) -> Hop | None:
        """The last hop of the page's document (where its redirects led)."""
        return self._current.get(self.document_id)


def is_http(url: str) -> bool:
    return url.startswith(("http://", "https://"))


def describe_in_flight(log: RecordLog) -> str:
    """``2 requests unfinished: https://a/x, https://a/y`` ('' when none is)."""
    waiting = log.in_flight()
    if not waiting:
        return ""
    named = ", ".join(h.url[:200] for h in waiting[:UNFINISHED_NAMED])
    more = len(waiting) - UNFINISHED_NAMED
    return f"{len(waiting)} request(s) unfinished: {named}" + (
        f", and {more} more" if more > 0 else ""
    )


TEXT_GUESSES = ("utf-8", "utf-8-sig", "cp1252")
"""When Chromium names no charset (or the body, encoded back in it, does not have the size it
received), the codecs tried in turn: UTF-8, UTF-8 with the byte-order mark Chromium's decoder
took off, and windows-1252 (the WHATWG default for a document that names none, and what
Chromium reads a ``<meta charset=iso-8859-1>`` page as)."""


def devtools_body(
    answer: Mapping[str, Any], charset: str, received_bytes: int
) -> tuple[bytes, str]:
    """A ``Network.getResponseBody`` answer as bytes, and a note when they may not be what the
    server sent: base64 decoded; text encoded back in ``charset``, else in the first of
    :data:`TEXT_GUESSES` that gives the size Chromium counted as received (``received_bytes``;
    0: unknown, then ``charset`` or UTF-8 is taken as it is)."""
    text = str(answer.get("body", ""))
    if answer.get("base64Encoded"):
        body = _b64(text)
        if received_bytes and len(body) != received_bytes:
            return body, (
                f"Chromium returned {len(body)} B of the {received_bytes} B it received (it "
                "keeps no data of an image it could not decode): stored as returned"
            )
        return body, ""
    codecs_tried = dict.fromkeys([_codec(charset), *TEXT_GUESSES])
    encoded = [(c, b) for c in codecs_tried if (b := _encode(text, c)) is not None]
    for _, body in encoded:
        if not received_bytes or len(body) == received_bytes:
            return body, ""
    codec, body = encoded[0] if encoded else ("utf-8", text.encode("utf-8", "surrogatepass"))
    return body, (
        f"Chromium returned this body as text that is {len(body)} B in {codec}, it received "
        f"{received_bytes} B: not byte for byte the server's"
    )


def _encode(text: str, codec: str) -> bytes | None:
    try:
        return text.encode(codec)
    except UnicodeEncodeError:
        return None


def _codec(charset: str) -> str:
    try:
        return codecs.lookup(charset).name if charset else "utf-8"
    except LookupError:
        return "utf-8"


# ------------------------------------------------------------------------ the recording


def response_headers(
    raw: Mapping[str, str], notes: list[str], url: str
) -> tuple[tuple[str, str], ...]:
    """Chromium's response headers as (name, value) lines, as the WARC importer reads them back:
    repeated headers (joined by newlines) split, values stripped, :data:`FRAMING_HEADERS`
    dropped, names that are not tokens and values with control characters dropped
    (:func:`~h2lab.pages.importers.common.clean_headers`), and values that are not ASCII
    dropped with a note (a WARC head would carry them percent-encoded)."""
    lines: list[tuple[str, str]] = []
    for name, value in raw.items():
        if name.lower() in FRAMING_HEADERS:
            continue
        for part in value.split("\n"):
            if not part.isascii():
                notes.append(f"{url[:200]}: dropped header {name[:60]!r}: its value is not ASCII")
                continue
            lines.append((name, part.strip()))
    return clean_headers(lines)


@dataclass(frozen=True)
class Exchange:
    """One recorded response and the request that got it (for the WARC)."""

    response: Recorded
    request_headers: tuple[tuple[str, str], ...]
    request_body: bytes
    status_text: str


@dataclass(frozen=True)
class Recording:
    """What a recorded load gives: the responses to store, the entry and the notes."""

    url: str
    """the URL navigated to"""
    exchanges: tuple[Exchange, ...]
    """in the order their requests were sent, one per method + URL"""
    entry_url: str
    """the entry document (where the URL's recorded redirects lead)"""
    notes: tuple[str, ...] = ()
    """what was left out or may be inexact, one line each"""

    @property
    def responses(self) -> tuple[Recorded, ...]:
        return tuple(e.response for e in self.exchanges)

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(host_of(r.url) for r in self.responses))

    @property
    def body_bytes(self) -> int:
        return sum(len(r.body) for r in self.responses)

    @property
    def source(self) -> str:
        return f"record:{self.url}"


def _exchange(hop: Hop, budget: Budget, notes: list[str]) -> Exchange | None:
    """The stored form of one hop, or None (with a note) when it cannot be stored."""
    if not is_http(hop.url):
        return None  # data:, blob:: no request on the network
    where = hop.url[:200]
    if hop.failed:
        notes.append(f"not recorded: {where} failed in Chromium ({hop.failed})")
        return None
    if not hop.finished or hop.status is None:
        notes.append(f"not recorded: {where} was unfinished when the recording ended")
        return None
    if hop.status == NOT_MODIFIED:
        notes.append(f"not recorded: {where} answered 304 Not Modified (no body to serve)")
        return None
    try:
        url = check_url(hop.url, "recording", where)
    except SpecError as exc:
        notes.append(f"not recorded: {where}: {exc.reason}")
        return None
    body_recorded = hop.body is not None or not wants_body(hop)
    if not body_recorded:
        notes.append(f"{where}: Chromium kept no body ({hop.body_error or 'none'}): stored empty")
    if hop.body_note:
        notes.append(f"{where}: {hop.body_note}")
    body = hop.body or b""
    budget.take(len(body), where)
    headers = response_headers(hop.headers, notes, hop.url)
    if not any(k.lower() == "set-cookie" for k, _ in headers):
        headers += tuple(("set-cookie", c[:4096]) for c in hop.set_cookies)
    content_type = next((v for k, v in headers if k.lower() == "content-type"), None)
    response = Recorded(
        url=url,
        method=hop.method,
        status=hop.status,
        content_type=clean_content_type(content_type),
        headers=headers,
        body=body,
        body_recorded=body_recorded,
        request=_request_of(hop),
    )
    text = hop.status_text or _phrase(hop.status)
    return Exchange(response, clean_headers(hop.request_headers), hop.request_body, text)


def _phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def build_recording(url: str, log: RecordLog, notes: tuple[str, ...] = ()) -> Recording:
    """The recording of a load of ``url`` (as navigated to) from its log: every hop that can be
    stored, de-duplicated as the importers do, the entry chosen from ``url``. SpecError when
    nothing was recorded or the page is past the importers' limits."""
    budget = Budget(url)
    said: list[str] = list(notes)
    exchanges: list[Exchange] = []
    for hop in log.hops:
        exchange = _exchange(hop, budget, said)
        if exchange is not None:
            exchanges.append(exchange)
    if not exchanges:
        raise refuse(url, "Chromium received no response that can be stored")
    by_id = {id(e.response): e for e in exchanges}
    kept, dropped = dedupe(e.response for e in exchanges)
    hosts = dict.fromkeys(host_of(r.url) for r in kept)
    if len(hosts) > MAX_HOSTS:
        raise refuse(url, f"{len(hosts)} hosts; the lab serves at most {MAX_HOSTS} origins")
    entry, entry_notes = choose_entry(kept, url)
    document = log.document()
    if document is not None and document.status is not None and document.status >= 400:
        said.append(
            f"the page's document {document.url[:200]} answered {document.status}: recorded "
            "as it is"
        )
    return Recording(
        url=url,
        exchanges=tuple(by_id[id(r)] for r in kept),
        entry_url=entry,
        notes=tuple(said + dropped + entry_notes),
    )
