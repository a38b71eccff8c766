"""Visual progress and SpeedIndex from Chrome screencast frames, the WebPageTest way.

Input. Each :class:`Frame` is one ``Page.screencastFrame`` event from the Chrome DevTools
protocol: an encoded JPEG or PNG plus its time since navigation start. Screencast is
event-driven: Chrome sends a frame whenever the compositor produced a frame that changed, so
every visual change is captured, at most one per display frame (about 60 per second). There is
no fixed sampling rate to interpolate and no video to decode.

Method (after WebPageTest's ``visualmetrics``, re-written from its description):

1. **Histogram.** Each frame is decoded and counted into 256 bins per R, G, B channel, leaving
   out pixels that are nearly white (all three channels > 250). A white page background thus
   counts as "nothing painted" and JPEG noise around pure white is not counted as paint.
2. **Progress.** Against a start histogram (the blank page) and a final histogram (the last
   frame), a frame's completeness per channel is the share of the final-minus-start pixel
   counts it matches: each bin of the target may draw on the frame's pixels in bins up to ±5
   values away (slop, so compression or anti-aliasing shifts of a few levels still match), each
   frame pixel being used once. Progress is the mean of the three channel shares, in [0, 1].
3. **SpeedIndex.** Progress is a step function of time: 0 from navigation start (t = 0) to the
   first frame, then each frame's value until the next frame. SpeedIndex is
   ∫ (1 − progress(t)) dt from 0 to the last frame, in ms; the last frame is the final state
   (progress 1), so time after the last change adds nothing.

The start reference is always an all-white page (an empty histogram, since white is left out),
whether or not the caller's first frame is blank: the state before the first frame is the
navigation start with nothing painted.

Milestones (browsertime's names): **first visual change**, the first frame with progress > 0;
**last visual change**, the last frame whose histogram differs from the one before it (the
first frame's "before" is the start state); **visual complete 85/95/99**, the first frame from
which progress stays at or above 85/95/99% (browsertime's ``extraMetrics``: a later drop below
the mark forgets it and it is found again where the page climbs back); **visual complete**,
from which it stays at 100%. They are ordered: first change ≤ SpeedIndex ≤ last change, and
VC85 ≤ VC95 ≤ VC99 ≤ visual complete ≤ last change.

**WebPageTest-compatible mode** (``mode="wpt"``, :func:`wpt_progress`): as browsertime
28.3.0's ``visualmetrics-portable.py`` computes it from a folder of frames: the *first frame* is
the start state (not a white page); a pixel is white, and left out, when all three channels are
at least 250; frames are decoded at full size; progress pools the three channels, each bin
counting ``min(|frame − start|, |final − start|)`` against ``|final − start|`` with no slop, and is
rounded down to a whole percent; SpeedIndex runs from navigation start (the start state, progress
0, until the first frame) to the last frame; first visual change is the first frame whose
histogram differs from the first frame's. tests/unit/test_metrics_visual.py and
tests/integration/test_visual_metrics.py run the reference itself on the same frames.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image, ImageChops, UnidentifiedImageError

Histogram = tuple[list[int], list[int], list[int]]
"""256 pixel counts per channel, in R, G, B order."""

WHITE_MIN = 251
"""A pixel with all channels at least this is "white" and left out of histograms
(WebPageTest visualmetrics: ``< 250`` on any channel is counted; we follow the h2lab spec of
"all channels > 250 is white", one level stricter)."""

SLOP_LEVELS = 5
"""A target bin may be matched by frame pixels this many levels away (WebPageTest
visualmetrics, ``slop = 5``)."""

COMPLETE_PROGRESS = 0.9999
"""Progress at or above this counts as visually complete (guards float rounding only)."""

H2LAB, WPT = "h2lab", "wpt"
MODES = (H2LAB, WPT)
"""SpeedIndex modes: h2lab's (white start, per-channel slop matching) and WebPageTest's."""

WPT_WHITE_MIN = 250
"""WebPageTest mode: a pixel with all channels at least this is white (visualmetrics:
``pixel[0] < 250 or pixel[1] < 250 or pixel[2] < 250`` is counted)."""

MILESTONES = (0.85, 0.95, 0.99)
"""The visual-complete marks browsertime reports (VisualComplete85, 95, 99)."""

_BINS = 256
# Lookup table turning the per-pixel minimum channel into a mask: 255 = painted, 0 = white.
_PAINTED_LUT = [255] * WHITE_MIN + [0] * (_BINS - WHITE_MIN)
_WPT_PAINTED_LUT = [255] * WPT_WHITE_MIN + [0] * (_BINS - WPT_WHITE_MIN)
_EMPTY: Histogram = ([0] * _BINS, [0] * _BINS, [0] * _BINS)


class FrameDecodeError(ValueError):
    """A frame's bytes are not a JPEG or PNG image that Pillow can decode."""


@dataclass(frozen=True)
class Frame:
    t_ms: float
    """time since navigation start, ms"""
    image: bytes
    """encoded JPEG or PNG, as delivered by ``Page.screencastFrame``"""


@dataclass(frozen=True)
class VisualMetrics:
    speed_index_ms: float | None
    """∫ (1 − progress) dt from navigation start to the last frame; None if nothing was painted"""
    visual_complete_ms: float | None
    """first frame from which progress stays at 1"""
    first_visual_change_ms: float | None
    """first frame with progress > 0 (WPT mode: whose histogram differs from the first's)"""
    frames: int
    """number of frames given"""
    progress: tuple[tuple[float, float], ...]
    """(t_ms, progress in [0, 1]) per frame, sorted by time; empty if nothing was painted"""
    last_visual_change_ms: float | None = None
    """last frame whose histogram differs from the frame before it"""
    visual_complete_85_ms: float | None = None
    """first frame from which progress stays at or above 85%"""
    visual_complete_95_ms: float | None = None
    visual_complete_99_ms: float | None = None
    mode: str = H2LAB
    """how it was computed: :data:`H2LAB` or :data:`WPT`"""


JPEG_DRAFT_SCALE = 4
"""JPEG frames are decoded at 1/4 of their size (libjpeg's DCT scaling: about 8x faster).
Progress is a ratio of pixel counts, so a uniform scale leaves it unchanged; frames of one load
are all JPEG (a PNG frame would be counted at full size: do not mix formats in one load)."""


def histogram(image: bytes, *, mode: str = H2LAB) -> Histogram:
    """Decode ``image`` and count non-white pixels into 256 bins per R, G, B channel (WPT
    mode: at full size, white as visualmetrics draws it)."""
    try:
        with Image.open(io.BytesIO(image), formats=["JPEG", "PNG"]) as img:
            if img.format == "JPEG" and mode == H2LAB:
                w, h = img.size
                img.draft("RGB", (max(1, w // JPEG_DRAFT_SCALE), max(1, h // JPEG_DRAFT_SCALE)))
            rgb = img.convert("RGB")
    except (UnidentifiedImageError, OSError) as exc:
        raise FrameDecodeError(f"cannot decode frame image ({len(image)} bytes): {exc}") from exc
    red, green, blue = rgb.split()
    darkest = ImageChops.darker(ImageChops.darker(red, green), blue)
    counts = rgb.histogram(mask=darkest.point(_WPT_PAINTED_LUT if mode == WPT else _PAINTED_LUT))
    return counts[0:_BINS], counts[_BINS : 2 * _BINS], counts[2 * _BINS : 3 * _BINS]


def _channel_match(hist: list[int], start: list[int], final: list[int]) -> tuple[int, int]:
    """(matched, target) pixel counts of one channel, bins matched within ±``SLOP_LEVELS``.

    Greedy, as WebPageTest: target bins in ascending order, each drawing on the frame's bins
    from the lowest in its window upwards. ``low`` is the lowest bin that may still hold
    pixels for a later target: bins below it are empty or out of every later window, so they
    are never scanned again."""
    available = [abs(h - s) for h, s in zip(hist, start, strict=True)]
    matched = total = low = 0
    for i, (f, s) in enumerate(zip(final, start, strict=True)):
        target = abs(f - s)
        if not target:
            continue
        total += target
        need = target
        low = max(low, i - SLOP_LEVELS)
        while low < _BINS and not available[low] and low <= i + SLOP_LEVELS:
            low += 1
        for j in range(low, min(_BINS, i + SLOP_LEVELS + 1)):
            have = available[j]
            if have >= need:
                available[j] = have - need
                need = 0
                break
            available[j] = 0
            need -= have
        matched += target - need
    return matched, total


def frame_progress(hist: Histogram, start: Histogram, final: Histogram) -> float:
    """Completeness of ``hist`` between ``start`` and ``final``: mean of channel shares, [0, 1]."""
    shares = []
    for h, s, f in zip(hist, start, final, strict=True):
        matched, total = _channel_match(h, s, f)
        shares.append(matched / total if total else 1.0)
    return min(1.0, max(0.0, sum(shares) / len(shares)))


def wpt_progress(hist: Histogram, start: Histogram, final: Histogram) -> float:
    """WebPageTest mode's completeness (visualmetrics' ``calculate_frame_progress``): channels
    pooled, each bin matched up to ``|final − start|`` with no slop, rounded down to a whole
    percent; in [0, 1]."""
    matched = total = 0
    for h, s, f in zip(hist, start, final, strict=True):
        for cur, init, target in zip(h, s, f, strict=True):
            want = abs(target - init)
            matched += min(abs(cur - init), want)
            total += want
    return math.floor(100 * matched / total) / 100 if total else 1.0


def visual_metrics(frames: Sequence[Frame], mode: str = H2LAB) -> VisualMetrics:
    """Progress per frame, SpeedIndex, visual complete and the milestones, all in ms.

    Frames are sorted by ``t_ms`` (stable, so of two frames at one time the later given wins).
    A frame before navigation start (``t_ms`` < 0) only sets the progress in force at t = 0.
    ``mode``: :data:`H2LAB` (the default) or :data:`WPT` (WebPageTest-compatible).
    """
    if mode not in MODES:
        raise ValueError(f"SpeedIndex mode must be one of {', '.join(MODES)}, got {mode!r}")
    for frame in frames:
        if not math.isfinite(frame.t_ms):
            raise ValueError(f"frame time must be finite, got t_ms={frame.t_ms!r}")
    ordered = sorted(frames, key=lambda fr: fr.t_ms)
    nothing = VisualMetrics(None, None, None, frames=len(frames), progress=(), mode=mode)
    if not ordered:
        return nothing
    hists = [histogram(fr.image, mode=mode) for fr in ordered]
    final = hists[-1]
    if mode == WPT:
        start = hists[0]
        if all(h == start for h in hists):
            return nothing
        values = [wpt_progress(h, start, final) for h in hists]
        changed = [h != start for h in hists]
    else:
        if not any(any(channel) for channel in final):
            return nothing
        start = _EMPTY
        # the last frame is the final state: its progress is 1 by definition
        values = [frame_progress(h, start, final) for h in hists[:-1]] + [1.0]
        changed = [v > 0.0 for v in values]
    progress = tuple((fr.t_ms, p) for fr, p in zip(ordered, values, strict=True))
    before = [start, *hists[:-1]]
    changes = [fr.t_ms for fr, h, b in zip(ordered, hists, before, strict=True) if h != b]
    return VisualMetrics(
        speed_index_ms=_speed_index_ms(progress),
        visual_complete_ms=reached_ms(progress, COMPLETE_PROGRESS),
        first_visual_change_ms=next(fr.t_ms for fr, c in zip(ordered, changed, strict=True) if c),
        frames=len(frames),
        progress=progress,
        last_visual_change_ms=changes[-1],
        visual_complete_85_ms=reached_ms(progress, MILESTONES[0]),
        visual_complete_95_ms=reached_ms(progress, MILESTONES[1]),
        visual_complete_99_ms=reached_ms(progress, MILESTONES[2]),
        mode=mode,
    )


def _speed_index_ms(progress: Sequence[tuple[float, float]]) -> float:
    """∫ (1 − progress) dt from navigation start (progress 0 until the first frame) to the last
    frame."""
    speed_index_ms = 0.0
    now_ms, current = 0.0, 0.0
    for t_ms, p in progress:
        if t_ms > now_ms:
            speed_index_ms += (1.0 - current) * (t_ms - now_ms)
            now_ms = t_ms
        current = p
    return speed_index_ms


def reached_ms(progress: Sequence[tuple[float, float]], mark: float) -> float | None:
    """The first frame from which progress stays at or above ``mark`` (browsertime's
    ``extraMetrics``: a later drop below forgets it); None if the last frame is below."""
    at_ms = None
    for t_ms, p in progress:
        below = p < mark - 1e-9
        at_ms = None if below else (t_ms if at_ms is None else at_ms)
    return at_ms
