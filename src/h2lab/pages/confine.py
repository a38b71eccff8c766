"""What a page's manifest may say when it comes from outside: a folder named as a page, a
driver's archive on a lab node, a cache someone copied in.

Every string of a manifest that reaches a server's configuration, a request or a file path
is checked here, when the page is loaded, so that no manifest can inject configuration (a
header name or a host is written unquoted into nginx's, Apache's, Caddy's and H2O's files)
or make a server read a file that is not one of the page's bodies. The rules are what
:class:`~h2lab.pages.manifest.PageWriter` writes: header names it keeps, values and types with
no control character, ASCII host names or IP literals, and no body but by its hash (a
resource without ``body_sha256`` has no body).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from h2lab.errors import SpecError
from h2lab.net.addresses import ip_literal, valid_hostname

_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
"""Control characters but tab: never in a header value, a content type or a page's name."""
_PATH = re.compile(r"/[\x21-\x7e]*")
"""A URL path as PageWriter stores it: printable ASCII, no space (check_url refuses those)."""
_QUERY = re.compile(r"[\x21-\x7e]*")
_METHOD = re.compile(r"[A-Z]{1,20}")
MAX_TEXT_CHARS = 8192
"""Longest header value, content type or path a manifest may hold."""


def check_origin(host: str, scheme: str, where: str, at: str) -> None:
    """An origin is an ASCII host name or an IP literal, served over http or https."""
    if not (valid_hostname(host) or ip_literal(host) is not None):
        raise SpecError(where, f"{at}.host", f"not a host name: {host[:100]!r}")
    if scheme not in {"http", "https"}:
        raise SpecError(where, f"{at}.scheme", f"expected http or https, not {scheme[:20]!r}")


def check_text(value: str, where: str, field: str) -> str:
    """``value`` if it holds no control character but tab and is not too long."""
    if _CONTROL.search(value) or len(value) > MAX_TEXT_CHARS:
        raise SpecError(where, field, "holds control characters or is too long")
    return value


def check_request(method: str, path: str, query: str, where: str, at: str) -> None:
    """A method token, and a path and query of printable ASCII (as recorded URLs are)."""
    if not _METHOD.fullmatch(method):
        raise SpecError(where, f"{at}.method", f"not an HTTP method: {method[:30]!r}")
    if len(path) > MAX_TEXT_CHARS or not _PATH.fullmatch(path):
        raise SpecError(where, f"{at}.url", "path is not printable ASCII starting with /")
    if len(query) > MAX_TEXT_CHARS or not _QUERY.fullmatch(query):
        raise SpecError(where, f"{at}.url", "query is not printable ASCII")


def check_headers(
    headers: Iterable[tuple[str, str]], kept: frozenset[str], where: str, at: str
) -> None:
    """Only the header names a replay keeps (lower case), values without control characters."""
    for j, (name, value) in enumerate(headers):
        if name not in kept:
            raise SpecError(where, f"{at}.headers[{j}]", f"{name[:60]!r} is not a kept header")
        check_text(value, where, f"{at}.headers[{j}]")


def check_body(sha: str | None, size_bytes: int, where: str, at: str) -> None:
    """A resource without a body hash has no body: a manifest cannot name a file by path."""
    if sha is None and size_bytes != 0:
        raise SpecError(where, f"{at}.body_sha256", "null, but size_bytes is not 0")
