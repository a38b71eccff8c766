"""Synthetic pages: the ``n/size/origins`` objects page, and writing any generated page into
the page store (docs/pages-synthetic.md). Specs are parsed by :mod:`h2lab.pages.synthetic_spec`
(:func:`parse`, re-exported here).

Every generator is deterministic from its spec (``seed`` included): the same spec gives the same
bytes and so the same page id. A page is generated once through :class:`PageWriter` and found
again by its name (the canonical spec) on later resolves.

Objects page: each object is a valid PNG image of exactly the asked size: one coloured pixel
plus a private ancillary chunk of random bytes as padding (decoders skip it; nothing can
compress it). The index shows every object as a 96x96 px tile (``<img>``, scheme-relative URLs,
so the same page loads over http and https), so a browser downloads all of them before its load
event and its visual progress grows with each image. Objects below :data:`MIN_PNG_BYTES` are raw
random bytes (``.bin``), fetched but not displayable.
"""

from __future__ import annotations

import os
import random
import shutil
import struct
import zlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from h2lab.errors import SpecError
from h2lab.pages import gen_cssjs, gen_images, gen_mix, gen_shop
from h2lab.pages.gen_common import (
    ASSET_CACHE,
    MAX_ORIGINS,
    ORIGIN_DOMAIN,
    Body,
    origin_names,
    tile_colour,
)
from h2lab.pages.manifest import Page, PageWriter, Resource, find_page, load_page
from h2lab.pages.synthetic_spec import PageSpec, SyntheticSpec, parse

__all__ = [
    "MAX_ORIGINS",
    "MIN_PNG_BYTES",
    "ORIGIN_DOMAIN",
    "PageSpec",
    "SyntheticSpec",
    "bodies",
    "layout",
    "materialize",
    "origin_names",
    "parse",
    "png_object",
    "tile_colour",
]

GENERATOR_VERSION = 4
"""Part of every generated page's ``source``: a page written by an older generator (other
bytes for the same spec) is not reused. 4: subresources cacheable (:data:`ASSET_CACHE`);
3: content-addressed store (2: PNG tiles, 1: .bin)."""
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


def png_object(i: int, size_bytes: int, rng: random.Random) -> bytes:
    """Object ``i`` as a PNG of exactly ``size_bytes`` (>= MIN_PNG_BYTES)."""
    head, tail = _png_parts(tile_colour(i))
    pad = size_bytes - len(head) - len(tail) - 12
    return head + _chunk(b"pdNg", rng.randbytes(pad)) + tail


def _objects_layout(spec: SyntheticSpec) -> tuple[tuple[str, ...], tuple[Resource, ...], str]:
    origins = origin_names(spec.origins, spec.sites)
    png = spec.size_bytes >= MIN_PNG_BYTES
    objects = tuple(
        Resource(
            origin=origins[i % spec.origins],
            path=f"/obj/{i:05d}.png" if png else f"/obj/{i:05d}.bin",
            size_bytes=spec.size_bytes,
            content_type="image/png" if png else "application/octet-stream",
            headers=(ASSET_CACHE,),
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


def _objects_bodies(spec: SyntheticSpec) -> Iterator[Body]:
    _, resources, html = _objects_layout(spec)
    index, *objects = resources
    yield Body(index.origin, index.path, index.content_type, html.encode())
    rng = random.Random(f"h2lab-synthetic-{spec.seed}")
    for i, res in enumerate(objects):
        if res.content_type == "image/png":
            data = png_object(i, res.size_bytes, rng)
        else:
            data = rng.randbytes(res.size_bytes)
        yield Body(res.origin, res.path, res.content_type, data, res.headers)


def bodies(spec: PageSpec) -> Iterator[Body]:
    """Every response of the page with its bytes, the entry document first (lazily: the
    objects page can be larger than memory); every subresource cacheable (:data:`ASSET_CACHE`)."""
    if isinstance(spec, SyntheticSpec):
        return _objects_bodies(spec)
    if isinstance(spec, gen_images.ImagesSpec):
        return _cacheable(gen_images.build(spec))
    if isinstance(spec, gen_cssjs.CssJsSpec):
        return _cacheable(gen_cssjs.build(spec))
    if isinstance(spec, gen_shop.ShopSpec):
        return gen_shop.build(spec)  # its pages are not assets: it says which are
    return _cacheable(gen_mix.build(spec))


def _cacheable(items: Iterator[Body]) -> Iterator[Body]:
    """The generator's bodies, each after the entry document with :data:`ASSET_CACHE` added."""
    yield next(items)
    for b in items:
        yield replace(b, headers=(ASSET_CACHE, *b.headers))


def layout(spec: PageSpec) -> tuple[tuple[str, ...], tuple[Resource, ...], str]:
    """Pure part: origins, resources (entry first, no bodies stored) and the entry HTML."""
    if isinstance(spec, SyntheticSpec):
        return _objects_layout(spec)
    items = list(bodies(spec))
    resources = tuple(
        Resource(
            origin=b.origin,
            path=b.path,
            size_bytes=len(b.data),
            content_type=b.content_type,
            headers=b.headers,
            method=b.method,
            status=b.status,
        )
        for b in items
    )
    origins = tuple(dict.fromkeys(b.origin for b in items))
    return origins, resources, items[0].data.decode()


def source_of(spec: PageSpec) -> str:
    """The ``source`` recorded in the manifest: the spec and the generator's version."""
    return f"{spec.name} (h2lab synthetic v{GENERATOR_VERSION})"


def _stored(spec: PageSpec) -> Page | None:
    """The page written earlier for this spec, if it is complete on disk (every body present
    with its size; hashes are not recomputed, so that resolving a 100 MB page stays instant)."""
    folder = find_page(spec.name)
    if folder is None:
        return None
    try:
        page = load_page(folder)
    except SpecError:
        return None
    if page.source != source_of(spec):
        return None
    for r in page.resources:
        try:
            intact = page.body_file(r).stat().st_size == r.size_bytes
        except OSError:
            intact = False
        if not intact:
            _discard(folder)
            return None
    return replace(page, name=spec.name)


def _discard(folder: Path) -> None:
    """Move a damaged page folder aside and delete it, so that writing the page again
    (same id) does not find it in place (PageWriter.commit keeps an existing folder)."""
    aside = folder.with_name(f".damaged-{folder.name}-{os.getpid()}")
    try:
        os.rename(folder, aside)
    except OSError:
        return
    shutil.rmtree(aside, ignore_errors=True)


def materialize(spec: PageSpec) -> Page:
    """The page of ``spec`` in the page store: the stored one if an earlier resolve wrote it
    (checked: same generator version, every body present with its size), else generated now."""
    stored = _stored(spec)
    if stored is not None:
        return stored
    cookies = isinstance(spec, gen_shop.ShopSpec)  # a journey's site keeps its cookies
    with PageWriter(spec.name, source_of(spec), cookies=cookies) as writer:
        try:
            for b in bodies(spec):
                writer.add(
                    f"https://{b.origin}{b.path}",
                    b.data,
                    content_type=b.content_type,
                    headers=b.headers,
                    method=b.method,
                    status=b.status,
                )
        except ValueError as exc:  # a body budget too small for its content
            raise SpecError(spec.name, "page", str(exc)) from exc
        return writer.commit()
