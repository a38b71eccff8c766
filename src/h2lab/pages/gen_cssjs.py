"""CSS / JavaScript head-of-line blocking (seed 000 §4.3, Fig. 2 and 3).

500 ``<div>`` boxes, unstyled (light grey) until their code arrives, and their code split over
``files`` = 1 (full concatenation) .. 500 (none) files:

* ``kind=css``: one rule per div (``#d0007{background:#...}``) in stylesheets linked from the
  head (render-blocking, as in the paper);
* ``kind=js``: several statements per div (find it, colour it, round it, number it, title it)
  in ``async`` scripts placed after the divs, so each file runs as soon as it arrives.

Div ``i`` goes to file ``i * files // divs`` (contiguous, balanced blocks). The code is the same
for every ``files``: only the degree of concatenation changes. One origin, as in the paper.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from h2lab.pages.gen_common import (
    Body,
    choice,
    convert,
    hex_colour,
    in_range,
    origin_names,
    page_head,
    read_fields,
    tile_colour,
)

KIND = "cssjs"
KEYS = ("kind", "files", "divs", "seed")
KINDS = ("css", "js")
DIVS = 500  # seed 000 §4.3: "500 <div>-elements"
MAX_DIVS = 5000
BOX_PX = 24


@dataclass(frozen=True)
class CssJsSpec:
    kind: str
    files: int
    divs: int
    seed: int

    @property
    def name(self) -> str:
        extra = "" if self.divs == DIVS else f",divs={self.divs}"
        seed = f",seed={self.seed}" if self.seed else ""
        return f"synthetic:{KIND}:kind={self.kind},files={self.files}{extra}{seed}"


def parse(body: str, spec: str, source: str, field: str) -> CssJsSpec:
    f = read_fields(body, spec, KEYS, source, field)
    kind = choice(f, "kind", KINDS, "css", source, field)
    divs = in_range(
        convert(f, "divs", int, DIVS, source, field), 1, MAX_DIVS, source, field, "divs"
    )
    files = in_range(convert(f, "files", int, 1, source, field), 1, divs, source, field, "files")
    seed = convert(f, "seed", int, 0, source, field)
    return CssJsSpec(kind, files, divs, seed)


def colour(spec: CssJsSpec, i: int) -> str:
    """Colour of div ``i``; the seed shifts the palette."""
    return hex_colour(tile_colour(i + 7919 * spec.seed))


def css_rule(spec: CssJsSpec, i: int) -> str:
    return f"#d{i:04d}{{background:{colour(spec, i)}}}\n"


def js_code(spec: CssJsSpec, i: int) -> str:
    return (
        f'(function(){{var e=document.getElementById("d{i:04d}");'
        f'e.style.background="{colour(spec, i)}";e.style.borderRadius="6px";'
        f'e.textContent="{i % 100}";e.title="div {i}";}})();\n'
    )


def file_of(spec: CssJsSpec, i: int) -> int:
    return i * spec.files // spec.divs


def build(spec: CssJsSpec) -> Iterator[Body]:
    origin = origin_names(1)[0]
    code = css_rule if spec.kind == "css" else js_code
    texts = [""] * spec.files
    for i in range(spec.divs):
        texts[file_of(spec, i)] += code(spec, i)
    ext, ctype = ("css", "text/css") if spec.kind == "css" else ("js", "text/javascript")
    files = [
        Body(origin, f"/{ext}/{j:04d}.{ext}", f"{ctype}; charset=utf-8", t.encode())
        for j, t in enumerate(texts)
    ]
    style = (
        "body{margin:8px;font:10px sans-serif}.g{display:flex;flex-wrap:wrap;gap:2px}"
        f".g>div{{width:{BOX_PX}px;height:{BOX_PX}px;background:#ddd;color:#fff;"
        "text-align:center;line-height:24px}"
    )
    if spec.kind == "css":
        links = "".join(f'<link rel="stylesheet" href="{b.ref}">' for b in files)
        scripts = ""
    else:
        links = ""
        scripts = "\n".join(f'<script async src="{b.ref}"></script>' for b in files) + "\n"
    divs = "".join(f'<div id="d{i:04d}"></div>' for i in range(spec.divs))
    html = (
        page_head(spec.name, style, links)
        + f"<body><p>{spec.divs} divs, {spec.kind} in {spec.files} file(s)</p>\n"
        + f"<div class=g>{divs}</div>\n{scripts}</body></html>\n"
    )
    yield Body(origin, "/index.html", "text/html; charset=utf-8", html.encode())
    yield from files
