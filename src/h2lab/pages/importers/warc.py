"""WARC (ISO 28500, 1.0/1.1, gzip per record or not) -> :class:`~.common.Capture`.

``response`` records become resources (status, headers, body); the ``request`` record sent with
each (``WARC-Concurrent-To``) gives its method; a ``revisit`` record is served with the body of
the response it repeats, when that is in the file (:mod:`.revisits`). ``warcio`` splits the file
into records; each record is read by :mod:`.warc_records`: its HTTP head by :mod:`.httphead`
(which names the header lines it drops), its body from ``record.raw_stream``, decoded there,
strictly (warcio's own ``content_stream()`` falls back to the raw bytes when decoding fails, and
would hide a broken capture). Other record types (warcinfo, metadata, resource, conversion)
are skipped.
"""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
import zlib
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.statusandheaders import StatusAndHeadersParserException

from h2lab.errors import SpecError
from h2lab.pages.importers.common import (
    MAX_PAGE_BYTES,
    Capture,
    RatioBudget,
    bomb_cap,
    bomb_reason,
    finish,
)
from h2lab.pages.importers.warc_records import WarcPass

_READ_CHUNK = 1 << 20


MAX_WARC_DECODED_BYTES = 2 * MAX_PAGE_BYTES
"""Most bytes a gzipped WARC may inflate to (records, heads and bodies as stored): the page cap
twice over, as for a HAR file; a small file is held to :func:`~.common.bomb_cap` of its size."""


def _check_gzip_complete(path: Path, data: Path | None = None) -> bool:
    """A ``.warc.gz`` is a series of gzip members; warcio stops quietly where the file ends,
    even inside a member. Inflate the file once (output discarded) to find that, and to refuse
    one that inflates past :data:`MAX_WARC_DECODED_BYTES` or :func:`~.common.bomb_cap` of the
    size of ``path`` (the file the user named, on disk, however many layers lie between;
    ``data``, if given, is what to read). Whether it is gzip at all."""
    try:
        encoded = path.stat().st_size
        with (data or path).open("rb") as fh:
            if fh.read(2) != b"\x1f\x8b":
                return False
            cap = min(MAX_WARC_DECODED_BYTES, bomb_cap(encoded))
            fh.seek(0)
            in_member = _inflate_all(fh, path, cap, encoded)
    except OSError as exc:
        raise SpecError(path, "warc", f"cannot read: {exc.strerror}") from exc
    except zlib.error as exc:
        raise SpecError(path, "warc", f"corrupt gzip data: {exc}") from exc
    if in_member:
        raise SpecError(path, "warc", "file is truncated (it ends inside a gzip member)")
    return True


def _inflate_all(fh: BinaryIO, path: Path, cap: int, encoded: int) -> bool:
    """Inflate every gzip member of ``fh`` (output counted, not kept); whether it ends inside a
    member. Past ``cap`` bytes: a SpecError naming the limit."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    in_member = False
    decoded = 0
    while chunk := fh.read(_READ_CHUNK):
        data = chunk
        while data:
            in_member = True
            decoded += len(d.decompress(data, _READ_CHUNK))
            if decoded > cap:
                why = (
                    bomb_reason(cap, encoded)
                    if cap < MAX_WARC_DECODED_BYTES
                    else f"inflates to more than {cap} bytes (MAX_WARC_DECODED_BYTES)"
                )
                raise SpecError(path, "warc", why)
            if d.eof:
                data = d.unused_data
                d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                in_member = False
            else:
                data = d.unconsumed_tail
    return in_member


def read_warc(path: Path) -> Capture:
    """Read every response of a WARC file. Errors name the file and the record
    (``record N <target URI>``, N counting from 0 over all records). A file gzipped twice (a
    gzip member holding a ``.warc.gz``) is unwrapped once, with a note. Whatever its layers of
    gzip, the bodies decoded from it are held together to :func:`~.common.bomb_cap` of its size
    on disk (:class:`~.common.RatioBudget`): a record past that is skipped with a note."""
    gzipped = _check_gzip_complete(path)
    inner = _unwrap_double_gzip(path)
    if inner is None:
        return _read_warc(path, path, ("warc gzip",) if gzipped else ())
    try:
        capture = _read_warc(path, inner, ("file gzip", "warc gzip"))
    finally:
        inner.unlink(missing_ok=True)
    note = "the file is gzipped twice: read the gzipped WARC inside it"
    return replace(capture, notes=(note, *capture.notes))


def _unwrap_double_gzip(path: Path) -> Path | None:
    """When ``path``'s gzip data is itself gzip, the outer layer inflated into a temporary
    file (the caller removes it); else None."""
    try:
        with gzip.open(path, "rb") as outer:
            if outer.read(2) != b"\x1f\x8b":
                return None
    except (OSError, EOFError, zlib.error):
        return None  # not gzip at all: the WARC reader says what it is
    fd, name = tempfile.mkstemp(prefix="h2lab-warc-", suffix=".warc.gz")
    try:
        # streamed, and no bigger than bomb_cap of the file: _check_gzip_complete(path) has
        # inflated this layer already (read_warc), within that
        with os.fdopen(fd, "wb") as out, gzip.open(path, "rb") as outer:
            shutil.copyfileobj(outer, out, _READ_CHUNK)
        _check_gzip_complete(path, Path(name))
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return Path(name)


_KINDS = (
    (b"<!doctype html", "it looks like HTML"),
    (b"<html", "it looks like HTML"),
    (b"{", "it looks like JSON: a HAR is imported as har:FILE"),
    (b"PK\x03\x04", "it looks like a ZIP archive"),
    (b"%PDF", "it looks like a PDF"),
    (b"\x1f\x8b", "it is gzip, but of something else"),
)


def looks_like(path: Path) -> str:
    """What a file that is not a WARC looks like, from its first bytes (never the bytes)."""
    try:
        with path.open("rb") as f:
            head = f.read(512)
    except OSError:
        return "it cannot be read"
    if not head:
        return "it is empty"
    start = head.lstrip().lower()
    for magic, kind in _KINDS:
        if start.startswith(magic.lower()):
            return kind
    printable = sum(32 <= b < 127 or b in b"\r\n\t" for b in head) / len(head)
    return "it looks like text" if printable > 0.95 else "it looks like binary data"


def _read_warc(path: Path, data: Path, layers: tuple[str, ...]) -> Capture:
    """:func:`read_warc` of the WARC in ``data`` (``path``: the file the user named, whose
    size on disk bounds what its bodies decode to; ``layers``: the gzip between the two)."""
    try:
        records = WarcPass(path, RatioBudget(path.stat().st_size, layers))
        fh = data.open("rb")
    except OSError as exc:
        raise SpecError(path, "warc", f"cannot read: {exc.strerror}") from exc
    i = -1
    try:
        with fh:
            for i, record in enumerate(ArchiveIterator(fh, no_record_parse=True)):
                records.add(i, record)
    except SpecError:
        raise
    except (ArchiveLoadFailed, StatusAndHeadersParserException) as exc:
        if i < 0:  # not even a first record: say what the file is instead, not its bytes
            raise SpecError(path, "warc", f"not a WARC file ({looks_like(data)})") from exc
        raise SpecError(
            path, f"after record {i}", f"not a readable WARC: {str(exc)[:200]}"
        ) from exc
    except (AttributeError, IndexError) as exc:
        where = "warc" if i < 0 else f"after record {i}"
        raise SpecError(path, where, "not a readable WARC (record headers cut short)") from exc
    except (zlib.error, EOFError, OSError, ValueError) as exc:
        where = "warc" if i < 0 else f"after record {i}"
        raise SpecError(path, where, f"not a readable WARC ({type(exc).__name__}: {exc})") from exc
    if i < 0:
        raise SpecError(path, "warc", "no WARC records")
    responses, start_url, notes = records.served()
    if not responses:
        unusable = records.unusable
        why = f" ({len(unusable)} unusable; the first: {unusable[0]})" if unusable else ""
        raise SpecError(path, "warc", f"no response records{why}")
    return finish("warc", path, responses, start_url, notes)
