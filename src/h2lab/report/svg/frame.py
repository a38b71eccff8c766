"""What every chart of :mod:`h2lab.report.svg` is drawn with: colours, the ``<svg>`` element,
scales, ticks, axes and legends."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

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

FONT = 'font-family="sans-serif" font-size="11px"'
"""The figures' font, as SVG presentation attributes (a style attribute would need the
report's Content-Security-Policy to allow inline style attributes)."""
WIDTH = 640
HEIGHT = 300
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 64, 110, 16, 42


def colour_of(series: str, index: int = 0) -> str:
    """The protocol's colour, else the palette's ``index``-th."""
    return PROTOCOL_COLOURS.get(series, PALETTE[index % len(PALETTE)])


def esc(text: object) -> str:
    return escape(str(text), quote=True)


def num(v: float) -> str:
    """A coordinate with one decimal (keeps files small)."""
    return f"{v:.1f}"


def svg_root(width: float, height: float, body: Sequence[str], title: str = "") -> str:
    label = f' aria-label="{esc(title)}"' if title else ""
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{num(width)}" height="{num(height)}" '
        f'viewBox="0 0 {num(width)} {num(height)}" role="img"{label} {FONT}>'
    )
    inner = [f"<title>{esc(title)}</title>"] if title else []
    return head + "".join([*inner, *body]) + "</svg>"


def empty_chart(message: str, width: float = WIDTH, height: float = 60) -> str:
    """A chart-sized box with one line of text (no data to draw)."""
    return svg_root(
        width,
        height,
        [
            f'<rect x="0.5" y="0.5" width="{num(width - 1)}" height="{num(height - 1)}" '
            'fill="#fafafa" stroke="#ccc"/>',
            f'<text x="{num(width / 2)}" y="{num(height / 2 + 4)}" text-anchor="middle">'
            f"{esc(message)}</text>",
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


def padded(lo: float, hi: float, *, zero: bool = False) -> tuple[float, float]:
    if zero:
        lo = min(0.0, lo)
    if hi == lo:
        return (lo - 1, hi + 1) if lo else (0.0, 1.0)
    pad = (hi - lo) * 0.04
    return (lo if zero and lo == 0 else lo - pad), hi + pad


def axes(
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
        f'<line x1="{num(left)}" y1="{num(bottom)}" x2="{num(right)}" y2="{num(bottom)}" '
        'stroke="#333"/>',
        f'<line x1="{num(left)}" y1="{num(bottom)}" x2="{num(left)}" y2="{num(top)}" '
        'stroke="#333"/>',
    ]
    xt = x_ticks if x_ticks is not None else [(t, fmt_number(t)) for t in x.ticks()]
    for t, text in xt:
        px = x(t)
        out.append(
            f'<line x1="{num(px)}" y1="{num(bottom)}" x2="{num(px)}" y2="{num(bottom + 4)}" '
            'stroke="#333"/>'
            f'<text x="{num(px)}" y="{num(bottom + 16)}" text-anchor="middle">{esc(text)}</text>'
        )
    for t in y.ticks():
        py = y(t)
        out.append(
            f'<line x1="{num(left)}" y1="{num(py)}" x2="{num(right)}" y2="{num(py)}" '
            'stroke="#eee"/>'
            f'<text x="{num(left - 6)}" y="{num(py + 4)}" text-anchor="end">'
            f"{esc(fmt_number(t))}</text>"
        )
    out.append(
        f'<text x="{num((left + right) / 2)}" y="{num(bottom + 34)}" text-anchor="middle">'
        f"{esc(x_label)}</text>"
    )
    out.append(
        f'<text transform="translate(14,{num((top + bottom) / 2)}) rotate(-90)" '
        f'text-anchor="middle">{esc(y_label)}</text>'
    )
    return out


def legend(names: Sequence[str], x0: float, y0: float) -> list[str]:
    out = []
    for i, name in enumerate(names):
        y = y0 + i * 16
        out.append(
            f'<rect x="{num(x0)}" y="{num(y - 9)}" width="12" height="10" '
            f'fill="{colour_of(name, i)}"/>'
            f'<text x="{num(x0 + 16)}" y="{num(y)}">{esc(name)}</text>'
        )
    return out


def plot_area(width: float = WIDTH, height: float = HEIGHT) -> tuple[float, float, float, float]:
    return MARGIN_LEFT, width - MARGIN_RIGHT, height - MARGIN_BOTTOM, MARGIN_TOP


def shorten(text: str, n: int) -> str:
    """``text``, cut to ``n`` characters with an ellipsis when longer (a label in a chart)."""
    return text if len(text) <= n else text[: n - 1] + "…"
