"""Shared parts of the synthetic page generators: origins, a PNG encoder, typed fillers,
byte budgets and the ``key=value`` spec reader.

Everything here is pure and deterministic: randomness comes from a :class:`random.Random`
passed in, seeded from the page spec (docs/pages-synthetic.md).
"""

from __future__ import annotations

import base64
import colorsys
import random
import struct
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from h2lab.errors import SpecError, UnitError
from h2lab.units import format_size, parse_size_bytes

ORIGIN_DOMAIN = "h2lab.test"  # RFC 2606 reserves .test: never resolvable outside the lab
# Browsers' per-host connection limit is 6; 250 origins would exhaust the address plan.
MAX_ORIGINS = 64

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PAD_CHUNK = b"pdNg"
"""Private, ancillary (lower-case first letter), safe-to-copy chunk: decoders skip it."""
CHUNK_OVERHEAD = 12  # length + type + CRC (PNG spec §5.3)

ASSET_CACHE = ("cache-control", "max-age=31536000")
"""Header of every generated subresource (not the entry document), as a static site sends for
its assets: it makes a response reusable from the HTTP cache within one load. Chromium serves a
page's request from the 103 Early Hints preload only through the HTTP cache: without it every
hinted body was downloaded twice (docs/pages-synthetic.md). Each load starts with an empty cache
(a new browser context), so nothing carries over between trials."""

CORS = (("access-control-allow-origin", "*"),)
"""Header of responses a page fetches in CORS mode (fonts, fetch preloads) from any origin."""


@dataclass(frozen=True)
class Body:
    """One response of a generated page, with its bytes (the entry document comes first)."""

    origin: str
    """hostname of the origin serving it"""
    path: str
    """URL path, starting with ``/``"""
    content_type: str
    data: bytes
    headers: tuple[tuple[str, str], ...] = ()
    """response headers to replay (see manifest.KEPT_HEADERS)"""
    method: str = "GET"
    status: int = 200

    @property
    def ref(self) -> str:
        """Scheme-relative URL, so the same page loads over http and https."""
        return f"//{self.origin}{self.path}"


THIRD_PARTY_DOMAIN = "third{}.test"
"""The domain of a synthetic page's site ``s`` (1, 2...) after its own: a third party."""


def origin_names(k: int, sites: int = 1) -> tuple[str, ...]:
    """``k`` origins, ``o1`` to ``ok``, over ``sites`` registrable domains in equal runs: the
    first run (with the entry document's ``o1``) under :data:`ORIGIN_DOMAIN`, the page's own
    site, and each other run under a third party's, ``third1.test``..."""
    names = []
    for i in range(k):
        site = i * sites // k
        domain = ORIGIN_DOMAIN if site == 0 else THIRD_PARTY_DOMAIN.format(site)
        names.append(f"o{i + 1}.{domain}")
    return tuple(names)


def tile_colour(i: int) -> tuple[int, int, int]:
    """A distinct, saturated, never-white colour per object (golden-ratio hue steps)."""
    r, g, b = colorsys.hsv_to_rgb((i * 0.618033988749895) % 1.0, 0.85, 0.8)
    return round(r * 255), round(g * 255), round(b * 255)


def hex_colour(rgb: tuple[int, int, int]) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb)


# --- PNG -------------------------------------------------------------------------------------


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_rgb(width: int, height: int, rows: Iterable[bytes]) -> bytes:
    """An 8-bit RGB PNG (colour type 2), every scanline with filter type 0 (None)."""
    raw = b"".join(b"\x00" + row for row in rows)
    assert len(raw) == height * (1 + 3 * width), "rows do not match the image size"
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        PNG_SIGNATURE
        + png_chunk(b"IHDR", ihdr)
        + png_chunk(b"IDAT", zlib.compress(raw, 9))
        + png_chunk(b"IEND", b"")
    )


IHDR_END = len(PNG_SIGNATURE) + CHUNK_OVERHEAD + 13


def pad_png(png: bytes, size_bytes: int, rng: random.Random) -> bytes:
    """``png`` grown to exactly ``size_bytes`` by a padding chunk of random bytes after IHDR
    (incompressible, so no transfer encoding can shrink it). ValueError if it does not fit."""
    pad = size_bytes - len(png) - CHUNK_OVERHEAD
    if pad < 0:
        raise ValueError(f"a {len(png)} B image does not fit in {size_bytes} B")
    return png[:IHDR_END] + png_chunk(PAD_CHUNK, rng.randbytes(pad)) + png[IHDR_END:]


TILE_GRID = 4
"""A tile shows its number as a 4x4 grid of bits (16 bits), lighter cells for ones."""


def tile_rows(i: int, px: int) -> list[bytes]:
    """Pixel rows (RGB) of tile ``i``: its colour, with the bits of ``i`` as lighter cells, so
    every tile looks different (``px`` a multiple of :data:`TILE_GRID`)."""
    base = tile_colour(i)
    light = tuple(c + (255 - c) // 2 for c in base)
    cell = px // TILE_GRID
    rows = []
    for r in range(TILE_GRID):
        row = b"".join(
            bytes(light if (i >> (r * TILE_GRID + c)) & 1 else base) * cell
            for c in range(TILE_GRID)
        )
        rows.extend([row] * cell)
    return rows


def tile_png(i: int, px: int) -> bytes:
    """Tile ``i`` as an unpadded PNG of ``px`` x ``px`` pixels."""
    return png_rgb(px, px, tile_rows(i, px))


# --- text fillers ----------------------------------------------------------------------------


def filler(rng: random.Random, n: int) -> str:
    """``n`` random base64 characters: no ``*``, ``-``, ``<``, ``>``, quote or backslash, so they
    are safe inside CSS/JS comments, HTML comments and JSON strings, and do not compress."""
    if n <= 0:
        return ""
    return base64.b64encode(rng.randbytes(n * 3 // 4 + 3)).decode()[:n]


def padded(text: str, size_bytes: int, rng: random.Random, open_: str, close: str) -> bytes:
    """``text`` followed by a comment ``open_ ... close`` of filler, exactly ``size_bytes``;
    the text alone when there is no room for a comment."""
    data = text.encode()
    room = size_bytes - len(data) - len(open_) - len(close)
    if room < 0:
        return data
    return data + (open_ + filler(rng, room) + close).encode()


def css_body(text: str, size_bytes: int, rng: random.Random) -> bytes:
    return padded(text, size_bytes, rng, "/*", "*/")


def js_body(text: str, size_bytes: int, rng: random.Random) -> bytes:
    return padded(text, size_bytes, rng, "/*", "*/")


def html_body(text: str, size_bytes: int, rng: random.Random) -> bytes:
    return padded(text, size_bytes, rng, "<!--", "-->\n")


def json_body(size_bytes: int, rng: random.Random) -> bytes:
    """A JSON object ``{"pad":"..."}`` of exactly ``size_bytes`` (>= 12)."""
    head, tail = '{"pad":"', '"}'
    return (head + filler(rng, size_bytes - len(head) - len(tail)) + tail).encode()


JSON_MIN_BYTES = len(b'{"pad":""}')


# --- byte budgets ----------------------------------------------------------------------------


def split_bytes(
    total: int, floors: Sequence[int], rng: random.Random | None, sigma: float = 0.8
) -> list[int]:
    """Split ``total`` bytes into ``len(floors)`` sizes, each >= its floor, summing exactly to
    ``total``: equal shares when ``rng`` is None, else log-normal shares (``sigma``) as real
    pages have (a few large files, many small). ValueError if the floors exceed the total."""
    count = len(floors)
    spare = total - sum(floors)
    if spare < 0:
        raise ValueError(f"{count} bodies need at least {sum(floors)} B, budget {total} B")
    weights = [1.0] * count if rng is None else [rng.lognormvariate(0.0, sigma) for _ in floors]
    scale = spare / sum(weights)
    sizes = [f + int(w * scale) for f, w in zip(floors, weights, strict=True)]
    for k in range(total - sum(sizes)):  # hand out what rounding down left over
        sizes[k % count] += 1
    return sizes


# --- spec reading ----------------------------------------------------------------------------


def read_fields(
    body: str, spec: str, known: Sequence[str], source: str, field: str
) -> dict[str, str]:
    """``k=v,k=v`` -> dict, rejecting anything but ``known`` keys."""
    fields: dict[str, str] = {}
    for part in filter(None, body.split(",")):
        key, sep, value = part.partition("=")
        if not sep:
            raise SpecError(source, field, f"expected key=value in {spec!r}, got {part!r}")
        if key not in known:
            raise SpecError(source, f"{field}.{key}", f"unknown key (known: {', '.join(known)})")
        if key in fields:
            raise SpecError(source, f"{field}.{key}", "given twice")
        fields[key] = value
    return fields


T = TypeVar("T")


def convert(
    fields: dict[str, str],
    key: str,
    parse: Callable[[str], T],
    default: T,
    source: str,
    field: str,
) -> T:
    """``fields[key]`` parsed (or ``default``); a bad value is a SpecError naming the key."""
    if key not in fields:
        return default
    try:
        return parse(fields[key])
    except (ValueError, UnitError) as exc:
        raise SpecError(source, f"{field}.{key}", f"{fields[key]!r}: {exc}") from exc


def in_range(value: int, lo: int, hi: int, source: str, field: str, key: str) -> int:
    if not lo <= value <= hi:
        raise SpecError(source, f"{field}.{key}", f"must be {lo}..{hi}, got {value}")
    return value


def choice(
    fields: dict[str, str], key: str, allowed: Sequence[str], default: str, source: str, field: str
) -> str:
    value = fields.get(key, default)
    if value not in allowed:
        raise SpecError(
            source, f"{field}.{key}", f"unknown value {value!r} (allowed: {', '.join(allowed)})"
        )
    return value


def size_text(size_bytes: int) -> str:
    """Canonical size in a page name (``10KB``, ``1525B``)."""
    return format_size(size_bytes)


def parse_size(text: str) -> int:
    return parse_size_bytes(text)


def page_head(title: str, style: str, extra: str = "") -> str:
    """``<!doctype html>`` up to ``</head>``, with the data: icon that stops the favicon
    request (it is not part of the page)."""
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        f'<title>{title}</title><link rel="icon" href="data:,">'
        f"<style>{style}</style>{extra}</head>"
    )
