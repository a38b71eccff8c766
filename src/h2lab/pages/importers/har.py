"""HAR 1.2 with response bodies -> :class:`~.common.Capture`.

Each entry of ``log.entries`` becomes a resource: request method and URL, response status,
headers and ``content.text`` (base64 if ``content.encoding`` says so, else text, encoded back
with the charset of its content type, UTF-8 if none). HAR bodies are already decoded by the
browser that recorded them, so ``Content-Encoding`` is not applied again. An entry without
``content.text`` is kept with an empty body and listed in :attr:`Capture.missing_bodies`;
entries with status 0 (requests that failed or were blocked) are skipped with a note.

Real HARs are messy, not bad: an entry that cannot be used (a URL the lab cannot serve, a
status or body that does not parse) is skipped with a note naming it, its URL and why; the
file fails only when no entry is left, when it is not a HAR at all, or when the page outgrows
its budget.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import json
import re
from pathlib import Path
from typing import Any

from h2lab.errors import SpecError
from h2lab.pages.importers.common import (
    MAX_PAGE_BYTES,
    Budget,
    Capture,
    Recorded,
    check_url,
    clean_content_type,
    clean_headers,
    finish,
)

MAX_HAR_FILE_BYTES = 2 * MAX_PAGE_BYTES
"""A HAR is JSON with base64 bodies (4/3 of their size) and headers: twice the page cap."""

_CHARSET_RE = re.compile(r"charset\s*=\s*\"?([A-Za-z0-9._:-]+)", re.I)


def _need(obj: Any, key: str, kind: type | tuple[type, ...], path: Path, at: str) -> Any:
    if not isinstance(obj, dict):
        raise SpecError(path, at, "expected an object")
    value = obj.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise SpecError(path, f"{at}.{key}", "missing or of the wrong type")
    return value


def _headers(raw: Any, path: Path, at: str) -> list[tuple[str, str]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise SpecError(path, at, "expected a list of {name, value} objects")
    out = []
    for j, h in enumerate(raw):
        name = _need(h, "name", str, path, f"{at}[{j}]")
        value = _need(h, "value", str, path, f"{at}[{j}]")
        out.append((name, value))
    return out


def _text_bytes(text: str, content_type: str) -> tuple[bytes, str]:
    """HAR text back to bytes: in the declared charset if it can hold it, else UTF-8 (and the
    content type then says so)."""
    m = _CHARSET_RE.search(content_type)
    if m:
        try:
            codecs.lookup(m.group(1))
            return text.encode(m.group(1)), content_type
        except (LookupError, UnicodeEncodeError):
            return text.encode("utf-8", "surrogatepass"), _CHARSET_RE.sub(
                "charset=utf-8", content_type, count=1
            )
    return text.encode("utf-8", "surrogatepass"), content_type


class _TooLarge(SpecError):
    """The page outgrew its budget: the whole import fails, not one entry."""


def _body(
    content: dict[str, Any], content_type: str, budget: Budget, path: Path, at: str
) -> tuple[bytes, str, bool]:
    """An entry's ``response.content``: (body, content type, whether a body was recorded);
    ``budget`` only bounds the base64 text before it is decoded."""
    text = content.get("text")
    encoding = content.get("encoding")
    at_text = f"{at}.response.content.text"
    if text is None:
        body, recorded = b"", False
    elif not isinstance(text, str):
        raise SpecError(path, at_text, "expected a string")
    elif encoding == "base64":
        if len(text) > budget.remaining_bytes * 4 // 3 + 4:
            raise _TooLarge(path, at_text, "body is larger than the page budget left")
        try:
            body = base64.b64decode("".join(text.split()), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise SpecError(path, at_text, f"not base64: {exc}") from exc
        recorded = True
    elif encoding is None:
        body, content_type = _text_bytes(text, content_type)
        recorded = True
    else:
        raise SpecError(path, f"{at}.response.content.encoding", f"unknown: {encoding!r}")
    return body, content_type, recorded


def read_har(path: Path) -> Capture:
    """Read every entry of a HAR file. Errors name the file and the JSON path
    (``log.entries[3].response.content.text``)."""
    try:
        size = path.stat().st_size
        if size > MAX_HAR_FILE_BYTES:
            raise SpecError(path, "har", f"file is larger than {MAX_HAR_FILE_BYTES} bytes")
        data = json.loads(path.read_bytes())
    except OSError as exc:
        raise SpecError(path, "har", f"cannot read: {exc.strerror}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise SpecError(path, "har", f"not JSON: {exc}") from exc
    log = _need(data, "log", dict, path, "har")
    entries = _need(log, "entries", list, path, "log")
    pages = log.get("pages")
    first_page = None
    if isinstance(pages, list) and pages and isinstance(pages[0], dict):
        first_page = pages[0].get("id")

    budget = Budget(path)
    responses: list[Recorded] = []
    notes: list[str] = []
    unusable: list[str] = []
    start_url: str | None = None
    for i, entry in enumerate(entries):
        at = f"log.entries[{i}]"
        try:
            recorded = _entry(entry, path, at, budget, notes)
        except _TooLarge:
            raise
        except SpecError as exc:
            if not isinstance(entry, dict):
                raise  # not a HAR entry at all
            unusable.append(f"skipped {at} {_url_of(entry)}: {exc.field}: {exc.reason}")
            continue
        if recorded is None:
            continue
        budget.take(len(recorded.body), f"{at}.response.content.text")
        if start_url is None and (first_page is None or entry.get("pageref") == first_page):
            start_url = recorded.url
        responses.append(recorded)
    if not responses:
        why = f" ({len(unusable)} unusable; the first: {unusable[0]})" if unusable else ""
        raise SpecError(path, "log.entries", f"no entries with a response{why}")
    missing = sum(not r.body_recorded for r in responses)
    if missing:
        notes.append(f"{missing} response(s) without a recorded body, stored empty")
    return finish("har", path, responses, start_url, [*unusable, *notes])


def _url_of(entry: dict[str, Any]) -> str:
    """The entry's URL as a note may show it: printable, at most 200 characters."""
    request = entry.get("request")
    url = request.get("url") if isinstance(request, dict) else None
    if not isinstance(url, str):
        return "(no URL)"
    return "".join(c if c.isprintable() else "?" for c in url[:200])


def _entry(entry: Any, path: Path, at: str, budget: Budget, notes: list[str]) -> Recorded | None:
    """One entry as a response; None (with a note) for one that got no response. A
    SpecError names what is wrong with it."""
    request = _need(entry, "request", dict, path, at)
    response = _need(entry, "response", dict, path, at)
    method = _need(request, "method", str, path, f"{at}.request")
    if not re.fullmatch(r"[A-Z]{1,20}", method):
        raise SpecError(path, f"{at}.request.method", f"not an HTTP method: {method[:30]!r}")
    url = check_url(_need(request, "url", str, path, f"{at}.request"), path, f"{at}.request.url")
    status = _need(response, "status", int, path, f"{at}.response")
    if status == 0:
        notes.append(f"skipped {method} {url[:200]}: no response (status 0)")
        return None
    if not 100 <= status <= 599:
        raise SpecError(path, f"{at}.response.status", f"not an HTTP status: {status}")
    headers = _headers(response.get("headers"), path, f"{at}.response.headers")
    content = _need(response, "content", dict, path, f"{at}.response")
    header_type = next((v for k, v in headers if k.lower() == "content-type"), None)
    mime = content.get("mimeType")
    content_type = clean_content_type(header_type or (mime if isinstance(mime, str) else None))
    body, content_type, recorded = _body(content, content_type, budget, path, at)
    return Recorded(
        url=url,
        method=method,
        status=status,
        content_type=content_type,
        headers=clean_headers(headers),
        body=body,
        body_recorded=recorded,
    )
