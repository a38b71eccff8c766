"""Synthetic pages: N objects of one size spread over K origins, plus an index.html.

Deterministic from ``seed``: the same spec gives the same bytes (and the same digest).
Each object is a valid PNG image of exactly the asked size: one coloured pixel plus a private
ancillary chunk of random bytes as padding (decoders skip it; nothing can compress it). The
index shows every object as a 96x96 px tile (``<img>``, scheme-relative URLs, so the same page
loads over http and https), so a browser downloads all of them before its load event and its
visual progress grows with each image. Objects below :data:`MIN_PNG_BYTES` are raw random bytes
(``.bin``), fetched but not displayable.
"""

from __future__ import annotations

import random
import re
import struct
import zlib
from dataclasses import dataclass

from h2lab.errors import SpecError, UnitError
from h2lab.pages.manifest import Page, Resource, content_digest
from h2lab.paths import cache_root
from h2lab.units import format_size, parse_size_bytes

# Browsers' per-host connection limit is 6; 250 origins would exhaust the address plan.
MAX_ORIGINS = 64
MAX_OBJECTS = 10_000
MAX_OBJECT_BYTES = 100 * 1000**2

ORIGIN_DOMAIN = "h2lab.test"  # RFC 2606 reserves .test: never resolvable outside the lab
LAYOUT_VERSION = 2  # 2: PNG objects shown as <img> tiles (1: .bin preloads); in the cache path
TILE_PX = 96


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _png_parts(rgb: tuple[int, int, int]) -> tuple[bytes, bytes]:
    """A 1x1 RGB PNG split around where the padding chunk goes."""
    head = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
    tail = _chunk(b"IDAT", zlib.compress(bytes([0, *rgb]))) + _chunk(b"IEND", b"")
    return head, tail


MIN_PNG_BYTES = sum(map(len, _png_parts((0, 0, 0)))) + 12
"""Smallest PNG object: the 1x1 image plus an empty padding chunk."""


def tile_colour(i: int) -> tuple[int, int, int]:
    """A distinct, saturated, never-white colour per object."""
    import colorsys

    r, g, b = colorsys.hsv_to_rgb((i * 0.618033988749895) % 1.0, 0.85, 0.8)
    return round(r * 255), round(g * 255), round(b * 255)


def png_object(i: int, size_bytes: int, rng: random.Random) -> bytes:
    """Object ``i`` as a PNG of exactly ``size_bytes`` (>= MIN_PNG_BYTES)."""
    head, tail = _png_parts(tile_colour(i))
    pad = size_bytes - len(head) - len(tail) - 12
    return head + _chunk(b"pdNg", rng.randbytes(pad)) + tail


@dataclass(frozen=True)
class SyntheticSpec:
    count: int
    size_bytes: int
    origins: int
    seed: int

    @property
    def name(self) -> str:
        seed = f",seed={self.seed}" if self.seed else ""
        size = format_size(self.size_bytes)
        return f"synthetic:n={self.count},size={size},origins={self.origins}{seed}"


def parse(spec: str, source: str = "page", field: str = "page") -> SyntheticSpec:
    body = spec.removeprefix("synthetic:")
    fields: dict[str, str] = {}
    for part in filter(None, body.split(",")):
        key, sep, value = part.partition("=")
        if not sep:
            raise SpecError(source, field, f"expected key=value in {spec!r}, got {part!r}")
        if key not in {"n", "size", "origins", "seed"}:
            raise SpecError(source, f"{field}.{key}", "unknown key (known: n, size, origins, seed)")
        fields[key] = value
    try:
        count = int(fields.get("n", "16"))
        size = parse_size_bytes(fields.get("size", "10KB"))
        origins = int(fields.get("origins", "1"))
        seed = int(fields.get("seed", "0"))
    except (ValueError, UnitError) as exc:
        raise SpecError(source, field, f"{spec!r}: {exc}") from exc
    if not 1 <= count <= MAX_OBJECTS:
        raise SpecError(source, f"{field}.n", f"must be 1..{MAX_OBJECTS}, got {count}")
    if not 1 <= size <= MAX_OBJECT_BYTES:
        raise SpecError(source, f"{field}.size", f"must be 1 B..100 MB, got {size}")
    if not 1 <= origins <= MAX_ORIGINS:
        raise SpecError(source, f"{field}.origins", f"must be 1..{MAX_ORIGINS}, got {origins}")
    return SyntheticSpec(count=count, size_bytes=size, origins=origins, seed=seed)


def origin_names(k: int) -> tuple[str, ...]:
    return tuple(f"o{i + 1}.{ORIGIN_DOMAIN}" for i in range(k))


def layout(spec: SyntheticSpec) -> tuple[tuple[str, ...], tuple[Resource, ...], str]:
    """Pure part: origins, resources (index first) and the index.html text."""
    origins = origin_names(spec.origins)
    png = spec.size_bytes >= MIN_PNG_BYTES
    objects = tuple(
        Resource(
            origin=origins[i % spec.origins],
            path=f"/obj/{i:05d}.png" if png else f"/obj/{i:05d}.bin",
            size_bytes=spec.size_bytes,
            content_type="image/png" if png else "application/octet-stream",
        )
        for i in range(spec.count)
    )
    style = (
        "<style>body{margin:8px;font:14px sans-serif}"
        f"img{{width:{TILE_PX}px;height:{TILE_PX}px;image-rendering:pixelated;margin:2px}}"
        "</style>"
    )
    tiles = "\n".join(
        f'<img src="//{o.origin}{o.path}" alt="">'
        if png
        else f'<link rel="preload" as="fetch" href="//{o.origin}{o.path}">'
        for o in objects
    )
    html = (
        "<!doctype html>\n<html><head><meta charset=utf-8>"
        # no favicon request: it is not part of the page
        f'<title>{spec.name}</title><link rel="icon" href="data:,">{style}</head><body>'
        f"<p>{spec.count} objects of {spec.size_bytes} B over {spec.origins} origin(s)</p>\n"
        f"{tiles}\n</body></html>\n"
    )
    index = Resource(
        origin=origins[0],
        path="/index.html",
        size_bytes=len(html.encode()),
        content_type="text/html",
    )
    return origins, (index, *objects), html


def materialize(spec: SyntheticSpec) -> Page:
    """Write the page under the cache (once) and return its manifest."""
    origins, resources, html = layout(spec)
    slug = re.sub(r"[^a-z0-9]+", "-", spec.name.lower()).strip("-")
    docroot = cache_root() / "pages" / f"v{LAYOUT_VERSION}-{slug}"
    done = docroot / ".complete"
    index = docroot / resources[0].origin / "index.html"
    # A page cached by an earlier h2lab with another index is written again.
    if not done.exists() or not index.exists() or index.read_text() != html:
        rng = random.Random(f"h2lab-synthetic-{spec.seed}")
        for i, res in enumerate(resources[1:]):
            target = docroot / res.origin / res.path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            if res.content_type == "image/png":
                target.write_bytes(png_object(i, res.size_bytes, rng))
            else:
                target.write_bytes(rng.randbytes(res.size_bytes))
        index.parent.mkdir(parents=True, exist_ok=True)
        index.write_text(html)
        done.write_text(content_digest(docroot, resources) + "\n")
    return Page(
        name=spec.name,
        origins=origins,
        resources=resources,
        docroot=docroot,
        digest=done.read_text().strip(),
    )
