"""The pieces of a HAR 1.2 log (http://www.softwareishard.com/blog/har-12-spec/) that every
HAR h2lab writes is made of: the log and its page, dates, headers, cookies and query strings,
and timings. Pure: the clients' own HAR builders
(:meth:`h2lab.clients.browser.log.NetworkLog.har`, :func:`h2lab.clients.h2load.h2load_har`)
put them together.

What HAR 1.2 asks and h2lab keeps to: dates are ISO 8601 with a zone (UTC here, ms
resolution); ``timings`` has ``send``, ``wait`` and ``receive`` (never negative) and
``blocked``, ``dns``, ``connect``, ``ssl`` (-1 where they do not apply, or the client cannot
tell); ``ssl`` is a part of ``connect``; ``time`` is the sum of the timings that apply, ``ssl``
aside. Fields of h2lab's own start with one ``_``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

import h2lab

PAGE_ID = "page_1"
"""The id of the one page of a trial's HAR."""
NOT_APPLICABLE = -1.0
"""HAR's value of a timing that does not apply to a request (or that the client cannot tell)."""
TIMINGS = ("blocked", "dns", "connect", "ssl", "send", "wait", "receive")
"""The phases of ``timings``, in HAR's order."""


def iso_date(epoch_s: float) -> str:
    """Seconds since the epoch as HAR's ``startedDateTime``: ``2026-11-26T07:55:00.123Z``."""
    stamp = datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def extra(name: str) -> str:
    """A field of h2lab's own in a HAR: ``name`` with one leading ``_``."""
    return name if name.startswith("_") else f"_{name}"


def log(entries: list[dict[str, Any]], pages: list[dict[str, Any]]) -> dict[str, Any]:
    """A whole HAR: ``{"log": ...}`` made by h2lab."""
    return {
        "log": {
            "version": "1.2",
            "creator": {"name": "h2lab", "version": h2lab.__version__},
            "pages": pages,
            "entries": entries,
        }
    }


def page(
    title: str,
    started_s: float,
    on_content_load_ms: float | None,
    on_load_ms: float | None,
    extras: Mapping[str, Any],
) -> dict[str, Any]:
    """The trial's page (:data:`PAGE_ID`): started at ``started_s`` (seconds since the epoch),
    its DOMContentLoaded and load events in ms from then (None: not reached, -1 in HAR), and
    ``extras`` under their ``_`` names."""
    return {
        "id": PAGE_ID,
        "title": title,
        "startedDateTime": iso_date(started_s),
        "pageTimings": {
            "onContentLoad": NOT_APPLICABLE if on_content_load_ms is None else on_content_load_ms,
            "onLoad": NOT_APPLICABLE if on_load_ms is None else on_load_ms,
            **{extra(k): v for k, v in extras.items()},
        },
    }


def header(headers: Mapping[str, str], name: str) -> str | None:
    """The value of header ``name`` (any case), None if absent."""
    lower = name.lower()
    return next((v for k, v in headers.items() if k.lower() == lower), None)


def name_values(headers: Mapping[str, str]) -> list[dict[str, str]]:
    """Headers as HAR's ``[{name, value}]``; a value of several lines (how Chromium reports
    repeated headers, ``Set-Cookie`` above all) is one header per line."""
    return [{"name": k, "value": line} for k, v in headers.items() for line in v.split("\n")]


def query_string(url: str) -> list[dict[str, str]]:
    """The URL's query as HAR's ``queryString`` (decoded, in order, blanks kept); none for a URL
    that does not split."""
    query = url.partition("?")[2].partition("#")[0]  # as urlsplit, which refuses "[::1"
    return [{"name": k, "value": v} for k, v in parse_qsl(query, keep_blank_values=True)]


def request_cookies(headers: Mapping[str, str]) -> list[dict[str, str]]:
    """The cookies a request sent (its ``Cookie`` header)."""
    out = []
    for part in (header(headers, "cookie") or "").split(";"):
        name, eq, value = part.strip().partition("=")
        if name and eq:
            out.append({"name": name, "value": value})
    return out


def response_cookies(headers: Mapping[str, str]) -> list[dict[str, Any]]:
    """The cookies a response set (its ``Set-Cookie`` headers, one a line), with the attributes
    HAR names: path, domain, expires (ISO 8601), httpOnly, secure."""
    lines: Iterable[str] = (header(headers, "set-cookie") or "").split("\n")
    out = []
    for line in lines:
        first, *attrs = line.split(";")
        name, eq, value = first.strip().partition("=")
        if not name or not eq:
            continue
        cookie: dict[str, Any] = {"name": name, "value": value}
        for attr in attrs:
            key, _, val = attr.strip().partition("=")
            key = key.lower()
            if key in ("path", "domain"):
                cookie[key] = val
            elif key == "expires":
                with_date = _http_date(val)
                if with_date is not None:
                    cookie["expires"] = with_date
            elif key == "httponly":
                cookie["httpOnly"] = True
            elif key == "secure":
                cookie["secure"] = True
        out.append(cookie)
    return out


HTTP_DATES = ("%a, %d %b %Y %H:%M:%S GMT", "%a, %d-%b-%Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT")
"""A cookie's ``Expires`` as servers write it: RFC 9110's IMF-fixdate, with dashes (Netscape's
cookie date), and RFC 850's. (Not :func:`email.utils.parsedate_to_datetime`: importing
``email.utils`` imports ``socket``, and this module is of the pure core.)"""


def _http_date(text: str) -> str | None:
    """An HTTP date (``Wed, 21 Oct 2026 07:28:00 GMT``) as ISO 8601 (None: not a date)."""
    for form in HTTP_DATES:
        try:
            when = datetime.strptime(text.strip(), form).replace(tzinfo=UTC)
        except ValueError:
            continue
        return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return None


def ip_address(remote: str | None) -> str | None:
    """A server address as HAR's ``serverIPAddress`` (IPv4 or IPv6, brackets and port
    dropped); None when it is none (HAR's schema takes only an address there)."""
    if not remote:
        return None
    host = remote
    if host.startswith("["):
        host = host[1:].split("]", 1)[0]
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None


def total_ms(timings: Mapping[str, float]) -> float:
    """HAR's ``time``: the sum of the timings that apply (not -1), ``ssl`` aside (it is part
    of ``connect``)."""
    return round(sum(v for k, v in timings.items() if k != "ssl" and v >= 0), 3)
