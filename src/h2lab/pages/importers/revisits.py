"""WARC records a replay cannot serve as recorded, resolved before a trial's browser (fresh,
with an empty cache) sees them.

* A ``revisit`` record (profiles ``identical-payload-digest`` and ``server-not-modified`` of
  WARC 1.0 and 1.1, or none) holds at most the HTTP head of a response whose payload is in an
  earlier record. When that record is in the file it is served at the revisit's URL with the
  revisit's own status and headers (as pywb does) and the original's body; a revisit without
  a head, with an empty one or with a ``304`` takes the original's status and headers too. A
  revisit whose original is not in the file is skipped.
* A ``304 Not Modified`` response answered a browser that had the body cached; a trial's
  browser starts with an empty cache, so it cannot be served. It is dropped: the URL is served
  by another response recorded for it, if any.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from h2lab.pages.importers.common import Recorded, clean_content_type, clean_headers, url_key
from h2lab.pages.importers.httphead import HttpHead

NOT_MODIFIED = 304


@dataclass(frozen=True)
class Found:
    """A response to serve, at its place in the file."""

    index: int
    """record index, counting from 0 over all records"""
    field: str
    """``record N URL``, for notes"""
    rec_id: str
    """``WARC-Record-ID``"""
    response: Recorded
    uri: str = ""
    """``WARC-Target-URI`` as recorded"""
    date: str = ""
    """``WARC-Date``"""
    digest: str = ""
    """``WARC-Payload-Digest``, lower case"""


@dataclass(frozen=True)
class Revisit:
    """A revisit record as read: where its original is to be found, and its own HTTP head."""

    index: int
    field: str
    rec_id: str
    url: str
    """the revisit's URL (``WARC-Target-URI``, checked)"""
    head: HttpHead | None
    """its HTTP head, if its block has one"""
    refers_to: str = ""
    """``WARC-Refers-To``: the original's record id"""
    target: str = ""
    """``WARC-Refers-To-Target-URI``, else the revisit's own ``WARC-Target-URI``"""
    date: str = ""
    """``WARC-Refers-To-Date``"""
    digest: str = ""
    """``WARC-Payload-Digest``, lower case"""


def warc_value(value: str | None) -> str:
    """A WARC header's value, without the ``<...>`` some writers put around URIs and ids."""
    text = (value or "").strip()
    return text[1:-1] if text.startswith("<") and text.endswith(">") else text


def _original(revisit: Revisit, responses: list[Found]) -> Found | None:
    """The response record ``revisit`` repeats: the one its ``WARC-Refers-To`` names, else one
    with its payload digest, else (when digests cannot tell) one at its target URI;
    preferring, among several, the target URI and then the ``WARC-Refers-To-Date``."""
    if revisit.refers_to:
        named = next((f for f in responses if f.rec_id == revisit.refers_to), None)
        if named is not None:
            return named
    same = [f for f in responses if revisit.digest and f.digest == revisit.digest]
    if not same:
        same = [
            f for f in responses if f.uri == revisit.target and not (revisit.digest and f.digest)
        ]
    if not same:
        return None
    return min(same, key=lambda f: (f.uri != revisit.target, f.date != revisit.date))


def _own_status(head: HttpHead | None) -> int | None:
    """The revisit's own status, when its head is one to serve (a valid status other than
    304, with headers)."""
    if head is None or not head.headers or not re.fullmatch(r"[0-9]{3}", head.status_code):
        return None
    status = int(head.status_code)
    return status if 100 <= status <= 599 and status != NOT_MODIFIED else None


def _served(revisit: Revisit, original: Recorded) -> tuple[Recorded, str]:
    """The response served at ``revisit``'s URL, and how (for its note)."""
    head = revisit.head
    status = _own_status(head)
    if head is None or status is None:
        as_304 = head is not None and head.status_code == str(NOT_MODIFIED)
        how = " (304 Not Modified)" if as_304 else ""
        served = replace(original, url=revisit.url)
        return served, f"{how}, served with its status, headers and body"
    ctype = head.get("content-type")
    served = replace(
        original,
        url=revisit.url,
        status=status,
        content_type=clean_content_type(ctype) if ctype else original.content_type,
        headers=clean_headers(head.headers),
    )
    return served, ", served with its body"


def resolve(
    revisit: Revisit, responses: list[Found], skipped: dict[str, int]
) -> tuple[Found | None, list[str]]:
    """What ``revisit`` serves (None if nothing) and the notes saying so. ``responses``: the
    usable response records; ``skipped``: record id -> index of the unusable ones."""
    original = _original(revisit, responses)
    if original is None:
        if revisit.refers_to in skipped:
            index = skipped[revisit.refers_to]
            return None, [f"skipped {revisit.field}: revisit of record {index}, which was skipped"]
        return None, [f"skipped {revisit.field}: revisit of a response not in this file"]
    served, how = _served(revisit, original.response)
    found = Found(revisit.index, revisit.field, revisit.rec_id, served, revisit.url)
    notes = [f"{revisit.field}: revisit of record {original.index}{how}"]
    if revisit.head is not None and _own_status(revisit.head) is not None:
        notes += revisit.head.dropped_notes(revisit.field)  # its head is served
    return found, notes


def drop_not_modified(found: list[Found]) -> tuple[list[Found], list[tuple[int, str]]]:
    """``found`` without its 304 responses, and a note (record index, text) on each."""
    full: dict[tuple[str, str], Found] = {}
    for f in found:
        if f.response.status != NOT_MODIFIED:
            full.setdefault((f.response.method, url_key(f.response.url)), f)
    kept: list[Found] = []
    notes: list[tuple[int, str]] = []
    for f in found:
        if f.response.status != NOT_MODIFIED:
            kept.append(f)
            continue
        other = full.get((f.response.method, url_key(f.response.url)))
        if other is None:
            text = "304 Not Modified with no recorded body to serve"
        else:
            status = other.response.status
            text = f"304 Not Modified; record {other.index} serves this URL (status {status})"
        notes.append((f.index, f"skipped {f.field}: {text}"))
    return kept, notes
