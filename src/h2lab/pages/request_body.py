"""A recorded request's body, as replay matches it (issue #57): a POST (any method with a body)
is answered from the recorded request of the same method and URL whose body is the same, else
whose form fields agree most, so that a journey's login, recorded once, is answered in every
replay although a field changes per visit (a CSRF token, a timestamp).

The rule (the origin's, origin/page.go, holds the same; docs/pages.md, "POSTs"):

1. the recorded body's SHA-256 equals the request's: that one;
2. else, for a form (``application/x-www-form-urlencoded``), the recorded form with the most
   fields of the same name and value, not counting the fields whose name says they change per
   visit (:data:`VOLATILE`: csrf, xsrf, token, nonce, timestamp, ``ts``, and names starting
   ``_``); ties go to the first recorded;
3. else the first recorded for that method and URL (as a GET is matched).

A page keeps only digests of request bodies and of form values, never the values (a login's
password is not in the page): ``sha256`` of the body, and per field its name and the first 16
hex digits of its value's SHA-256.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import parse_qsl

MAX_FORM_FIELDS = 200
"""Most fields of a form kept (a login has a handful)."""
FORM_TYPE = "application/x-www-form-urlencoded"
VOLATILE = re.compile(r"csrf|xsrf|token|nonce|timestamp|^ts$|^_", re.IGNORECASE)
"""Field names whose values change per visit: left out of the comparison."""


@dataclass(frozen=True)
class RequestBody:
    """What a page keeps of a recorded request's body."""

    sha256: str
    fields: tuple[tuple[str, str], ...] = ()
    """(name, first 16 hex digits of the value's SHA-256) of a form's fields, in order"""


def fingerprint(body: bytes, content_type: str | None) -> RequestBody:
    """``body``'s digest, and its form's fields when it is one."""
    fields: tuple[tuple[str, str], ...] = ()
    if (content_type or "").split(";", 1)[0].strip().lower() == FORM_TYPE:
        try:
            pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True)
        except (UnicodeDecodeError, ValueError):
            pairs = []
        fields = tuple((k[:200], _digest(v.encode())) for k, v in pairs[:MAX_FORM_FIELDS])
    return RequestBody(hashlib.sha256(body).hexdigest(), fields)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def agreement(recorded: Sequence[tuple[str, str]], asked: Sequence[tuple[str, str]]) -> int:
    """How many fields of ``asked`` (not :data:`VOLATILE`) ``recorded`` has with the same
    value (each name's first value)."""
    mine = dict(reversed(list(recorded)))
    theirs = dict(reversed(list(asked)))
    return sum(1 for k, v in theirs.items() if not VOLATILE.search(k) and mine.get(k) == v)


def best(candidates: Sequence[RequestBody | None], asked: RequestBody) -> int:
    """The index in ``candidates`` (the recorded requests of one method and URL, in order) that
    answers ``asked``, by the rule above."""
    for i, c in enumerate(candidates):
        if c is not None and c.sha256 == asked.sha256:
            return i
    scores = [agreement(c.fields, asked.fields) if c is not None else -1 for c in candidates]
    top = max(scores, default=0)
    return scores.index(top) if top > 0 else 0
