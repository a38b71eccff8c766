"""The report's statistical charts: steps, CDFs, boxes, lines, heatmaps and ratio intervals."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from h2lab.report.svg.frame import (
    HEIGHT,
    MARGIN_LEFT,
    MARGIN_RIGHT,
    WIDTH,
    Scale,
    axes,
    colour_of,
    empty_chart,
    esc,
    fmt_number,
    legend,
    num,
    padded,
    plot_area,
    shorten,
    svg_root,
)


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
    left, right, bottom, top = plot_area()
    x = Scale(*padded(min(xs), max(xs)), left, right)
    y = Scale(*padded(0.0, y_max if y_max is not None else max(ys), zero=True), bottom, top)
    body = axes(x, y, x_label, y_label)
    for i, (name, pts) in enumerate(series.items()):
        if not pts:
            continue
        path = []
        prev_y: float | None = None
        for px, py in sorted(pts):
            if prev_y is not None:
                path.append(f"{num(x(px))},{num(y(prev_y))}")
            path.append(f"{num(x(px))},{num(y(py))}")
            prev_y = py
        body.append(
            f'<polyline fill="none" stroke="{colour_of(name, i)}" stroke-width="2" '
            f'points="{" ".join(path)}"/>'
        )
    body += legend(list(series), right + 14, top + 10)
    return svg_root(WIDTH, HEIGHT, body, title)


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


def box_stats(values: Sequence[float] | np.ndarray) -> BoxStats:
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
    groups: Mapping[str, Mapping[str, Sequence[float] | np.ndarray]], *, y_label: str, title: str
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
    left, right, bottom, top = plot_area(width)
    y = Scale(*padded(lo, hi, zero=True), bottom, top)
    group_w = (right - left) / len(stats)
    x = Scale(0, len(stats), left, right)
    ticks = [(i + 0.5, g) for i, g in enumerate(stats)]
    body = axes(x, y, "", y_label, x_ticks=ticks)
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
                f"<g><title>{esc(tip)}</title>"
                f'<line x1="{num(cx)}" y1="{num(y(b.whisker_low))}" x2="{num(cx)}" '
                f'y2="{num(y(b.whisker_high))}" stroke="{c}"/>'
                f'<rect x="{num(x0)}" y="{num(y(b.q3))}" width="{num(box_w)}" '
                f'height="{num(max(1.0, y(b.q1) - y(b.q3)))}" fill="{c}" fill-opacity="0.35" '
                f'stroke="{c}"/>'
                f'<line x1="{num(x0)}" y1="{num(y(b.median))}" x2="{num(x0 + box_w)}" '
                f'y2="{num(y(b.median))}" stroke="{c}" stroke-width="2"/>'
            )
            extreme = sorted(b.outliers, key=lambda v: -abs(v - b.median))[:MAX_OUTLIER_DOTS]
            for v in extreme:
                body.append(f'<circle cx="{num(cx)}" cy="{num(y(v))}" r="2" fill="{c}"/>')
            body.append("</g>")
    body += legend(series, right + 14, top + 10)
    return svg_root(width, HEIGHT, body, title)


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
    left, right, bottom, top = plot_area()
    use_log = log_x and min(xs) > 0 and max(xs) / min(xs) >= 10
    if use_log:
        x = Scale(min(xs) / 1.2, max(xs) * 1.2, left, right, log=True)
    else:
        x = Scale(*padded(min(xs), max(xs)), left, right)
    y = Scale(*padded(0.0, max(p.high for p in points), zero=True), bottom, top)
    levels = sorted(set(xs))
    ticks = [(v, fmt_number(v)) for v in levels] if len(levels) <= 8 else None
    body = axes(x, y, x_label, y_label, x_ticks=ticks)
    for i, (name, pts) in enumerate(series.items()):
        c = colour_of(name, i)
        ordered = sorted(pts, key=lambda p: p.x)
        if not ordered:
            continue
        line = " ".join(f"{num(x(p.x))},{num(y(p.median))}" for p in ordered)
        body.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" points="{line}"/>')
        for p in ordered:
            body.append(
                f'<line x1="{num(x(p.x))}" y1="{num(y(p.low))}" x2="{num(x(p.x))}" '
                f'y2="{num(y(p.high))}" stroke="{c}"/>'
                f'<circle cx="{num(x(p.x))}" cy="{num(y(p.median))}" r="3" fill="{c}">'
                f"<title>{esc(f'{name} at {p.x:g}: median {p.median:.0f}')}</title></circle>"
            )
    body += legend(list(series), right + 14, top + 10)
    return svg_root(WIDTH, HEIGHT, body, title)


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
            f"<g><title>{esc(f'{x_labels[i]}, {y_labels[j]}: median s {s:.3f} ({n} blocks)')}"
            f'</title><rect x="{num(x0)}" y="{num(y0)}" width="{num(cw - 2)}" '
            f'height="{num(ch - 2)}" '
            f'fill="{ratio_colour(s)}"/>'
            f'<text x="{num(x0 + cw / 2)}" y="{num(y0 + ch / 2 + 4)}" text-anchor="middle">'
            f"{s:.2f}</text></g>"
        )
    for i, t in enumerate(x_labels):
        body.append(
            f'<text x="{num(left + i * cw + cw / 2)}" y="{num(top + ch * len(y_labels) + 14)}" '
            f'text-anchor="middle">{esc(shorten(t, 14))}</text>'
        )
    for j, t in enumerate(y_labels):
        body.append(
            f'<text x="{num(left - 6)}" y="{num(top + j * ch + ch / 2 + 4)}" text-anchor="end">'
            f"{esc(shorten(t, 40))}</text>"
        )
    body.append(
        f'<text x="{num(left + cw * len(x_labels) / 2)}" y="{num(height - 20)}" '
        f'text-anchor="middle">{esc(x_label)}</text>'
        f'<text x="4" y="12">{esc(y_label)}</text>'
    )
    return svg_root(width, height, body, title)


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
    x = Scale(*padded(lo, hi), left, right)
    body = [f'<rect x="{num(left)}" y="{num(top)}" width="{num(right - left)}" '
            f'height="{num(bottom - top)}" fill="#fcfcfc" stroke="#ddd"/>']  # fmt: skip
    for t in x.ticks():
        body.append(f'<text x="{num(x(t))}" y="{num(bottom + 14)}" text-anchor="middle">'
                    f"{esc(fmt_number(t))}</text>")  # fmt: skip
    for v in (1.0, *marks):
        dash = "" if v == 1.0 else ' stroke-dasharray="4 3"'
        body.append(f'<line x1="{num(x(v))}" y1="{num(top)}" x2="{num(x(v))}" y2="{num(bottom)}" '
                    f'stroke="#888"{dash}/>')  # fmt: skip
    for i, r in enumerate(rows):
        y = top + 22.0 * i + 11
        tip = f"{r.label}: median {r.median:.3f}, CI [{r.low:.3f}, {r.high:.3f}]"
        body.append(
            f"<g><title>{esc(tip)}</title>"
            f'<text x="{num(left - 6)}" y="{num(y + 4)}" text-anchor="end">'
            f"{esc(shorten(r.label, 56))}</text>"
            f'<line x1="{num(x(r.low))}" y1="{num(y)}" x2="{num(x(r.high))}" y2="{num(y)}" '
            f'stroke="{r.colour}" stroke-width="4"/>'
            f'<circle cx="{num(x(r.median))}" cy="{num(y)}" r="4" fill="#222"/></g>'
        )
    body.append(f'<text x="{num((left + right) / 2)}" y="{num(bottom + 32)}" '
                f'text-anchor="middle">{esc(x_label)}</text>')  # fmt: skip
    return svg_root(WIDTH, bottom + 42, body, title)
