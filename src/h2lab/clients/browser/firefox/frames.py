"""The frames Firefox's compositor made during a load, for SpeedIndex and visual complete.

Firefox has no screencast in WebDriver BiDi, and polling ``browsingContext.captureScreenshot``
would both miss changes and load the CPU during the trial. Firefox's own composition recorder
(``windowUtils.startCompositionRecording`` / ``stopCompositionRecording``, what browsertime's
``firefox.windowRecorder`` uses) keeps one PNG of the window for every composite, with its
time: like Chromium's screencast it is event-driven, so every visual change is seen, at most
one per display frame. It is a privileged API: the browser is started with
``--remote-allow-system-access`` and the script runs in the browser window's chrome context
(``browsingContext.getTree`` with ``"moz:scope": "chrome"``).

What the recorder gives, as measured on firefox-esr 153 headless (see the Firefox SpeedIndex
test): ``recordingStart`` in ms since the epoch (the clock of ``performance.timeOrigin``), each
frame's ``timeOffset`` in ms from it, and a PNG of the whole window (toolbars included) that is
upside down (rows bottom-up, as read back from the compositor) and transparent where nothing
was painted. :func:`decode` turns each into a :class:`~h2lab.metrics.visual.Frame` like
Chromium's: turned upright, cut to the tab's content area, laid on white, a JPEG, its time
from navigation start. Consecutive identical frames are dropped in the browser, before they
cross the connection.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from PIL import Image, UnidentifiedImageError

from h2lab.clients.browser.firefox.bidi import Bidi, BidiError
from h2lab.errors import TrialFailed
from h2lab.metrics.visual import Frame

JPEG_QUALITY = 80
"""Quality of the JPEG a frame becomes (Chromium's screencast frames are JPEG too, decoded
by :mod:`h2lab.metrics.visual` at a quarter of their size)."""

BATCH = 16
"""Frames fetched per BiDi call (a 1366 x 768 PNG is 40-400 kB as a data URI)."""

DECODERS = 1
"""Threads decoding frames while the browser sends the next (PIL lets go of the GIL while it
decodes and encodes): one, as the browser's side of the fetch takes the other core of a
2-core machine (two were no faster)."""

CALL_TIMEOUT_S = 30.0

START_JS = "window.windowUtils.startCompositionRecording().then(() => true)"

STOP_JS = """
window.windowUtils.stopCompositionRecording(false).then(recorded => {
  const kept = [];
  let last = null;
  for (const f of recorded.frames) {
    if (f.dataUri !== last) kept.push(f);
    last = f.dataUri;
  }
  window.__h2labFrames = kept;
  const r = gBrowser.selectedBrowser.getBoundingClientRect();
  return JSON.stringify({
    start: recorded.recordingStart, count: kept.length, recorded: recorded.frames.length,
    content: [r.x, r.y, r.width, r.height], scale: window.devicePixelRatio,
  });
})
"""

BATCH_JS = (
    "JSON.stringify(window.__h2labFrames.slice({i}, {j}).map(f => [f.timeOffset, f.dataUri]))"
)

CLEAR_JS = "delete window.__h2labFrames"

# The headless window is 1366 x 768 with its toolbars inside: the tab's content area is 86 px
# shorter than the viewport ``browsingContext.setViewport`` lays the page out in, and frames
# would miss the bottom of it. The window grows by the toolbars' height instead.
FIT_JS = """
new Promise(resolve => {
  const b = gBrowser.selectedBrowser.getBoundingClientRect();
  window.resizeTo(window.outerWidth + (WIDTH - b.width), window.outerHeight + (HEIGHT - b.height));
  setTimeout(() => {
    const c = gBrowser.selectedBrowser.getBoundingClientRect();
    resolve(JSON.stringify([c.width, c.height]));
  }, 100);
})
"""

SETTLE_S = 0.1
"""After the load, the time given to the compositor before the recording stops: the paint
the load triggered reaches the recording 20-40 ms after the page's own paint mark, and
without a wait the last frame was missing (SpeedIndex stopped at the one before). 0.1 s (0.25
before issue #43): over 120 trials of the demo page (h1s, h2s, cable; two runs of 30 at each
value) the last visual change came 18-46 ms after the load event at both values, every trial's
post-load frame was recorded, and the medians of SpeedIndex and visual complete differed
between the values no more than between two runs at one value (about 2 %); the overhead's
median fell from 1.66-1.74 s to 1.54-1.57 s."""


@dataclass(frozen=True)
class Recording:
    """One load's recorded frames, as the browser gave them."""

    start_ms: float
    """when recording began, ms since the epoch"""
    frames: list[tuple[float, str]]
    """(ms from ``start_ms``, PNG data URI) per distinct frame"""
    content: tuple[float, float, float, float]
    """the tab's content area in the window: x, y, width, height in CSS pixels"""
    scale: float
    """device pixels per CSS pixel"""
    recorded: int
    """frames the compositor made, identical ones included"""


def chrome_context(bidi: Bidi, timeout_s: float) -> str:
    """The browser window's chrome browsing context (its ``browser.xhtml``)."""
    tree = bidi.call("browsingContext.getTree", {"moz:scope": "chrome"}, timeout_s=timeout_s)
    for context in tree.get("contexts", []):
        if str(context.get("url", "")).startswith("chrome://browser/"):
            return str(context["context"])
    raise TrialFailed("firefox: no browser window to record frames from")


def fit_window(bidi: Bidi, chrome: str, width: int, height: int) -> tuple[float, float]:
    """Make the window's content area ``width`` x ``height`` CSS pixels; what it became."""
    w, h = json.loads(
        _evaluate(bidi, chrome, FIT_JS.replace("WIDTH", str(width)).replace("HEIGHT", str(height)))
    )
    return float(w), float(h)


def start(bidi: Bidi, chrome: str) -> None:
    """Begin recording the window's frames."""
    _evaluate(bidi, chrome, START_JS)


def stop(bidi: Bidi, chrome: str, time_origin_ms: float | None) -> list[Frame] | None:
    """End the recording (after :data:`SETTLE_S`) and fetch its distinct frames :data:`BATCH`
    at a time, each batch decoded (as :func:`decode`) on a thread (:data:`DECODERS`) while
    the next crosses the connection (the browser's work): the demo page's 32 frames took
    0.44 s to fetch and 0.78 s to decode, one after the other. Without a time origin none is
    fetched (None)."""
    head = _stop(bidi, chrome)
    if time_origin_ms is None:
        _evaluate(bidi, chrome, CLEAR_JS, value=False)
        return None
    shell = _recording(head, [])
    with ThreadPoolExecutor(DECODERS, thread_name_prefix="firefox-frames") as pool:
        decoding = [
            pool.submit(_frame, f, shell, time_origin_ms)
            for batch in _batches(bidi, chrome, int(head["count"]))
            for f in batch
        ]
        return [d.result() for d in decoding]


def _stop(bidi: Bidi, chrome: str) -> dict[str, Any]:
    time.sleep(SETTLE_S)
    head = json.loads(_evaluate(bidi, chrome, STOP_JS))
    return head if isinstance(head, dict) else {}


def _batches(bidi: Bidi, chrome: str, count: int) -> Iterator[list[tuple[float, str]]]:
    """The recorded frames, :data:`BATCH` at a time; then the browser lets go of them."""
    try:
        for i in range(0, count, BATCH):
            batch = json.loads(_evaluate(bidi, chrome, BATCH_JS.format(i=i, j=i + BATCH)))
            yield [(float(t), str(uri)) for t, uri in batch]
    finally:
        _evaluate(bidi, chrome, CLEAR_JS, value=False)


def _recording(head: Mapping[str, Any], frames: list[tuple[float, str]]) -> Recording:
    x, y, w, h = (float(v) for v in head["content"])
    return Recording(
        float(head["start"]), frames, (x, y, w, h), float(head["scale"] or 1), int(head["recorded"])
    )


def discard(bidi: Bidi, chrome: str) -> None:
    """End a recording whose frames are not wanted (a failed load)."""
    _evaluate(
        bidi,
        chrome,
        "window.windowUtils.stopCompositionRecording(false).then(() => true)",
        value=False,
    )


def decode(recording: Recording, time_origin_ms: float) -> list[Frame]:
    """The recording's frames, upright, cut to the content area, on white, as JPEG, each
    timed from navigation start (``time_origin_ms``: the page's ``performance.timeOrigin``)."""
    return [_frame(f, recording, time_origin_ms) for f in recording.frames]


def _frame(recorded: tuple[float, str], recording: Recording, time_origin_ms: float) -> Frame:
    offset_ms, uri = recorded
    t_ms = recording.start_ms + offset_ms - time_origin_ms
    return Frame(round(t_ms, 3), _content(_png(uri), recording))


def _png(uri: str) -> Image.Image:
    head, _, data = uri.partition(",")
    try:
        if not head.startswith("data:image/png;base64"):
            raise ValueError(f"not a PNG data URI: {head[:40]!r}")
        image = Image.open(io.BytesIO(base64.b64decode(data)), formats=["PNG"])
        image.load()
    except (ValueError, binascii.Error, UnidentifiedImageError, OSError) as exc:
        raise TrialFailed(f"firefox: a recorded frame cannot be decoded: {exc}") from None
    return image


def _content(window: Image.Image, recording: Recording) -> bytes:
    """One window frame as the content area's JPEG."""
    s = recording.scale
    x, y, w, h = recording.content
    left, top, right, bottom = _clamp((x * s, y * s, (x + w) * s, (y + h) * s), window.size)
    # the box of the upright window, cut from the bottom-up one before it is turned
    height = window.size[1]
    area = window.crop((left, height - bottom, right, height - top))
    area = area.transpose(Image.Transpose.FLIP_TOP_BOTTOM).convert("RGBA")
    white = Image.new("RGBA", area.size, (255, 255, 255, 255))
    white.alpha_composite(area)
    buf = io.BytesIO()
    white.convert("RGB").save(buf, "JPEG", quality=JPEG_QUALITY)
    return buf.getvalue()


def _clamp(box: Sequence[float], size: tuple[int, int]) -> tuple[int, int, int, int]:
    width, height = size
    left, top, right, bottom = (round(v) for v in box)
    left, top = min(max(0, left), width - 1), min(max(0, top), height - 1)
    return left, top, max(left + 1, min(right, width)), max(top + 1, min(bottom, height))


def _evaluate(bidi: Bidi, chrome: str, expression: str, *, value: bool = True) -> Any:
    """Run ``expression`` (a promise) in the chrome context; its string value."""
    try:
        answer = bidi.call(
            "script.evaluate",
            {"expression": expression, "target": {"context": chrome}, "awaitPromise": True},
            timeout_s=CALL_TIMEOUT_S,
        )
    except BidiError as exc:
        raise TrialFailed(f"firefox: recording frames failed: {exc}") from None
    if answer.get("type") == "exception":
        text = answer.get("exceptionDetails", {}).get("text", "exception")
        raise TrialFailed(f"firefox: recording frames failed: {text}")
    return answer.get("result", {}).get("value") if value else None
