"""Hostile inputs made on purpose: decompression bombs (about 1 KB that would decode to more
than the page budget, and a few KB of gzipped WARC whose one script decodes to 2 GiB through
two or three layers) and an archive whose member leads out of its folder. Used as fuzz seeds
and by tests/unit/test_pages_import_bombs.py, from the files in ``fuzz/bombs/`` (making them
takes a minute and a half, the 2 GiB ones being compressed chunk by chunk: ``python -m
fuzz.bombs`` writes them again)."""

from __future__ import annotations

import functools
import gzip
import io
import tarfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import brotli

FOLDER = Path(__file__).resolve().parent / "bombs"
BOMB_BYTES = 600 * 1000**2
"""What each bomb decodes to: past the page budget (MAX_PAGE_BYTES, 500 MB)."""
LAYERED_BYTES = 2 * 1024**3
"""What the script of each layered capture (:func:`layered`) decodes to: 2 GiB."""
_CHUNK = 16 * 1024**2


@functools.cache
def br_bomb() -> bytes:
    """About 900 bytes of brotli that decode to :data:`BOMB_BYTES` zeros."""
    data: bytes = brotli.compress(bytes(BOMB_BYTES), quality=5)
    return data


@functools.cache
def gzip2_bomb() -> bytes:
    """About 1.1 KB of gzip of gzip that decodes (``Content-Encoding: gzip, gzip``) to
    :data:`BOMB_BYTES` zeros."""
    return gzip.compress(gzip.compress(bytes(BOMB_BYTES), 9, mtime=0), 9, mtime=0)


def bomb_response(coding: str, body: bytes) -> bytes:
    """A WARC response record whose body is ``body`` with ``Content-Encoding: coding``."""
    from tests.unit.test_pages_import import warc_bytes

    headers = [("Content-Type", "text/html"), ("Content-Encoding", coding)]
    return warc_bytes([("https://bomb.test/", "200 OK", headers, body)], compress=False)


def bodies() -> list[bytes]:
    """Bombs as the fuzz target ``body`` takes them (first byte: the codings)."""
    return [
        b"\x03" + (FOLDER / "br.bin").read_bytes(),
        b"\x06" + (FOLDER / "gzip2.bin").read_bytes(),
    ]


def _zeros(size: int) -> Iterator[bytes]:
    """``size`` zeros, :data:`_CHUNK` at a time: 2 GiB is never in memory."""
    chunk = bytes(_CHUNK)
    for done in range(0, size, _CHUNK):
        yield chunk[: min(_CHUNK, size - done)]


@functools.cache
def gzip_zeros(size: int = LAYERED_BYTES) -> bytes:
    """gzip (level 9, mtime 0) of ``size`` zeros: 2 GiB gives about 2 MB (deflate's 1032:1)."""
    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return b"".join([*(c.compress(z) for z in _zeros(size)), c.flush()])


@functools.cache
def br_zeros(size: int = LAYERED_BYTES) -> bytes:
    """brotli (quality 11) of ``size`` zeros, streamed: 2 GiB gives 3.4 KB, in 76 s."""
    c = brotli.Compressor(quality=11)
    return b"".join([*(c.process(z) for z in _zeros(size)), c.finish()])


_Response = tuple[str, str, list[tuple[str, str]], bytes]
LAYERED_HTML = b"<html><script src=/a.js></script><link rel=stylesheet href=/a.css></html>"
LAYERED_CSS = b"body { margin: 0 }\n" * 40


def layered(coding: str, body: bytes, *, twice: bool = False) -> bytes:
    """A gzipped WARC (gzip per record; the file gzipped once more if ``twice``) of three
    responses: the entry HTML, ``https://bomb.test/a.js`` with ``Content-Encoding: coding``
    and ``body`` (record 1, the bomb), and a gzipped stylesheet after it."""
    from tests.unit.test_pages_import import warc_bytes

    def res(path: str, ctype: str, coding: str | None, raw: bytes) -> _Response:
        headers = [("Content-Type", ctype)] + ([("Content-Encoding", coding)] if coding else [])
        return (f"https://bomb.test/{path}", "200 OK", headers, raw)

    warc = warc_bytes(
        [
            res("", "text/html", None, LAYERED_HTML),
            res("a.js", "text/javascript", coding, body),
            res("a.css", "text/css", "gzip", gzip.compress(LAYERED_CSS, 9, mtime=0)),
        ]
    )
    return gzip.compress(warc, 9, mtime=0) if twice else warc


LAYERED = {
    "gzip-2g-body.warc.gz": "warc gzip, gzip",
    "br-2g-body.warc.gz": "warc gzip, br",
    "gzip2-2g-body.warc.gz": "warc gzip, gzip, gzip",
    "gzip-2g-body-twice.warc.gz": "file gzip, warc gzip, gzip",
}
"""The layered captures (:func:`make_layered`), each with its layers, outermost first."""


def make_layered() -> dict[str, bytes]:
    """The captures of :data:`LAYERED`: a few KB each, whose script decodes to 2 GiB."""
    return {
        "gzip-2g-body.warc.gz": layered("gzip", gzip_zeros()),
        "br-2g-body.warc.gz": layered("br", br_zeros()),
        "gzip2-2g-body.warc.gz": layered("gzip, gzip", gzip.compress(gzip_zeros(), 9, mtime=0)),
        "gzip-2g-body-twice.warc.gz": layered("gzip", gzip_zeros(), twice=True),
    }


WARCS = ("br-body.warc", "gzip2-body.warc", "gzip-twice.warc.gz", *LAYERED)


def warcs() -> list[bytes]:
    """The WARC bombs of ``fuzz/bombs/``, :data:`WARCS`."""
    return [(FOLDER / name).read_bytes() for name in WARCS]


def make() -> dict[str, bytes]:
    """Every bomb file, by name: WARCs of about 1 KB each, holding a brotli body, a gzip of
    gzip body, and (gzipped twice over) a record of :data:`BOMB_BYTES` zeros; and the layered
    captures (:func:`make_layered`)."""
    return {
        "br.bin": br_bomb(),
        "gzip2.bin": gzip2_bomb(),
        "br-body.warc": bomb_response("br", br_bomb()),
        "gzip2-body.warc": bomb_response("gzip, gzip", gzip2_bomb()),
        "gzip-twice.warc.gz": gzip.compress(zero_warc_gz(), 9, mtime=0),
        **make_layered(),
    }


@functools.cache
def zero_warc_gz() -> bytes:
    """A gzipped WARC whose one record holds :data:`BOMB_BYTES` zeros (about 600 KB)."""
    from tests.unit.test_pages_import import warc_record

    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n"
    record = warc_record("response", "https://bomb.test/", "r0", head + bytes(BOMB_BYTES))
    return gzip.compress(record, 9, mtime=0)


def tar_escape() -> bytes:
    """A page archive whose member is named ``../escaped``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("../escaped")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    return buf.getvalue()


if __name__ == "__main__":
    FOLDER.mkdir(exist_ok=True)
    for name, data in make().items():
        (FOLDER / name).write_bytes(data)
        print(f"{FOLDER / name}: {len(data)} bytes")
