"""Waterfalls of a page load's requests and timelines of its streams."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from h2lab.report.svg.frame import (
    PALETTE,
    Scale,
    empty_chart,
    esc,
    fmt_number,
    num,
    shorten,
    svg_root,
)


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


def _time_grid(x: Scale, left: float, right: float, top: float, bottom: float) -> list[str]:
    """The plot's frame and a vertical line per time tick, its label (ms) under the plot."""
    body = [
        f'<rect x="{num(left)}" y="{num(top)}" width="{num(right - left)}" '
        f'height="{num(bottom - top)}" fill="#fcfcfc" stroke="#ddd"/>'
    ]
    for t in x.ticks():
        px = x(t)
        body.append(
            f'<line x1="{num(px)}" y1="{num(top)}" x2="{num(px)}" y2="{num(bottom)}" '
            'stroke="#eee"/>'
            f'<text x="{num(px)}" y="{num(bottom + 14)}" text-anchor="middle">'
            f"{esc(fmt_number(t))}</text>"
        )
    return body


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
    body = _time_grid(x, left, right, top, bottom)
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
            f"<g><title>{esc(tip)}</title>"
            f'<text x="{num(left - 4)}" y="{num(y + ROW_H - 3)}" text-anchor="end" '
            f'font-size="9px">{esc(shorten(r.label, 24))}</text>'
            f'<rect x="{num(x0)}" y="{num(y + 2)}" width="{num(max(0.5, first - x0))}" '
            f'height="{num(ROW_H - 4)}" fill="{c}" fill-opacity="0.3"/>'
            f'<rect x="{num(first)}" y="{num(y + 2)}" width="{num(max(1.0, x1 - first))}" '
            f'height="{num(ROW_H - 4)}" fill="{c}"/></g>'
        )
    if extra:
        body.append(
            f'<text x="{num(left + 4)}" y="{num(bottom - 3)}" font-size="9px">'
            f"… {len(ordered) - len(shown)} more resources not drawn</text>"
        )
    body.append(
        f'<text x="{num((left + right) / 2)}" y="{num(bottom + 30)}" text-anchor="middle">'
        f"ms from the first request · {len(conns)} connection"
        f"{'' if len(conns) == 1 else 's'} (one colour each)</text>"
    )
    return svg_root(width, height, body, title)


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
    body = _time_grid(x, left, right, top, bottom)
    for i, r in enumerate(shown):
        y = top + i * ROW_H
        c = conns[r.connection]
        total = sum(b for _, _, b in r.spans)
        marks = "".join(
            f'<rect x="{num(x(a))}" y="{num(y + 2)}" width="{num(max(1.5, x(b) - x(a)))}" '
            f'height="{num(ROW_H - 4)}" fill="{c}"/>'
            for a, b, _ in r.spans
        )
        body.append(
            f"<g><title>{esc(f'{r.label}: {len(r.spans)} span(s), {total} B')}</title>"
            f'<text x="{num(left - 4)}" y="{num(y + ROW_H - 3)}" text-anchor="end" '
            f'font-size="9px">{esc(shorten(r.label, 20))}</text>{marks}</g>'
        )
    if extra:
        body.append(
            f'<text x="{num(left + 4)}" y="{num(bottom - 3)}" font-size="9px">'
            f"… {len(rows) - len(shown)} more streams not drawn</text>"
        )
    body.append(
        f'<text x="{num((left + right) / 2)}" y="{num(bottom + 30)}" text-anchor="middle">ms</text>'
    )
    return svg_root(width, bottom + 40, body, title)
