"""Images head-of-line blocking (seed 000 §4.2, Fig. 1 and Table 2).

N images of one size, in three variants that render the same pixels:

* ``files``: N separate PNGs on one origin, each shown at its natural size;
* ``sprite``: one PNG holding all N tiles in a grid ("concatenated"), each tile shown by an
  element with that PNG as CSS background at the tile's ``background-position``; the sprite is
  padded to N x size bytes, so both variants move the same bytes;
* ``sharded``: the separate PNGs dealt round-robin over 4 origins (seed 000 used four hosts).

Every tile is a real ``px`` x ``px`` RGB PNG: its own colour with its number drawn as a 4x4
grid of lighter bits, padded to the exact size with a private chunk of random bytes.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass

from h2lab.errors import SpecError
from h2lab.pages.gen_common import (
    MAX_ORIGINS,
    TILE_GRID,
    Body,
    choice,
    convert,
    in_range,
    origin_names,
    pad_png,
    page_head,
    parse_size,
    png_rgb,
    read_fields,
    size_text,
    tile_png,
    tile_rows,
)

KIND = "images"
KEYS = ("preset", "n", "size", "px", "variant", "origins", "seed")
VARIANTS = ("files", "sprite", "sharded")
SHARDS = 4  # seed 000 §4.2: "non-concatenated on four hosts"
MAX_IMAGES = 2000
MIN_PX, MAX_PX = 8, 256

# Seed 000 Table 2 gives total page sizes: (a) 10 large files 2,177,600 B, (b) 42 medium files
# 1,075,000 B, (c) 400 small files 610,000 B; per file 217,760 B, ~25,595 B and 1,525 B.
# Fig. 1 gives only counts ((a) 380 small, (b) 42 medium, (c) 30 large): it uses the same sizes.
SMALL_BYTES = 610_000 // 400
MEDIUM_BYTES = 1_075_000 // 42
LARGE_BYTES = 2_177_600 // 10
PRESETS: dict[str, tuple[int, int]] = {
    "fig1a": (380, SMALL_BYTES),
    "fig1b": (42, MEDIUM_BYTES),
    "fig1c": (30, LARGE_BYTES),
    "table2a": (10, LARGE_BYTES),
    "table2b": (42, MEDIUM_BYTES),
    "table2c": (400, SMALL_BYTES),
}


def default_px(size_bytes: int) -> int:
    """Tile edge: 32 px below 10 KB, 64 px below 100 KB, else 128 px (icons, thumbnails,
    photos: larger files look larger)."""
    return 32 if size_bytes < 10_000 else 64 if size_bytes < 100_000 else 128


@dataclass(frozen=True)
class ImagesSpec:
    count: int
    size_bytes: int
    """bytes of each image (the sprite has count x size_bytes)"""
    px: int
    """tile edge in CSS px (= image pixels: shown at natural size)"""
    variant: str
    origins: int
    seed: int
    preset: str | None = None

    @property
    def name(self) -> str:
        parts = []
        preset = PRESETS.get(self.preset or "")
        if self.preset:
            parts.append(f"preset={self.preset}")
        if preset is None or preset[0] != self.count:
            parts.append(f"n={self.count}")
        if preset is None or preset[1] != self.size_bytes:
            parts.append(f"size={size_text(self.size_bytes)}")
        if self.px != default_px(self.size_bytes):
            parts.append(f"px={self.px}")
        if self.variant != "files":
            parts.append(f"variant={self.variant}")
        if self.variant == "sharded" and self.origins != SHARDS:
            parts.append(f"origins={self.origins}")
        if self.seed:
            parts.append(f"seed={self.seed}")
        return f"synthetic:{KIND}:" + ",".join(parts)


def parse(body: str, spec: str, source: str, field: str) -> ImagesSpec:
    f = read_fields(body, spec, KEYS, source, field)
    preset = f.get("preset")
    if preset is not None and preset not in PRESETS:
        allowed = ", ".join(PRESETS)
        raise SpecError(source, f"{field}.preset", f"unknown preset {preset!r} (known: {allowed})")
    if preset is None and not {"n", "size"} <= set(f):
        missing = "n" if "n" not in f else "size"
        raise SpecError(source, f"{field}.{missing}", "missing (give preset= or n= and size=)")
    n0, size0 = PRESETS[preset] if preset else (0, 0)
    count = in_range(convert(f, "n", int, n0, source, field), 1, MAX_IMAGES, source, field, "n")
    size = convert(f, "size", parse_size, size0, source, field)
    px = convert(f, "px", int, default_px(size), source, field)
    in_range(px, MIN_PX, MAX_PX, source, field, "px")
    if px % TILE_GRID:
        raise SpecError(source, f"{field}.px", f"must be a multiple of {TILE_GRID}, got {px}")
    variant = choice(f, "variant", VARIANTS, "files", source, field)
    if "origins" in f and variant != "sharded":
        raise SpecError(source, f"{field}.origins", "only with variant=sharded")
    origins = convert(f, "origins", int, SHARDS if variant == "sharded" else 1, source, field)
    if variant == "sharded":
        in_range(origins, 2, MAX_ORIGINS, source, field, "origins")
    seed = convert(f, "seed", int, 0, source, field)
    # The largest tile PNG (all 16 bits set in a checker is the least compressible pattern).
    smallest = max(len(tile_png(i, px)) for i in (0, 0x5A5A, 0xA5A5, 0xFFFF)) + 12
    if not smallest <= size <= 10 * 1000**2:
        raise SpecError(
            source,
            f"{field}.size",
            f"must be {smallest} B (a {px} px tile) ..10 MB, got {size} (a smaller px= fits less)",
        )
    return ImagesSpec(count, size, px, variant, origins, seed, preset)


def sprite_columns(count: int) -> int:
    """Columns of the sprite grid: about square."""
    return math.ceil(math.sqrt(count))


def sprite_png(count: int, px: int) -> bytes:
    """All tiles in one unpadded PNG, tile ``i`` at column ``i % C``, row ``i // C``; cells
    past the last tile are white."""
    cols = sprite_columns(count)
    nrows = math.ceil(count / cols)
    tiles = [tile_rows(i, px) for i in range(count)]
    blank = b"\xff" * (3 * px)
    rows = []
    for r in range(nrows):
        for y in range(px):
            rows.append(
                b"".join(
                    tiles[r * cols + c][y] if r * cols + c < count else blank for c in range(cols)
                )
            )
    return png_rgb(cols * px, nrows * px, rows)


def build(spec: ImagesSpec) -> Iterator[Body]:
    origins = origin_names(spec.origins)
    rng = random.Random(f"h2lab-images-{spec.seed}")
    px = spec.px
    style = (
        "body{margin:8px;font:14px sans-serif}"
        ".g{display:flex;flex-wrap:wrap;gap:2px}"
        f".g>*{{display:block;width:{px}px;height:{px}px;margin:0}}"
    )
    what = f"{spec.count} images of {spec.size_bytes} B"
    if spec.variant == "sprite":
        sprite = Body(
            origins[0],
            "/img/sprite.png",
            "image/png",
            pad_png(sprite_png(spec.count, px), spec.count * spec.size_bytes, rng),
        )
        style += f".g>i{{background:url({sprite.ref}) no-repeat}}"
        cols = sprite_columns(spec.count)
        tiles = "\n".join(
            f'<i style="background-position:-{i % cols * px}px -{i // cols * px}px"></i>'
            for i in range(spec.count)
        )
        html = (
            page_head(spec.name, style)
            + f"<body><p>{what} as one sprite</p>\n<div class=g>\n{tiles}\n</div></body></html>\n"
        )
        yield Body(origins[0], "/index.html", "text/html; charset=utf-8", html.encode())
        yield sprite
        return
    images = [
        Body(
            origins[i % len(origins)],
            f"/img/{i:05d}.png",
            "image/png",
            pad_png(tile_png(i, px), spec.size_bytes, rng),
        )
        for i in range(spec.count)
    ]
    tiles = "\n".join(f'<img src="{b.ref}" alt="">' for b in images)
    where = f"over {len(origins)} origins" if len(origins) > 1 else "as separate files"
    html = (
        page_head(spec.name, style)
        + f"<body><p>{what} {where}</p>\n<div class=g>\n{tiles}\n</div></body></html>\n"
    )
    yield Body(origins[0], "/index.html", "text/html; charset=utf-8", html.encode())
    yield from images
