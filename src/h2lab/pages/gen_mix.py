"""Pages with a realistic mix of resource types:

* ``awp``: the Average Web Page of seed 002 (HTTP Archive, May 2015): 100 requests, 2 MB,
  16 domains; bytes and request counts per type from its Table 1, requests per domain and type
  from its Table 2;
* ``httparchive2024``: the median desktop page of the HTTP Archive, 2024: 71 requests, ~2.6 MB;
* ``mix``: any composition, given as count/bytes per type, e.g. seed 000 Fig. 6's page like the
  EFF front page: ``synthetic:mix:css=3/90KB,js=7/250KB,img=18/700KB,font=1/40KB`` (the first
  CSS file is the critical one the push and hint rules name).

Either can be built with ``inline=``: every CSS, JS and image body of at most that size is put
into the HTML (``<style>``, ``<script>``, ``data:`` URI) instead of being requested, the h1
"ugly hack" that seed 004 lists with spriting, concatenating and sharding.

How each type is referenced, so that a browser fetches exactly the page's resources:
html: ``<iframe>`` (a small coloured document); css: ``<link rel=stylesheet>``, one coloured box
each; js: ``async`` script after the boxes it colours; font: ``@font-face`` used by a line of text,
plus a preload; img: ``<img>`` tile (a real PNG); flash and other: ``<link rel=preload as=fetch>``.
Cross-origin fonts and fetches carry ``access-control-allow-origin: *``.
"""

from __future__ import annotations

import base64
import random
from collections.abc import Iterator
from dataclasses import dataclass, replace

from h2lab.errors import SpecError
from h2lab.pages.gen_common import (
    CORS,
    JSON_MIN_BYTES,
    MAX_ORIGINS,
    Body,
    convert,
    css_body,
    hex_colour,
    html_body,
    in_range,
    js_body,
    json_body,
    origin_names,
    pad_png,
    page_head,
    parse_size,
    read_fields,
    size_text,
    split_bytes,
    tile_colour,
    tile_png,
)

AWP_KIND = "awp"
HA_KIND = "httparchive2024"
MIX_KIND = "mix"
TYPES = ("html", "css", "js", "font", "img", "flash", "other")
INLINE_TYPES = ("css", "js", "img")
INLINE_DEFAULT_BYTES = 4096  # Vite's build.assetsInlineLimit default (4 KiB)
IMG_PX = 64

# Seed 002 Table 1 (AWP characteristics): bytes per type ("file size (kb)", decimal KB) and
# requests per type. Flash has no modern equivalent; it stays an opaque fetched body.
AWP_BYTES = {"html": 56, "css": 63, "js": 329, "img": 1310, "flash": 90, "other": 152}
# Seed 002 Table 2 (AWP requests scheduling): domain -> requests per type.
AWP_DOMAINS: tuple[dict[str, int], ...] = (
    {"html": 1, "css": 1, "js": 1},  # domain1.com (the entry document is its html)
    {"html": 1, "css": 1, "js": 1},
    {"js": 4, "other": 1},
    {"js": 4},
    {"js": 4, "img": 3},
    {"html": 1, "css": 1},
    {"html": 1, "css": 1},
    {"html": 1, "css": 1, "js": 1, "other": 1},
    {"html": 1, "css": 1, "js": 1},
    {"html": 1, "other": 4},
    {"js": 4, "img": 3, "other": 1},
    {"html": 1, "css": 1},
    {"html": 1, "flash": 1},
    {"img": 10},
    {"img": 10},
    {"img": 30},
)

# HTTP Archive, 2024, median desktop page (Web Almanac 2024, Page Weight): 71 requests, of which
# html 2, css 8, js 24, font 4, img 18, other 15; KB (decimal) per type, the total ~2.6 MB.
HA_COUNTS = {"html": 2, "css": 8, "js": 24, "font": 4, "img": 18, "other": 15}
HA_BYTES = {"html": 18, "css": 78, "js": 613, "font": 131, "img": 1054, "other": 706}


@dataclass(frozen=True)
class MixSpec:
    inline_bytes: int
    """inline CSS/JS/image bodies of at most this size; 0: none"""
    seed: int

    def _suffix(self, parts: list[str]) -> str:
        if self.inline_bytes:
            parts.append(f"inline={size_text(self.inline_bytes)}")
        if self.seed:
            parts.append(f"seed={self.seed}")
        return (":" + ",".join(parts)) if parts else ""


@dataclass(frozen=True)
class AwpSpec(MixSpec):
    @property
    def name(self) -> str:
        return f"synthetic:{AWP_KIND}" + self._suffix([])


@dataclass(frozen=True)
class HaSpec(MixSpec):
    origins: int = 1

    @property
    def name(self) -> str:
        return f"synthetic:{HA_KIND}" + self._suffix(
            [f"origins={self.origins}"] if self.origins != 1 else []
        )


@dataclass(frozen=True)
class CustomSpec(MixSpec):
    """``synthetic:mix:``: ``counts[type]`` resources of ``type`` sharing ``type_bytes[type]``
    bytes. ``html`` counts the entry document (default 1, its own size); ``html=3/30KB`` adds
    two iframes and makes the three documents 30 KB together."""

    counts: tuple[tuple[str, int], ...] = ()
    type_bytes: tuple[tuple[str, int], ...] = ()
    origins: int = 1

    @property
    def name(self) -> str:
        parts = [
            f"{kind}={n}/{size_text(b)}"
            for (kind, n), (_, b) in zip(self.counts, self.type_bytes, strict=True)
        ]
        if self.origins != 1:
            parts.append(f"origins={self.origins}")
        return f"synthetic:{MIX_KIND}" + self._suffix(parts)


MAX_MIX_COUNT = 1000
MAX_MIX_TYPE_BYTES = 100 * 1000**2


def _count_bytes(text: str) -> tuple[int, int]:
    count, sep, size = text.partition("/")
    if not sep:
        raise ValueError(f"expected COUNT/BYTES like 7/250KB, got {text!r}")
    return int(count), parse_size(size)


def parse_mix(body: str, spec: str, source: str, where: str) -> CustomSpec:
    f = read_fields(body, spec, (*TYPES, "origins", "inline", "seed"), source, where)
    inline, seed = _common(f, source, where)
    origins = convert(f, "origins", int, 1, source, where)
    in_range(origins, 1, MAX_ORIGINS, source, where, "origins")
    counts, type_bytes = [], []
    for kind in TYPES:
        if kind not in f:
            continue
        n, size = convert(f, kind, _count_bytes, (0, 0), source, where)
        in_range(n, 1 if kind == "html" else 0, MAX_MIX_COUNT, source, where, kind)
        in_range(size, 0, MAX_MIX_TYPE_BYTES, source, where, kind)
        counts.append((kind, n))
        type_bytes.append((kind, size))
    if not any(n for kind, n in counts if kind != "html"):
        raise SpecError(source, where, f"{spec!r}: name at least one resource, e.g. css=1/10KB")
    return CustomSpec(
        inline_bytes=inline,
        seed=seed,
        counts=tuple(counts),
        type_bytes=tuple(type_bytes),
        origins=origins,
    )


def _inline(text: str) -> int:
    if text in {"on", "yes", "true"}:
        return INLINE_DEFAULT_BYTES
    if text in {"off", "no", "false"}:
        return 0
    return parse_size(text)


def _common(f: dict[str, str], source: str, where: str) -> tuple[int, int]:
    inline = convert(f, "inline", _inline, 0, source, where)
    in_range(inline, 0, 10 * 1000**2, source, where, "inline")
    return inline, convert(f, "seed", int, 0, source, where)


def parse_awp(body: str, spec: str, source: str, where: str) -> AwpSpec:
    f = read_fields(body, spec, ("inline", "seed"), source, where)
    inline, seed = _common(f, source, where)
    return AwpSpec(inline_bytes=inline, seed=seed)


def parse_ha(body: str, spec: str, source: str, where: str) -> HaSpec:
    f = read_fields(body, spec, ("origins", "inline", "seed"), source, where)
    inline, seed = _common(f, source, where)
    origins = convert(f, "origins", int, 1, source, where)
    in_range(origins, 1, MAX_ORIGINS, source, where, "origins")
    return HaSpec(inline_bytes=inline, seed=seed, origins=origins)


@dataclass
class _Part:
    """One resource of the page before its bytes are made."""

    kind: str
    index: int
    """number within its type"""
    origin: str
    size_bytes: int = 0
    body: Body | None = None


def _plan(spec: AwpSpec | HaSpec | CustomSpec) -> tuple[list[_Part], dict[str, int]]:
    """Parts (the entry html first) and bytes per type."""
    if isinstance(spec, CustomSpec):
        counts = {"html": 1, **dict(spec.counts)}
        names = origin_names(spec.origins)
        kinds = [(kind, i) for kind in TYPES for i in range(counts.get(kind, 0))]
        parts = [
            _Part(kind, i, names[0] if n == 0 else names[n % len(names)])
            for n, (kind, i) in enumerate(kinds)
        ]
        return parts, {"html": 0, **dict(spec.type_bytes)}
    if isinstance(spec, AwpSpec):
        names = origin_names(len(AWP_DOMAINS))
        per_type: dict[str, list[str]] = {t: [] for t in TYPES}
        for host, row in zip(names, AWP_DOMAINS, strict=True):
            for kind, n in row.items():
                per_type[kind].extend([host] * n)
        parts = [_Part(kind, i, host) for kind in TYPES for i, host in enumerate(per_type[kind])]
        return parts, {k: v * 1000 for k, v in AWP_BYTES.items()}
    names = origin_names(spec.origins)
    kinds = [(kind, i) for kind in TYPES for i in range(HA_COUNTS.get(kind, 0))]
    # entry on o1, the rest dealt round-robin over the origins
    parts = [
        _Part(kind, i, names[0] if n == 0 else names[n % len(names)])
        for n, (kind, i) in enumerate(kinds)
    ]
    return parts, {k: v * 1000 for k, v in HA_BYTES.items()}


def _colour(p: _Part, seed: int) -> str:
    return hex_colour(tile_colour(TYPES.index(p.kind) * 101 + p.index + 7919 * seed))


def _text(p: _Part, seed: int) -> str:
    """The meaningful text of a css/js/html part (before padding)."""
    c = _colour(p, seed)
    if p.kind == "css":
        return f".c{p.index}{{background:{c};border-radius:4px}}\n"
    if p.kind == "js":
        return (
            f'(function(){{var e=document.getElementById("j{p.index}");'
            f'if(e){{e.style.background="{c}";e.textContent="{p.index}";}}}})();\n'
        )
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>frame {p.index}</title></head>"
        f'<body style="margin:0;background:{c};font:12px sans-serif">'
        f"<p>frame {p.index}</p></body></html>\n"
    )


def _floor(p: _Part, seed: int) -> int:
    """The smallest body of this part."""
    if p.kind in {"css", "js"}:
        return len(_text(p, seed)) + 4  # an empty /**/ comment
    if p.kind == "html":
        return len(_text(p, seed)) + 8  # <!---->\n
    if p.kind == "img":
        return len(tile_png(TYPES.index("img") * 101 + p.index, IMG_PX)) + 12
    return JSON_MIN_BYTES if p.kind == "other" else 64


SPREAD = ("css", "js", "img", "other")
"""Types whose sizes vary log-normally around the mean (real pages have a few large and many
small of these); html, fonts and flash get equal shares."""


def _make_body(p: _Part, seed: int, rng: random.Random) -> Body:
    path = {
        "html": f"/frame/{p.index:02d}.html",
        "css": f"/css/{p.index:02d}.css",
        "js": f"/js/{p.index:02d}.js",
        "font": f"/font/{p.index:02d}.woff2",
        "img": f"/img/{p.index:02d}.png",
        "flash": f"/swf/{p.index:02d}.swf",
        "other": f"/data/{p.index:02d}.json",
    }[p.kind]
    n = p.size_bytes
    if p.kind == "html":
        return Body(p.origin, path, "text/html; charset=utf-8", html_body(_text(p, seed), n, rng))
    if p.kind == "css":
        return Body(p.origin, path, "text/css; charset=utf-8", css_body(_text(p, seed), n, rng))
    if p.kind == "js":
        data = js_body(_text(p, seed), n, rng)
        return Body(p.origin, path, "text/javascript; charset=utf-8", data)
    if p.kind == "img":
        png = tile_png(TYPES.index("img") * 101 + p.index, IMG_PX)
        return Body(p.origin, path, "image/png", pad_png(png, n, rng))
    if p.kind == "font":  # any bytes: browsers fetch, fail to decode, and fall back
        return Body(p.origin, path, "font/woff2", b"wOF2" + rng.randbytes(n - 4), CORS)
    if p.kind == "flash":
        data = b"FWS" + rng.randbytes(n - 3)
        return Body(p.origin, path, "application/x-shockwave-flash", data, CORS)
    return Body(p.origin, path, "application/json", json_body(n, rng), CORS)


def _entry_html(title: str, parts: list[_Part], inline: set[int]) -> str:
    """The entry document referencing (or inlining) every other part."""
    head_links: list[str] = []
    head_style: list[str] = []
    boxes: list[str] = []
    tiles: list[str] = []
    frames: list[str] = []
    fonts: list[str] = []
    scripts: list[str] = []
    for n, p in enumerate(parts):
        b = p.body
        assert b is not None
        inl = n in inline
        if p.kind == "css":
            boxes.append(f'<div class="b c{p.index}"></div>')
            if inl:
                head_style.append(f"<style>{b.data.decode()}</style>")
            else:
                head_links.append(f'<link rel="stylesheet" href="{b.ref}">')
        elif p.kind == "js":
            boxes.append(f'<div class=b id="j{p.index}"></div>')
            scripts.append(
                f"<script>{b.data.decode()}</script>"
                if inl
                else f'<script async src="{b.ref}"></script>'
            )
        elif p.kind == "img":
            src = "data:image/png;base64," + base64.b64encode(b.data).decode() if inl else b.ref
            tiles.append(f'<img src="{src}" alt="">')
        elif p.kind == "html":
            frames.append(f'<iframe src="{b.ref}" title="frame {p.index}"></iframe>')
        elif p.kind == "font":
            head_links.append(
                f'<link rel="preload" as="font" type="font/woff2" crossorigin href="{b.ref}">'
            )
            head_style.append(
                f"<style>@font-face{{font-family:f{p.index};"
                f'src:url({b.ref}) format("woff2")}}</style>'
            )
            fonts.append(f'<p style="font-family:f{p.index},sans-serif">font {p.index}</p>')
        else:
            head_links.append(f'<link rel="preload" as="fetch" crossorigin href="{b.ref}">')
    style = (
        "body{margin:8px;font:14px sans-serif}.r{display:flex;flex-wrap:wrap;gap:2px}"
        ".b{width:32px;height:32px;background:#ddd;color:#fff;text-align:center}"
        f"img{{display:block;width:{IMG_PX}px;height:{IMG_PX}px}}"
        "iframe{width:120px;height:60px;border:0}p{margin:2px}"
    )
    nl = "\n"
    return (
        page_head(title, style, nl + nl.join(head_links + head_style) + nl)
        + f"<body><h1>{title}</h1>\n"
        + f"<div class=r>{''.join(boxes)}</div>\n"
        + f"<div class=r>{nl.join(tiles)}</div>\n"
        + f"<div class=r>{nl.join(frames)}</div>\n"
        + f"{''.join(fonts)}\n{nl.join(scripts)}\n</body></html>\n"
    )


def build(spec: AwpSpec | HaSpec | CustomSpec) -> Iterator[Body]:
    rng = random.Random(f"h2lab-{type(spec).__name__}-{spec.seed}")
    parts, type_bytes = _plan(spec)
    entry, rest = parts[0], parts[1:]
    assert entry.kind == "html"
    by_kind: dict[str, list[_Part]] = {}
    for p in rest:
        by_kind.setdefault(p.kind, []).append(p)
    # Sizes per type (html later: the entry's own size is known only once it is written).
    for kind, group in by_kind.items():
        if kind == "html":
            continue
        floors = [_floor(p, spec.seed) for p in group]
        for p, size in zip(
            group,
            split_bytes(type_bytes[kind], floors, rng if kind in SPREAD else None),
            strict=True,
        ):
            p.size_bytes = size
            p.body = _make_body(p, spec.seed, rng)
    frames = by_kind.get("html", [])
    for p in frames:  # placeholders: the entry refers to their URLs only
        p.body = Body(p.origin, f"/frame/{p.index:02d}.html", "text/html", b"")
    inline = {
        n
        for n, p in enumerate(rest)
        if p.kind in INLINE_TYPES and p.size_bytes <= spec.inline_bytes
    }
    # The html budget is shared as if nothing were inlined: inlining moves bytes into the entry.
    share = type_bytes["html"] // (len(frames) + 1)
    plain = replace(spec, inline_bytes=0).name  # the same frames with and without inlining
    entry_bytes = max(len(_entry_html(plain, rest, set()).encode()), share)
    html = _entry_html(spec.name, rest, inline)
    if frames:
        budget = type_bytes["html"] - entry_bytes
        floors = [_floor(p, spec.seed) for p in frames]
        if budget < sum(floors):
            raise SpecError(spec.name, "page", f"the entry document alone has {entry_bytes} B")
        for p, size in zip(frames, split_bytes(budget, floors, None), strict=True):
            p.size_bytes = size
            p.body = _make_body(p, spec.seed, rng)
    yield Body(
        entry.origin, "/index.html", "text/html; charset=utf-8", html_body(html, entry_bytes, rng)
    )
    for n, p in enumerate(rest):
        if n not in inline:
            assert p.body is not None
            yield p.body
