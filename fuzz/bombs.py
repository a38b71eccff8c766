"""Hostile inputs made on purpose: decompression bombs (about 1 KB that would decode to more
than the page budget) and an archive whose member leads out of its folder. Used as fuzz
seeds and by tests/unit/test_pages_import_bombs.py, from the files in ``fuzz/bombs/`` (making
them takes seconds: ``python -m fuzz.bombs`` writes them again)."""

from __future__ import annotations

import functools
import gzip
import io
import tarfile
from pathlib import Path

import brotli

FOLDER = Path(__file__).resolve().parent / "bombs"
BOMB_BYTES = 600 * 1000**2
"""What each bomb decodes to: past the page budget (MAX_PAGE_BYTES, 500 MB)."""


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


WARCS = ("br-body.warc", "gzip2-body.warc", "gzip-twice.warc.gz")


def warcs() -> list[bytes]:
    """The WARC bombs of ``fuzz/bombs/``, :data:`WARCS`."""
    return [(FOLDER / name).read_bytes() for name in WARCS]


def make() -> dict[str, bytes]:
    """Every bomb file, by name: WARCs of about 1 KB each, holding a brotli body, a gzip of
    gzip body, and (gzipped twice over) a record of :data:`BOMB_BYTES` zeros."""
    return {
        "br.bin": br_bomb(),
        "gzip2.bin": gzip2_bomb(),
        "br-body.warc": bomb_response("br", br_bomb()),
        "gzip2-body.warc": bomb_response("gzip, gzip", gzip2_bomb()),
        "gzip-twice.warc.gz": gzip.compress(zero_warc_gz(), 9, mtime=0),
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
