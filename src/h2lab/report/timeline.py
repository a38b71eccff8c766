"""The chosen cell's pictures from its stored rows: waterfall bars from the ``resources``
table, timeline lanes (from an nghttp frame log, or from resource timings), and the instants of
a filmstrip (pure: rows in, plain data out)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from h2lab.report.svg.waterfall import TimelineRow, WaterfallRow


def waterfall_rows(resources: Iterable[Mapping[str, object]]) -> list[WaterfallRow]:
    """Rows of the store's ``resources`` table (as dicts) as waterfall bars."""
    out = []
    for r in resources:
        url = str(r["url"])
        label = url.split("://", 1)[-1]
        label = label.split("/", 1)[1] if "/" in label else label
        ttfb = r.get("ttfb_ms")
        out.append(
            WaterfallRow(
                label="/" + label,
                start_ms=_num(r["start_ms"]),
                ttfb_ms=None if ttfb is None else _num(ttfb),
                end_ms=_num(r["end_ms"]),
                connection=str(r["connection"]),
                bytes=int(_num(r.get("bytes") or 0)),
            )
        )
    return out


def _num(v: object) -> float:
    if isinstance(v, int | float):
        return float(v)
    raise TypeError(f"expected a number, got {v!r}")


_DATA_FRAME = re.compile(
    r"^\[\s*([\d.]+)\] recv DATA frame <length=(\d+), flags=0x[0-9a-f]+, stream_id=(\d+)>"
)


def frame_rows_from_log(text: str, connection: str) -> list[TimelineRow]:
    """Streams of an nghttp ``-v`` frame log: every DATA frame received, at its time (the
    log's clock, seconds from nghttp's start), with its length."""
    spans: dict[int, list[tuple[float, float, int]]] = defaultdict(list)
    for line in text.splitlines():
        m = _DATA_FRAME.match(line)
        if m:
            t_ms = float(m.group(1)) * 1000
            spans[int(m.group(3))].append((t_ms, t_ms, int(m.group(2))))
    return [
        TimelineRow(f"{connection} stream {sid}", connection, tuple(s))
        for sid, s in sorted(spans.items(), key=lambda kv: kv[1][0][0])
    ]


def frame_rows_from_resources(rows: Sequence[WaterfallRow]) -> list[TimelineRow]:
    """One lane per resource: bytes flowed from its first byte (else its request) to its end.
    Derived from resource timings, not frames: an interval, not the frames inside it."""
    return [
        TimelineRow(
            r.label,
            r.connection,
            ((r.ttfb_ms if r.ttfb_ms is not None else r.start_ms, r.end_ms, r.bytes),),
        )
        for r in sorted(rows, key=lambda r: (r.start_ms, r.end_ms))
    ]


def filmstrip_times(last_ms: Iterable[float], count: int = 10) -> list[float]:
    """``count`` shared instants from 0 to the latest last frame, so that strips of several
    trials line up column by column."""
    end = max(last_ms, default=0.0)
    if end <= 0:
        return [0.0]
    return [end * i / (count - 1) for i in range(count)]


def frame_at(frames: Sequence[tuple[float, str]], t_ms: float) -> str | None:
    """The frame on screen at ``t_ms``: the latest one at or before it (frames sorted)."""
    chosen = None
    for t, name in frames:
        if t <= t_ms + 1e-9:
            chosen = name
        else:
            break
    return chosen


def by_step(resources: Iterable[Mapping[str, object]]) -> dict[int, list[dict[str, object]]]:
    """A journey trial's ``resources`` rows by the step that began them (0: the measured load,
    a row without a step too), each step's times from its first request's start, in step
    order."""
    steps: dict[int, list[dict[str, object]]] = defaultdict(list)
    for r in resources:
        step = r.get("step")
        steps[step if isinstance(step, int) else 0].append(dict(r))
    out = {}
    for step in sorted(steps):
        rows = steps[step]
        t0 = 0.0 if step == 0 else min(_num(r["start_ms"]) for r in rows)
        for r in rows:
            for key in ("start_ms", "ttfb_ms", "end_ms"):
                if r.get(key) is not None:
                    r[key] = round(_num(r[key]) - t0, 3)
        out[step] = rows
    return out
