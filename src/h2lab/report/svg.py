"""Hand-written inline SVG charts for the report (pure: data in, one ``<svg>`` string out).

Every builder returns a complete, well-formed XML element with the SVG namespace, so it can be
inlined in HTML and parsed by an XML parser (the unit tests do). No fonts, images or scripts are
referenced: the figures need nothing outside the report file.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

import numpy as np

from h2lab.analysis.tree import TreeNode

PROTOCOL_COLOURS = {
    "h1c": "#f4a259",
    "h1p": "#bc4b51",
    "h1s": "#e07a1f",
    "h2c": "#5b8ec9",
    "h2s": "#1f5fa8",
    "h3": "#2a9d55",
}
"""h1 variants warm, h2 variants blue, h3 green: the same colour for a protocol in every figure."""
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
"""Colours for series that are not protocols (connections): matplotlib's "tab10"."""
LABEL_COLOURS = {"h2": "#cfe3f7", "h1": "#fbe0c7", "tie": "#eeeeee", "mixed": "#ffffff"}

FONT = "font-family:sans-serif;font-size:11px"
WIDTH = 640
HEIGHT = 300
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 64, 110, 16, 42


def colour_of(series: str, index: int = 0) -> str:
    """The protocol's colour, else the palette's ``index``-th."""
    return PROTOCOL_COLOURS.get(series, PALETTE[index % len(PALETTE)])


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _f(v: float) -> str:
    """A coordinate with one decimal (keeps files small)."""
    return f"{v:.1f}"


def _svg(width: float, height: float, body: Sequence[str], title: str = "") -> str:
    label = f' aria-label="{_e(title)}"' if title else ""
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_f(width)}" height="{_f(height)}" '
        f'viewBox="0 0 {_f(width)} {_f(height)}" role="img"{label} style="{FONT}">'
    )
    inner = [f"<title>{_e(title)}</title>"] if title else []
    return head + "".join([*inner, *body]) + "</svg>"


def empty_chart(message: str, width: float = WIDTH, height: float = 60) -> str:
    """A chart-sized box with one line of text (no data to draw)."""
    return _svg(
        width,
        height,
        [
            f'<rect x="0.5" y="0.5" width="{_f(width - 1)}" height="{_f(height - 1)}" '
            'fill="#fafafa" stroke="#ccc"/>',
            f'<text x="{_f(width / 2)}" y="{_f(height / 2 + 4)}" text-anchor="middle">'
            f"{_e(message)}</text>",
        ],
        message,
    )


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values (1, 2, 2.5 or 5 × 10^k apart) covering [lo, hi], about ``count``."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError("ticks of a non-finite range")
    if hi < lo:
        lo, hi = hi, lo
    if hi == lo:
        return [lo]
    raw = (hi - lo) / max(1, count)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    out = []
    v = first
    while v <= hi + step * 1e-9:
        out.append(round(v, 12))
        v += step
    return out


def fmt_number(v: float) -> str:
    """Tick labels: 1234 -> 1234, 12.5 -> 12.5, 1.5e6 -> 1.5M."""
    a = abs(v)
    if a >= 1e9:
        return f"{v / 1e9:g}G"
    if a >= 1e6:
        return f"{v / 1e6:g}M"
    if a >= 1e4:
        return f"{v / 1e3:g}k"
    return f"{v:g}"


@dataclass(frozen=True)
class Scale:
    """Linear (or log10) map from data [lo, hi] to pixels [px0, px1]."""

    lo: float
    hi: float
    px0: float
    px1: float
    log: bool = False

    def __call__(self, v: float) -> float:
        lo, hi, x = self.lo, self.hi, v
        if self.log:
            lo, hi, x = math.log10(lo), math.log10(hi), math.log10(max(v, self.lo))
        if hi == lo:
            return (self.px0 + self.px1) / 2
        return self.px0 + (x - lo) / (hi - lo) * (self.px1 - self.px0)

    def ticks(self) -> list[float]:
        if self.log:
            k0, k1 = math.floor(math.log10(self.lo)), math.ceil(math.log10(self.hi))
            out = [10.0**k for k in range(k0, k1 + 1) if self.lo <= 10.0**k <= self.hi]
            return out or [self.lo, self.hi]
        return nice_ticks(self.lo, self.hi)


def _padded(lo: float, hi: float, *, zero: bool = False) -> tuple[float, float]:
    if zero:
        lo = min(0.0, lo)
    if hi == lo:
        return (lo - 1, hi + 1) if lo else (0.0, 1.0)
    pad = (hi - lo) * 0.04
    return (lo if zero and lo == 0 else lo - pad), hi + pad


def _axes(
    x: Scale,
    y: Scale,
    x_label: str,
    y_label: str,
    *,
    x_ticks: Sequence[tuple[float, str]] | None = None,
) -> list[str]:
    top, bottom = y.px1, y.px0
    left, right = x.px0, x.px1
    out = [
        f'<line x1="{_f(left)}" y1="{_f(bottom)}" x2="{_f(right)}" y2="{_f(bottom)}" '
        'stroke="#333"/>',
        f'<line x1="{_f(left)}" y1="{_f(bottom)}" x2="{_f(left)}" y2="{_f(top)}" stroke="#333"/>',
    ]
    xt = x_ticks if x_ticks is not None else [(t, fmt_number(t)) for t in x.ticks()]
    for t, text in xt:
        px = x(t)
        out.append(
            f'<line x1="{_f(px)}" y1="{_f(bottom)}" x2="{_f(px)}" y2="{_f(bottom + 4)}" '
            'stroke="#333"/>'
            f'<text x="{_f(px)}" y="{_f(bottom + 16)}" text-anchor="middle">{_e(text)}</text>'
        )
    for t in y.ticks():
        py = y(t)
        out.append(
            f'<line x1="{_f(left)}" y1="{_f(py)}" x2="{_f(right)}" y2="{_f(py)}" '
            'stroke="#eee"/>'
            f'<text x="{_f(left - 6)}" y="{_f(py + 4)}" text-anchor="end">'
            f"{_e(fmt_number(t))}</text>"
        )
    out.append(
        f'<text x="{_f((left + right) / 2)}" y="{_f(bottom + 34)}" text-anchor="middle">'
        f"{_e(x_label)}</text>"
    )
    out.append(
        f'<text transform="translate(14,{_f((top + bottom) / 2)}) rotate(-90)" '
        f'text-anchor="middle">{_e(y_label)}</text>'
    )
    return out


def _legend(names: Sequence[str], x0: float, y0: float) -> list[str]:
    out = []
    for i, name in enumerate(names):
        y = y0 + i * 16
        out.append(
            f'<rect x="{_f(x0)}" y="{_f(y - 9)}" width="12" height="10" '
            f'fill="{colour_of(name, i)}"/>'
            f'<text x="{_f(x0 + 16)}" y="{_f(y)}">{_e(name)}</text>'
        )
    return out


def _plot_area(width: float = WIDTH, height: float = HEIGHT) -> tuple[float, float, float, float]:
    return MARGIN_LEFT, width - MARGIN_RIGHT, height - MARGIN_BOTTOM, MARGIN_TOP


def step_chart(
    series: Mapping[str, Sequence[tuple[float, float]]],
    *,
    x_label: str,
    y_label: str,
    title: str,
    y_max: float | None = None,
) -> str:
    """Step lines through (x, y) points per series (y holds until the next x)."""
    points = [p for s in series.values() for p in s]
    if not points:
        return empty_chart(f"{title}: no data")
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    left, right, bottom, top = _plot_area()
    x = Scale(*_padded(min(xs), max(xs)), left, right)
    y = Scale(*_padded(0.0, y_max if y_max is not None else max(ys), zero=True), bottom, top)
    body = _axes(x, y, x_label, y_label)
    for i, (name, pts) in enumerate(series.items()):
        if not pts:
            continue
        path = []
        prev_y: float | None = None
        for px, py in sorted(pts):
            if prev_y is not None:
                path.append(f"{_f(x(px))},{_f(y(prev_y))}")
            path.append(f"{_f(x(px))},{_f(y(py))}")
            prev_y = py
        body.append(
            f'<polyline fill="none" stroke="{colour_of(name, i)}" stroke-width="2" '
            f'points="{" ".join(path)}"/>'
        )
    body += _legend(list(series), right + 14, top + 10)
    return _svg(WIDTH, HEIGHT, body, title)


def cdf_chart(series: Mapping[str, Sequence[float]], *, x_label: str, title: str) -> str:
    """Empirical CDF of each series: a step from 0 to 1 at every value."""
    steps: dict[str, list[tuple[float, float]]] = {}
    for name, values in series.items():
        v = np.sort(np.asarray(values, dtype=np.float64))
        n = len(v)
        if n:
            pts = [(float(v[0]), 0.0)] + [(float(x), (i + 1) / n) for i, x in enumerate(v)]
            steps[name] = pts
    return step_chart(steps, x_label=x_label, y_label="fraction ≤ x", title=title, y_max=1.0)


@dataclass(frozen=True)
class BoxStats:
    """Tukey's box: quartiles, whiskers at the furthest values within 1.5 IQR of the box."""

    n: int
    q1: float
    median: float
    q3: float
    whisker_low: float
    whisker_high: float
    outliers: tuple[float, ...]


def box_stats(values: Sequence[float]) -> BoxStats:
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        raise ValueError("box of no values")
    q1, med, q3 = (float(q) for q in np.quantile(v, [0.25, 0.5, 0.75]))
    iqr = q3 - q1
    inside = v[(v >= q1 - 1.5 * iqr) & (v <= q3 + 1.5 * iqr)]
    out = v[(v < q1 - 1.5 * iqr) | (v > q3 + 1.5 * iqr)]
    return BoxStats(
        int(v.size),
        q1,
        med,
        q3,
        float(inside.min()),
        float(inside.max()),
        tuple(float(x) for x in np.sort(out)),
    )


MAX_OUTLIER_DOTS = 40
"""Outliers drawn per box (the most extreme ones); more would only add ink, not information."""


def box_chart(
    groups: Mapping[str, Mapping[str, Sequence[float]]], *, y_label: str, title: str
) -> str:
    """Box plots: one group per outer key (network), one box per inner key (protocol)."""
    stats = {
        g: {s: box_stats(vals) for s, vals in inner.items() if len(vals)}
        for g, inner in groups.items()
    }
    stats = {g: inner for g, inner in stats.items() if inner}
    if not stats:
        return empty_chart(f"{title}: no data")
    series = sorted({s for inner in stats.values() for s in inner})
    lo = min(min((b.whisker_low, *b.outliers)) for inner in stats.values() for b in inner.values())
    hi = max(max((b.whisker_high, *b.outliers)) for inner in stats.values() for b in inner.values())
    width = max(WIDTH, MARGIN_LEFT + MARGIN_RIGHT + len(stats) * len(series) * 34)
    left, right, bottom, top = _plot_area(width)
    y = Scale(*_padded(lo, hi, zero=True), bottom, top)
    group_w = (right - left) / len(stats)
    x = Scale(0, len(stats), left, right)
    ticks = [(i + 0.5, g) for i, g in enumerate(stats)]
    body = _axes(x, y, "", y_label, x_ticks=ticks)
    box_w = min(28.0, group_w / (len(series) + 1))
    for gi, (_, inner) in enumerate(stats.items()):
        for si, s in enumerate(series):
            if s not in inner:
                continue
            b = inner[s]
            cx = left + gi * group_w + (si + 1) * group_w / (len(series) + 1)
            c = colour_of(s, si)
            x0 = cx - box_w / 2
            tip = f"{s}: n={b.n}, median {b.median:.0f}, IQR {b.q1:.0f}–{b.q3:.0f}"
            body.append(
                f"<g><title>{_e(tip)}</title>"
                f'<line x1="{_f(cx)}" y1="{_f(y(b.whisker_low))}" x2="{_f(cx)}" '
                f'y2="{_f(y(b.whisker_high))}" stroke="{c}"/>'
                f'<rect x="{_f(x0)}" y="{_f(y(b.q3))}" width="{_f(box_w)}" '
                f'height="{_f(max(1.0, y(b.q1) - y(b.q3)))}" fill="{c}" fill-opacity="0.35" '
                f'stroke="{c}"/>'
                f'<line x1="{_f(x0)}" y1="{_f(y(b.median))}" x2="{_f(x0 + box_w)}" '
                f'y2="{_f(y(b.median))}" stroke="{c}" stroke-width="2"/>'
            )
            extreme = sorted(b.outliers, key=lambda v: -abs(v - b.median))[:MAX_OUTLIER_DOTS]
            for v in extreme:
                body.append(f'<circle cx="{_f(cx)}" cy="{_f(y(v))}" r="2" fill="{c}"/>')
            body.append("</g>")
    body += _legend(series, right + 14, top + 10)
    return _svg(width, HEIGHT, body, title)


@dataclass(frozen=True)
class LinePoint:
    x: float
    median: float
    low: float
    """p25 (drawn as an error bar)"""
    high: float
    """p75"""


def line_chart(
    series: Mapping[str, Sequence[LinePoint]],
    *,
    x_label: str,
    y_label: str,
    title: str,
    log_x: bool = False,
) -> str:
    """Median per level with a p25–p75 bar, one line per series."""
    points = [p for s in series.values() for p in s]
    if not points:
        return empty_chart(f"{title}: no data")
    xs = [p.x for p in points]
    left, right, bottom, top = _plot_area()
    use_log = log_x and min(xs) > 0 and max(xs) / min(xs) >= 10
    if use_log:
        x = Scale(min(xs) / 1.2, max(xs) * 1.2, left, right, log=True)
    else:
        x = Scale(*_padded(min(xs), max(xs)), left, right)
    y = Scale(*_padded(0.0, max(p.high for p in points), zero=True), bottom, top)
    levels = sorted(set(xs))
    ticks = [(v, fmt_number(v)) for v in levels] if len(levels) <= 8 else None
    body = _axes(x, y, x_label, y_label, x_ticks=ticks)
    for i, (name, pts) in enumerate(series.items()):
        c = colour_of(name, i)
        ordered = sorted(pts, key=lambda p: p.x)
        if not ordered:
            continue
        line = " ".join(f"{_f(x(p.x))},{_f(y(p.median))}" for p in ordered)
        body.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" points="{line}"/>')
        for p in ordered:
            body.append(
                f'<line x1="{_f(x(p.x))}" y1="{_f(y(p.low))}" x2="{_f(x(p.x))}" '
                f'y2="{_f(y(p.high))}" stroke="{c}"/>'
                f'<circle cx="{_f(x(p.x))}" cy="{_f(y(p.median))}" r="3" fill="{c}">'
                f"<title>{_e(f'{name} at {p.x:g}: median {p.median:.0f}')}</title></circle>"
            )
    body += _legend(list(series), right + 14, top + 10)
    return _svg(WIDTH, HEIGHT, body, title)


def ratio_colour(s: float) -> str:
    """Diverging: blue below 1 (h2 faster), red above (h1 faster), white at 1; saturates at
    a factor 2 either way."""
    t = max(-1.0, min(1.0, math.log2(s))) if s > 0 else -1.0
    if t < 0:
        a = -t
        r, g, b = (int(255 - a * (255 - c)) for c in (31, 95, 168))
    else:
        r, g, b = (int(255 - t * (255 - c)) for c in (200, 60, 40))
    return f"#{r:02x}{g:02x}{b:02x}"


def heatmap(
    x_labels: Sequence[str],
    y_labels: Sequence[str],
    values: Mapping[tuple[int, int], tuple[float, int]],
    *,
    x_label: str,
    y_label: str,
    title: str,
) -> str:
    """A grid of median ratios: ``values[(i, j)] = (s, n)`` for column i and row j."""
    if not values:
        return empty_chart(f"{title}: no data")
    cw, ch = 84.0, 34.0
    label_w = min(260.0, 12 + 6.2 * max((len(t) for t in y_labels), default=4))
    left, top = label_w + 24, 20.0
    width = left + cw * len(x_labels) + 20
    height = top + ch * len(y_labels) + 56
    body = []
    for (i, j), (s, n) in sorted(values.items()):
        x0, y0 = left + i * cw, top + j * ch
        body.append(
            f"<g><title>{_e(f'{x_labels[i]}, {y_labels[j]}: median s {s:.3f} ({n} blocks)')}"
            f'</title><rect x="{_f(x0)}" y="{_f(y0)}" width="{_f(cw - 2)}" height="{_f(ch - 2)}" '
            f'fill="{ratio_colour(s)}"/>'
            f'<text x="{_f(x0 + cw / 2)}" y="{_f(y0 + ch / 2 + 4)}" text-anchor="middle">'
            f"{s:.2f}</text></g>"
        )
    for i, t in enumerate(x_labels):
        body.append(
            f'<text x="{_f(left + i * cw + cw / 2)}" y="{_f(top + ch * len(y_labels) + 14)}" '
            f'text-anchor="middle">{_e(_short(t, 14))}</text>'
        )
    for j, t in enumerate(y_labels):
        body.append(
            f'<text x="{_f(left - 6)}" y="{_f(top + j * ch + ch / 2 + 4)}" text-anchor="end">'
            f"{_e(_short(t, 40))}</text>"
        )
    body.append(
        f'<text x="{_f(left + cw * len(x_labels) / 2)}" y="{_f(height - 20)}" '
        f'text-anchor="middle">{_e(x_label)}</text>'
        f'<text x="4" y="12">{_e(y_label)}</text>'
    )
    return _svg(width, height, body, title)


@dataclass(frozen=True)
class RatioInterval:
    """One row of a CI chart: a ratio's median and CI, and the colour of its outcome."""

    label: str
    median: float
    low: float
    high: float
    colour: str


def ci_chart(
    rows: Sequence[RatioInterval], *, x_label: str, title: str, marks: Sequence[float] = ()
) -> str:
    """One horizontal CI bar with a dot at the median per row; a solid line at 1 and dashed
    lines at ``marks`` (the verdicts' thresholds)."""
    if not rows:
        return empty_chart(f"{title}: no data")
    label_w = min(360.0, 12 + 6.2 * max(len(r.label) for r in rows))
    left, right, top = label_w + 8, WIDTH - 20.0, 8.0
    bottom = top + 22.0 * len(rows)
    lo = min(min(r.low for r in rows), *marks, 1.0)
    hi = max(max(r.high for r in rows), *marks, 1.0)
    x = Scale(*_padded(lo, hi), left, right)
    body = [f'<rect x="{_f(left)}" y="{_f(top)}" width="{_f(right - left)}" '
            f'height="{_f(bottom - top)}" fill="#fcfcfc" stroke="#ddd"/>']  # fmt: skip
    for t in x.ticks():
        body.append(f'<text x="{_f(x(t))}" y="{_f(bottom + 14)}" text-anchor="middle">'
                    f"{_e(fmt_number(t))}</text>")  # fmt: skip
    for v in (1.0, *marks):
        dash = "" if v == 1.0 else ' stroke-dasharray="4 3"'
        body.append(f'<line x1="{_f(x(v))}" y1="{_f(top)}" x2="{_f(x(v))}" y2="{_f(bottom)}" '
                    f'stroke="#888"{dash}/>')  # fmt: skip
    for i, r in enumerate(rows):
        y = top + 22.0 * i + 11
        tip = f"{r.label}: median {r.median:.3f}, CI [{r.low:.3f}, {r.high:.3f}]"
        body.append(
            f"<g><title>{_e(tip)}</title>"
            f'<text x="{_f(left - 6)}" y="{_f(y + 4)}" text-anchor="end">'
            f"{_e(_short(r.label, 56))}</text>"
            f'<line x1="{_f(x(r.low))}" y1="{_f(y)}" x2="{_f(x(r.high))}" y2="{_f(y)}" '
            f'stroke="{r.colour}" stroke-width="4"/>'
            f'<circle cx="{_f(x(r.median))}" cy="{_f(y)}" r="4" fill="#222"/></g>'
        )
    body.append(f'<text x="{_f((left + right) / 2)}" y="{_f(bottom + 32)}" '
                f'text-anchor="middle">{_e(x_label)}</text>')  # fmt: skip
    return _svg(WIDTH, bottom + 42, body, title)


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


# ------------------------------------------------------------------------------ the tree

NODE_W, NODE_H, LEVEL_H, GAP = 156.0, 46.0, 86.0, 14.0


def tree_chart(root: TreeNode, *, title: str = "decision tree") -> str:
    """Boxes (samples, class counts, label) joined by edges labelled with the split's branch
    conditions; leaves are spread left to right, each parent centred over its children."""
    xs: dict[int, float] = {}
    next_leaf = [0]

    def place(node: TreeNode) -> float:
        if node.left is None or node.right is None:
            xs[node.node_id] = next_leaf[0] * (NODE_W + GAP) + NODE_W / 2 + 10
            next_leaf[0] += 1
        else:
            xs[node.node_id] = (place(node.left) + place(node.right)) / 2
        return xs[node.node_id]

    place(root)
    nodes = list(root.walk())
    depth = max(n.depth for n in nodes)
    width = next_leaf[0] * (NODE_W + GAP) + 20
    height = (depth + 1) * LEVEL_H + 10
    body: list[str] = []
    for n in nodes:
        if n.split is None or n.left is None or n.right is None:
            continue
        x0, y0 = xs[n.node_id], n.depth * LEVEL_H + 10 + NODE_H
        for child, text in ((n.left, n.split.left_text), (n.right, n.split.right_text)):
            x1, y1 = xs[child.node_id], child.depth * LEVEL_H + 10
            body.append(
                f'<line x1="{_f(x0)}" y1="{_f(y0)}" x2="{_f(x1)}" y2="{_f(y1)}" stroke="#666"/>'
                f'<text x="{_f(x1)}" y="{_f(y1 - 5)}" text-anchor="middle" '
                f'style="font-size:10px" fill="#333" stroke="#fff" stroke-width="3" '
                f'paint-order="stroke">{_e(_short(text, 28))}</text>'
            )
    for n in nodes:
        cx, y0 = xs[n.node_id], n.depth * LEVEL_H + 10
        counts = ", ".join(f"{c} {k}" for c, k in n.class_counts.items() if k)
        body.append(
            f'<g><rect x="{_f(cx - NODE_W / 2)}" y="{_f(y0)}" width="{_f(NODE_W)}" '
            f'height="{_f(NODE_H)}" rx="5" fill="{LABEL_COLOURS[n.label]}" stroke="#555"/>'
            f'<text x="{_f(cx)}" y="{_f(y0 + 17)}" text-anchor="middle" font-weight="bold">'
            f"{_e(n.label)}</text>"
            f'<text x="{_f(cx)}" y="{_f(y0 + 34)}" text-anchor="middle">'
            f"{_e(_short(f'{n.n_samples} cells: {counts}', 30))}</text></g>"
        )
    return _svg(width, height, body, title)


# ------------------------------------------------------------------ waterfalls and timelines


@dataclass(frozen=True)
class WaterfallRow:
    label: str
    start_ms: float
    ttfb_ms: float | None
    end_ms: float
    connection: str
    bytes: int


ROW_H = 14.0
MAX_ROWS = 150
"""Resources drawn per waterfall; the rest are counted in a last line."""


def waterfall(
    rows: Sequence[WaterfallRow], *, t_max_ms: float, title: str, width: float = 470
) -> str:
    """One bar per resource from request start to last byte, light until the first byte,
    coloured by connection; rows in start order."""
    if not rows:
        return empty_chart(f"{title}: no resources", width)
    ordered = sorted(rows, key=lambda r: (r.start_ms, r.end_ms))
    shown = ordered[:MAX_ROWS]
    conns: dict[str, str] = {}
    for r in ordered:
        conns.setdefault(r.connection, PALETTE[len(conns) % len(PALETTE)])
    label_w = 130.0
    left, right = label_w, width - 10
    top = 8.0
    x = Scale(0, max(t_max_ms, 1.0), left, right)
    extra = 1 if len(ordered) > len(shown) else 0
    bottom = top + ROW_H * (len(shown) + extra)
    height = bottom + 44
    body = [
        f'<rect x="{_f(left)}" y="{_f(top)}" width="{_f(right - left)}" '
        f'height="{_f(bottom - top)}" fill="#fcfcfc" stroke="#ddd"/>'
    ]
    for t in x.ticks():
        px = x(t)
        body.append(
            f'<line x1="{_f(px)}" y1="{_f(top)}" x2="{_f(px)}" y2="{_f(bottom)}" stroke="#eee"/>'
            f'<text x="{_f(px)}" y="{_f(bottom + 14)}" text-anchor="middle">'
            f"{_e(fmt_number(t))}</text>"
        )
    for i, r in enumerate(shown):
        y = top + i * ROW_H
        c = conns[r.connection]
        x0, x1 = x(r.start_ms), x(max(r.end_ms, r.start_ms))
        first = x(r.ttfb_ms) if r.ttfb_ms is not None else x0
        tip = (
            f"{r.label}: start {r.start_ms:.1f}, "
            + (f"first byte {r.ttfb_ms:.1f}, " if r.ttfb_ms is not None else "")
            + f"end {r.end_ms:.1f} ms, {r.bytes} B, connection {r.connection}"
        )
        body.append(
            f"<g><title>{_e(tip)}</title>"
            f'<text x="{_f(left - 4)}" y="{_f(y + ROW_H - 3)}" text-anchor="end" '
            f'style="font-size:9px">{_e(_short(r.label, 24))}</text>'
            f'<rect x="{_f(x0)}" y="{_f(y + 2)}" width="{_f(max(0.5, first - x0))}" '
            f'height="{_f(ROW_H - 4)}" fill="{c}" fill-opacity="0.3"/>'
            f'<rect x="{_f(first)}" y="{_f(y + 2)}" width="{_f(max(1.0, x1 - first))}" '
            f'height="{_f(ROW_H - 4)}" fill="{c}"/></g>'
        )
    if extra:
        body.append(
            f'<text x="{_f(left + 4)}" y="{_f(bottom - 3)}" style="font-size:9px">'
            f"… {len(ordered) - len(shown)} more resources not drawn</text>"
        )
    body.append(
        f'<text x="{_f((left + right) / 2)}" y="{_f(bottom + 30)}" text-anchor="middle">'
        f"ms from the first request · {len(conns)} connection"
        f"{'' if len(conns) == 1 else 's'} (one colour each)</text>"
    )
    return _svg(width, height, body, title)


@dataclass(frozen=True)
class TimelineRow:
    """One stream: when its bytes flowed, as intervals (ms) with the bytes of each."""

    label: str
    connection: str
    spans: tuple[tuple[float, float, int], ...]
    """(from_ms, to_ms, bytes); a frame is a zero-length span"""


def timeline(
    rows: Sequence[TimelineRow], *, t_max_ms: float, title: str, width: float = 470
) -> str:
    """One lane per stream; a mark wherever bytes of the stream arrived."""
    if not rows:
        return empty_chart(f"{title}: no streams", width)
    shown = list(rows[:MAX_ROWS])
    conns: dict[str, str] = {}
    for r in rows:
        conns.setdefault(r.connection, PALETTE[len(conns) % len(PALETTE)])
    left, right, top = 110.0, width - 10, 8.0
    x = Scale(0, max(t_max_ms, 1.0), left, right)
    extra = 1 if len(rows) > len(shown) else 0
    bottom = top + ROW_H * (len(shown) + extra)
    body = [
        f'<rect x="{_f(left)}" y="{_f(top)}" width="{_f(right - left)}" '
        f'height="{_f(bottom - top)}" fill="#fcfcfc" stroke="#ddd"/>'
    ]
    for t in x.ticks():
        px = x(t)
        body.append(
            f'<line x1="{_f(px)}" y1="{_f(top)}" x2="{_f(px)}" y2="{_f(bottom)}" stroke="#eee"/>'
            f'<text x="{_f(px)}" y="{_f(bottom + 14)}" text-anchor="middle">'
            f"{_e(fmt_number(t))}</text>"
        )
    for i, r in enumerate(shown):
        y = top + i * ROW_H
        c = conns[r.connection]
        total = sum(b for _, _, b in r.spans)
        marks = "".join(
            f'<rect x="{_f(x(a))}" y="{_f(y + 2)}" width="{_f(max(1.5, x(b) - x(a)))}" '
            f'height="{_f(ROW_H - 4)}" fill="{c}"/>'
            for a, b, _ in r.spans
        )
        body.append(
            f"<g><title>{_e(f'{r.label}: {len(r.spans)} span(s), {total} B')}</title>"
            f'<text x="{_f(left - 4)}" y="{_f(y + ROW_H - 3)}" text-anchor="end" '
            f'style="font-size:9px">{_e(_short(r.label, 20))}</text>{marks}</g>'
        )
    if extra:
        body.append(
            f'<text x="{_f(left + 4)}" y="{_f(bottom - 3)}" style="font-size:9px">'
            f"… {len(rows) - len(shown)} more streams not drawn</text>"
        )
    body.append(
        f'<text x="{_f((left + right) / 2)}" y="{_f(bottom + 30)}" text-anchor="middle">ms</text>'
    )
    return _svg(width, bottom + 40, body, title)
