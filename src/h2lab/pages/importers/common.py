"""What every importer shares: the recorded response type, limits, URL and hostname checks,
body decoding, the choice of the entry document, and writing a capture as a page.

Readers (``warc``, ``har``, ``folder``) are pure functions of their input file(s): they return a
:class:`Capture` (bodies decoded, in memory, within :data:`MAX_PAGE_BYTES`) and raise
:class:`~h2lab.errors.SpecError` naming the file, the place inside it and what was wrong.
:func:`store` then writes the capture with :class:`~h2lab.pages.manifest.PageWriter`, which
removes its temporary folder if anything fails, so a bad input leaves nothing in the cache.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import brotli

from h2lab.errors import SpecError
from h2lab.net.addresses import ip_literal, valid_hostname, why_not_servable
from h2lab.pages.manifest import Page, PageWriter
from h2lab.pages.request_body import RequestBody

MAX_PAGE_BYTES = 500 * 1000**2
"""Cap on the decoded bytes of one page (all bodies). The heaviest page of the seed corpus,
kicad-doc-en's eeschema.html, weighs 4.8 MB; HTTP Archive's heaviest 1 % of home pages are
above 20 MB. 500 MB leaves a wide margin while keeping an import's memory bounded."""

MAX_RESOURCES = 10_000
"""Cap on the number of responses of one page (the synthetic generator's ``MAX_OBJECTS``)."""

MAX_HOSTS = 64
"""Every host becomes an origin with its own address; the lab's address plan allows 64 (the
synthetic generator's ``MAX_ORIGINS``)."""

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 20  # browsers give up after 20 (Chromium net/url_request kMaxRedirects)

MAX_RATIO = 1000
"""Most times its encoded size a body (or a whole gzipped WARC) may decode to, past
:data:`RATIO_FREE_BYTES`. Deflate cannot exceed 1032:1; real bodies compress 3-20 times (HTML,
CSS, JS) and rarely 100 (a sparse SVG). A 1 KB input that decodes to more than the page
budget is a decompression bomb, refused after 16 MB of work instead of 500 MB."""

RATIO_FREE_BYTES = 16 * 1000**2
"""Decoded bytes any input may reach whatever its ratio (a few milliseconds of inflating)."""


def bomb_cap(encoded_bytes: int) -> int:
    """Most bytes ``encoded_bytes`` of compressed input may decode to (:data:`MAX_RATIO`)."""
    return max(RATIO_FREE_BYTES, encoded_bytes * MAX_RATIO)


def bomb_reason(decoded_bytes: int, encoded_bytes: int, layers: Iterable[str] = ()) -> str:
    """The note for an input refused by :func:`bomb_cap`: the limit, named (and the layers of
    coding undone to get there, outermost first, when there are any)."""
    return (
        f"decodes to more than {decoded_bytes} bytes, over {MAX_RATIO} times its "
        f"{encoded_bytes} encoded bytes ({_layers_said(layers)}a decompression bomb; the limit "
        "is h2lab.pages.importers.common.MAX_RATIO)"
    )


def _layers_said(layers: Iterable[str]) -> str:
    said = ", ".join(layers)
    return f"layers: {said}; " if said else ""


class RatioBudget:
    """What the bodies decoded from one input file may add up to, over every layer of coding
    (the file's gzip, gzip of that, each body's codings): :func:`bomb_cap` of the file's size
    on disk. Held per layer only, a 4 KB gzipped WARC holding a 2 MB gzip body of 2 GiB is
    within 1000 times at each layer and half a million times over together.

    Every byte decoding gives is counted, that of a body kept and that of a body refused (the
    work was done: without this, a file of many small bombs would cost 16 MB of inflating
    each). And no body may take more than half of what is left (:meth:`share`), so a bomb,
    refused, has spent at most half and the bodies after it still decode: the bodies refused
    cost at most the budget in all. Honest captures, whose bodies decode to 3 to 100 times
    their file, never come near half of 1000 times it."""

    def __init__(self, disk_bytes: int, layers: Iterable[str] = ()) -> None:
        self.disk_bytes = disk_bytes
        self.cap = bomb_cap(disk_bytes)
        self.layers = tuple(layers)
        """the file's own codings, outermost first (``file gzip``, ``warc gzip``)"""
        self.used = 0

    def share(self) -> int:
        """Most bytes the next body may decode to: half of what is left."""
        return max(0, self.cap - self.used) // 2

    def reason(self, share: int, layers: Iterable[str]) -> str:
        """The note for a body refused at ``share`` bytes."""
        return (
            f"decodes to more than {share} bytes: half of what is left of the {self.cap} "
            f"bytes the capture's {self.disk_bytes} bytes on disk may decode to "
            f"({_layers_said(layers)}a decompression bomb; the limit is "
            "h2lab.pages.importers.common.MAX_RATIO)"
        )


@dataclass(frozen=True)
class Recorded:
    """One response as an importer found it, body decoded."""

    url: str
    """absolute http(s) URL as recorded (query kept, fragment dropped)"""
    method: str
    """request method (``GET`` unless the input says otherwise)"""
    status: int
    """HTTP status, 100-599"""
    content_type: str
    """``Content-Type`` as recorded (or guessed for files); ``application/octet-stream`` if none"""
    headers: tuple[tuple[str, str], ...]
    """response headers as recorded; PageWriter keeps only those a replay needs"""
    body: bytes
    """decoded body (no transfer or content coding)"""
    body_recorded: bool = True
    """False when the input held no body for this response (stored as an empty body)"""
    request: RequestBody | None = None
    """what its request sent (a POST's body, as digests: :mod:`h2lab.pages.request_body`)"""


@dataclass(frozen=True)
class Capture:
    """Everything an importer read from one input, ready to be stored as a page."""

    kind: str
    """``warc``, ``har`` or ``dir``"""
    path: Path
    """the file or folder read"""
    responses: tuple[Recorded, ...]
    """in input order, duplicates (same method + URL) already removed"""
    entry_url: str
    """URL of the entry document (one of ``responses``)"""
    notes: tuple[str, ...] = ()
    """what was left out or is incomplete, one line each (for the import report)"""

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(host_of(r.url) for r in self.responses))

    @property
    def body_bytes(self) -> int:
        return sum(len(r.body) for r in self.responses)

    @property
    def missing_bodies(self) -> tuple[str, ...]:
        return tuple(r.url for r in self.responses if not r.body_recorded)

    @property
    def source(self) -> str:
        return f"{self.kind}:{self.path}"


class Budget:
    """Counts responses and decoded bytes against :data:`MAX_RESOURCES` and
    :data:`MAX_PAGE_BYTES`; the first excess is a SpecError naming the input."""

    def __init__(
        self, where: str | Path, max_bytes: int | None = None, max_count: int | None = None
    ) -> None:
        self.where = str(where)
        self.max_bytes = MAX_PAGE_BYTES if max_bytes is None else max_bytes
        self.max_count = MAX_RESOURCES if max_count is None else max_count
        self.used_bytes = 0
        self.count = 0

    @property
    def remaining_bytes(self) -> int:
        return self.max_bytes - self.used_bytes

    def take(self, size_bytes: int, field: str) -> None:
        self.count += 1
        self.used_bytes += size_bytes
        if self.count > self.max_count:
            raise SpecError(self.where, field, f"more than {self.max_count} responses")
        if self.used_bytes > self.max_bytes:
            raise SpecError(
                self.where, field, f"page bodies exceed {self.max_bytes // 1000**2} MB decoded"
            )


class DecodeError(ValueError):
    """A body could not be decoded; wrapped into SpecError with the record's place."""


_BAD_URL_CHARS = re.compile(r"[\x00-\x20\x7f]")


def check_url(url: str, where: str | Path, field: str) -> str:
    """``url`` if it is an absolute http(s) URL with a valid hostname or an IPv4 literal the
    lab can serve (:mod:`h2lab.net.addresses`); else a SpecError. The fragment is dropped
    (never sent to a server)."""
    if _BAD_URL_CHARS.search(url):
        raise SpecError(where, field, f"URL has spaces or control characters: {url[:200]!r}")
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError for a bad port
    except ValueError as exc:
        raise SpecError(where, field, f"not a URL: {url[:200]!r} ({exc})") from exc
    if parts.scheme not in {"http", "https"}:
        raise SpecError(where, field, f"not an http(s) URL: {url[:200]!r}")
    host = parts.hostname or ""
    ip = ip_literal(host)
    if ip is not None:
        why = why_not_servable(ip)
        if why is not None:
            raise SpecError(where, field, f"host {host} cannot be an origin: {why}")
    elif not valid_hostname(host):
        raise SpecError(
            where,
            field,
            f"host {host[:100]!r} is not a valid hostname (non-ASCII names cannot be origins; "
            "use the punycode form)",
        )
    return parts._replace(fragment="").geturl()


def host_of(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


def url_key(url: str) -> str:
    """The URL as the page stores it: https, lower-case host, no port, path ``/`` if empty."""
    p = urlsplit(url)
    query = f"?{p.query}" if p.query else ""
    return f"https://{(p.hostname or '').lower()}{p.path or '/'}{query}"


def mime_of(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def clean_headers(headers: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """Headers whose name is a token and whose value holds no control character but tab."""
    return tuple(
        (k, v)
        for k, v in headers
        if re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", k)
        and not re.search(r"[\x00-\x08\x0a-\x1f\x7f]", v)
    )


def clean_content_type(value: str | None) -> str:
    if not value or re.search(r"[\x00-\x1f\x7f]", value):
        return "application/octet-stream"
    return value.strip()


def codings(value: str | None) -> list[str]:
    """``gzip, br`` -> ``['gzip', 'br']`` (lower case, ``identity`` dropped)."""
    if not value:
        return []
    return [
        c.strip().lower() for c in value.split(",") if c.strip().lower() not in {"", "identity"}
    ]


_CHUNK_SIZE_RE = re.compile(rb"^[0-9A-Fa-f]{1,16}[ \t]*(;[^\r\n]*)?\r?\n")


def is_chunked(data: bytes) -> bool:
    """Whether ``data`` starts like a chunked body (a hex size line). Many recorders (Servo's,
    pywb, wget) store the body de-chunked but keep ``Transfer-Encoding: chunked``."""
    return _CHUNK_SIZE_RE.match(data[:100]) is not None


def dechunk(data: bytes) -> bytes:
    """Undo HTTP/1.1 chunked transfer coding (RFC 9112 §7.1); trailers are dropped."""
    out = bytearray()
    pos = 0
    while True:
        m = _CHUNK_SIZE_RE.match(data[pos : pos + 100])
        if m is None:
            if pos >= len(data):
                raise DecodeError("chunked body ends before its last chunk")
            raise DecodeError(f"bad chunk size line at byte {pos}")
        size = int(m.group(0).split(b";", 1)[0].strip(), 16)
        pos += m.end()
        if size == 0:
            return bytes(out)  # trailers, if any, are not kept
        if pos + size > len(data):
            raise DecodeError("chunked body ends inside a chunk")
        out += data[pos : pos + size]
        pos += size
        if data[pos : pos + 2] == b"\r\n":
            pos += 2
        elif data[pos : pos + 1] == b"\n":
            pos += 1
        else:
            raise DecodeError("chunk not followed by CRLF")


def _inflate(data: bytes, wbits: int, limit: int, name: str) -> bytes:
    """``data`` inflated, member after member for gzip; past ``limit`` bytes of output,
    :class:`BodyTooLarge` (zlib is asked for at most ``limit + 1`` bytes: memory stays
    bounded, whatever the input would give)."""
    out = bytearray()
    while True:
        d = zlib.decompressobj(wbits)
        try:
            out += d.decompress(data, limit + 1 - len(out))
        except zlib.error as exc:
            raise DecodeError(f"{name}: {exc}") from None
        if len(out) > limit:
            raise BodyTooLarge(f"{name}: decodes to more than {limit} bytes")
        if not d.eof:
            raise DecodeError(f"{name}: data is truncated")
        data = d.unused_data
        if not (name == "gzip" and data[:2] == b"\x1f\x8b"):
            return bytes(out)  # gzip may have several members; anything else ends here


def _unbrotli(data: bytes, limit: int) -> bytes:
    """``data`` un-brotlied; past ``limit`` bytes of output, :class:`BodyTooLarge` (brotli stops
    at ``output_buffer_limit`` give or take one output block, keeping the rest of its input:
    16.7 MB for a limit of 16 MB, measured with brotli 1.2)."""
    d = brotli.Decompressor()
    try:
        out: bytes = d.process(data, output_buffer_limit=limit + 1)
    except brotli.error as exc:
        raise DecodeError(f"br: {exc}") from None
    if len(out) > limit:
        raise BodyTooLarge(f"br: decodes to more than {limit} bytes")
    if not d.is_finished():
        raise DecodeError("br: data is truncated")
    return out


class BodyTooLarge(DecodeError):
    """A body past what the page may still hold: the capture is too big, not one record bad."""


class Bomb(DecodeError):
    """A body past a ratio bound (:func:`bomb_cap` of its own size, or its share of its file's
    :class:`RatioBudget`): a decompression bomb, which costs its record, not the capture."""


KNOWN_CODINGS = frozenset({"gzip", "x-gzip", "deflate", "br"})


def decode_body(
    raw: bytes,
    transfer_encoding: str | None,
    content_encoding: str | None,
    limit: int,
    notes: list[str] | None = None,
    ratio: RatioBudget | None = None,
) -> bytes:
    """The body a client would see: transfer codings undone (chunked), then content codings
    (gzip, x-gzip, deflate, br) in reverse order of application. A body declared chunked
    that does not start with a chunk-size line is taken as already de-chunked. An empty body
    stays empty whatever its headers say (204, 304, HEAD). Decoded output above ``limit`` bytes
    (what the page may still hold) raises :class:`BodyTooLarge`; a truncated or corrupt stream,
    :class:`DecodeError`. An unknown content coding (recorders write ``null``, ``utf-8``,
    ``none``) is passed through as identity, as a browser takes it, with a line in ``notes``;
    without ``notes`` it raises. Whatever ``limit``, the body may not decode to more than
    :func:`bomb_cap` of its raw size, nor to more than its share of ``ratio``, the budget of
    the file it comes from (which counts what it decoded, kept or not): past either, a
    :class:`Bomb`, in milliseconds, since every layer stops at the least of the three."""
    if notes is not None:
        unknown = [c for c in codings(content_encoding) if c not in KNOWN_CODINGS]
        if unknown:
            notes.append(f"Content-Encoding {', '.join(unknown)!r} unknown: taken as identity")
            kept = [c for c in codings(content_encoding) if c in KNOWN_CODINGS]
            content_encoding = ", ".join(kept) or None
    own = bomb_cap(len(raw))
    share = ratio.share() if ratio is not None else own
    cap = min(limit, own, share)
    try:
        body = _decode(raw, transfer_encoding, content_encoding, cap)
    except BodyTooLarge:
        if ratio is not None:
            ratio.used += cap  # the inflating was done: refused, it still counts
        if cap == limit:
            raise  # the page is full: not this body's fault alone
        layers = [*(ratio.layers if ratio else ()), *_layers(transfer_encoding, content_encoding)]
        if ratio is None or cap == own:
            raise Bomb(bomb_reason(own, len(raw), layers)) from None
        raise Bomb(ratio.reason(share, layers)) from None
    if ratio is not None:
        ratio.used += len(body)
    return body


def _layers(transfer_encoding: str | None, content_encoding: str | None) -> list[str]:
    """The codings :func:`_decode` undoes, in the order it undoes them (chunking, which
    cannot inflate, left out)."""
    steps = codings(transfer_encoding)
    if steps and steps[-1] == "chunked":
        steps.pop()
    return list(reversed(steps + codings(content_encoding)))


def _decode(
    raw: bytes, transfer_encoding: str | None, content_encoding: str | None, limit: int
) -> bytes:
    """:func:`decode_body` once unknown codings are dropped, within ``limit`` bytes."""
    steps = codings(transfer_encoding)
    if steps and steps[-1] == "chunked":
        if is_chunked(raw):
            raw = dechunk(raw)
        steps.pop()
    steps = steps + codings(content_encoding)  # transfer codings other than chunked apply first
    body = raw
    for coding in reversed(steps):
        if not body:
            break
        if coding in {"gzip", "x-gzip"}:
            body = _inflate(body, 16 + zlib.MAX_WBITS, limit, "gzip")
        elif coding == "deflate":
            # RFC 9110 says zlib format; some servers send raw deflate (no header)
            try:
                body = _inflate(body, zlib.MAX_WBITS, limit, "deflate")
            except BodyTooLarge:
                raise  # a zlib-format bomb: no second try as raw deflate
            except DecodeError:
                body = _inflate(body, -zlib.MAX_WBITS, limit, "deflate")
        elif coding == "br":
            body = _unbrotli(body, limit)
        else:
            raise DecodeError(f"unsupported coding {coding!r}")
    if len(body) > limit:
        raise BodyTooLarge(f"body is more than {limit} bytes")
    return body


def dedupe(responses: Iterable[Recorded]) -> tuple[tuple[Recorded, ...], list[str]]:
    """One response per method + URL (as the page stores it; a request with a body: per body
    too): the first one recorded with a body, else the first one; a 304 Not Modified gives way
    to a later response of another status (a trial's browser has no cache to use a 304 with).
    In the order of first appearance. Returns notes on dropped ones."""
    chosen: dict[tuple[str, str, str], Recorded] = {}
    notes: list[str] = []
    for r in responses:
        key = (r.method, url_key(r.url), r.request.sha256 if r.request else "")
        old = chosen.get(key)
        if old is None:
            chosen[key] = r
            continue
        where = f"duplicate {r.method} {r.url[:200]}"
        if old.status == 304 and r.status != 304:
            chosen[key] = r
            notes.append(f"{where}: kept the later {r.status} over the 304 Not Modified")
            continue
        if not old.body_recorded and r.body_recorded and r.status != 304:
            chosen[key] = r
        notes.append(f"{where}: kept the first recorded with a body")
    return tuple(chosen.values()), notes


def choose_entry(responses: tuple[Recorded, ...], start_url: str | None) -> tuple[str, list[str]]:
    """The entry document: from ``start_url`` (the first request), follow recorded redirects
    (3xx with Location) to a recorded response; if that is HTML, it is the entry. Otherwise the
    first HTML response with status 200, else the first response. Returns notes."""
    gets: dict[str, Recorded] = {}
    for res in responses:
        if res.method == "GET":
            gets.setdefault(url_key(res.url), res)
    notes: list[str] = []
    if start_url is not None:
        seen: set[str] = set()
        url = start_url
        r: Recorded | None = gets.get(url_key(url))
        while r is not None and r.status in REDIRECTS and len(seen) < MAX_REDIRECTS:
            seen.add(url_key(url))
            location = next((v for k, v in r.headers if k.lower() == "location"), None)
            if not location:
                break
            url = urljoin(url, location.strip())
            if url_key(url) in seen:
                break
            r = gets.get(url_key(url))
        if r is not None and r.status == 200 and mime_of(r.content_type) in HTML_TYPES:
            return url_key(r.url), notes
    first_html = next(
        (
            r
            for r in responses
            if r.method == "GET" and r.status == 200 and mime_of(r.content_type) in HTML_TYPES
        ),
        None,
    )
    if first_html is not None:
        if start_url is not None:
            notes.append(
                f"first request {start_url[:200]} does not lead to a recorded HTML page; "
                f"entry is the first HTML response"
            )
        return url_key(first_html.url), notes
    notes.append("no HTML response with status 200: entry is the first response")
    return url_key(responses[0].url), notes


def name_from(path: Path) -> str:
    """``wikipedia.warc.gz`` -> ``wikipedia``."""
    name = path.name
    for suffix in (".gz", ".warc", ".har", ".json"):
        name = name.removesuffix(suffix)
    return name or path.name


def finish(
    kind: str,
    path: Path,
    responses: Iterable[Recorded],
    start_url: str | None,
    notes: Iterable[str] = (),
    *,
    entry_url: str | None = None,
) -> Capture:
    """Dedupe, check hosts and emptiness, choose the entry (``entry_url`` if given, else by
    :func:`choose_entry` from ``start_url``): the capture a reader returns."""
    kept, dropped = dedupe(responses)
    if not kept:
        raise SpecError(path, kind, "no responses to import")
    capture_notes = [*notes, *dropped]
    hosts = dict.fromkeys(host_of(r.url) for r in kept)
    if len(hosts) > MAX_HOSTS:
        raise SpecError(
            path, "hosts", f"{len(hosts)} hosts; the lab serves at most {MAX_HOSTS} origins"
        )
    entry_notes: list[str] = []
    if entry_url is not None:
        entry = url_key(entry_url)
    else:
        entry, entry_notes = choose_entry(kept, start_url)
    return Capture(kind, path, kept, entry, tuple(capture_notes + entry_notes))


def store(capture: Capture, name: str | None = None, root: Path | None = None) -> Page:
    """Write ``capture`` as a page under the cache (or ``root``); same capture, same page id."""
    name = name or name_from(capture.path)
    return write_page(capture.responses, capture.entry_url, name, capture.source, root)


def write_page(
    responses: Iterable[Recorded],
    entry_url: str,
    name: str,
    source: str,
    root: Path | None,
    cookies: bool = False,
) -> Page:
    """Write recorded ``responses`` as a page with entry ``entry_url`` under the cache (or
    ``root``): the same responses give the same page id, however they were recorded. With
    ``cookies`` (a journey's recording), their ``Set-Cookie`` headers are kept."""
    with PageWriter(name, source, root, cookies=cookies) as writer:
        for r in responses:
            writer.add(
                r.url,
                r.body,
                content_type=r.content_type,
                status=r.status,
                method=r.method,
                headers=r.headers,
                request=r.request,
            )
        return writer.commit(entry_url)
