"""A browser's page load as a result, whichever browser made it: the :class:`LoadResult`, the
HAR, the visual progress and its frames (:func:`assemble`), and the artifacts a trial leaves
(:func:`write_artifacts`). Chromium (:mod:`~h2lab.clients.browser.chromium.analysis`) and Firefox
(:mod:`~h2lab.clients.browser.firefox.events`) each read their own events and page timing into a
network log, page metrics and frames; from there on a load is the same for both.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from h2lab.artifacts import FILMSTRIP_DIR, FILMSTRIP_FRAME, PAGE_HAR, VISUAL_PROGRESS
from h2lab.clients.browser.log import NetworkLog, failed_load_har
from h2lab.errors import TrialFailed
from h2lab.metrics.visual import Frame, VisualMetrics
from h2lab.metrics.web_vitals import LayoutShift, cumulative_layout_shift
from h2lab.results import LoadResult, ResourceTiming


@dataclass(frozen=True)
class Analysis:
    """A load's result and what its artifacts hold."""

    result: LoadResult
    har: dict[str, Any]
    """the load's requests as HAR, the metrics (and the browser's paint marks) on its page"""
    visual: VisualMetrics
    frames: list[Frame]
    """the screenshots from navigation start, for the filmstrip"""


VISUAL_FIELDS = (
    "speed_index_ms",
    "visual_complete_ms",
    "first_visual_change_ms",
    "last_visual_change_ms",
    "visual_complete_85_ms",
    "visual_complete_95_ms",
    "visual_complete_99_ms",
)
"""The metrics of :class:`~h2lab.metrics.visual.VisualMetrics` a load reports, by name."""


def visual_fields(visual: VisualMetrics) -> dict[str, float | None]:
    """SpeedIndex, visual complete and the visual milestones as page metrics, ms."""
    out: dict[str, float | None] = {}
    for name in VISUAL_FIELDS:
        value = getattr(visual, name)
        out[name] = None if value is None else round(value, 3)
    return out


LAYOUT_SHIFTS_JS = """
  let shifts = null;
  if ((PerformanceObserver.supportedEntryTypes || []).includes('layout-shift')) {
    const po = new PerformanceObserver(() => {});
    po.observe({type: 'layout-shift', buffered: true});
    shifts = po.takeRecords().map(e => [e.startTime, e.value, e.hadRecentInput]);
    po.disconnect();
  }
"""
"""The part of each browser's after-load script that reads the page's layout shifts into
``shifts`` (null: the browser reports none), returned as ``layoutShifts`` for :func:`cls`."""


def cls(timing: Mapping[str, Any]) -> float | None:
    """CumulativeLayoutShift of the page's ``layoutShifts`` as the after-load script read them
    ([start ms, score, had recent input] each; None: the browser reports no layout shifts)."""
    shifts = timing.get("layoutShifts")
    if not isinstance(shifts, list):
        return None
    found = (LayoutShift(float(t), float(v), bool(recent)) for t, v, recent in shifts)
    return round(cumulative_layout_shift(found), 6)


def fully_loaded_ms(resources: Sequence[ResourceTiming], plt_ms: float | None) -> float | None:
    """WebPageTest's fullyLoaded: the end of the last request (a failed one's at its start), or
    the load event's end if later (WebPageTest waits for network silence after onload), ms
    from navigation start; None with no request."""
    if not resources:
        return None
    end_ms = max(r.end_ms for r in resources)
    return round(end_ms if plt_ms is None else max(end_ms, plt_ms), 3)


def assemble(
    browser: str,
    log: NetworkLog,
    url: str,
    t0_s: float | None,
    metrics: Mapping[str, float | None],
    visual: VisualMetrics,
    frames: list[Frame],
    *,
    idle: bool = False,
) -> Analysis:
    """The result of ``browser``'s load of ``url``: resources from ``log`` (times from
    ``t0_s``, the navigation start; the first request's start if unknown), the page metrics
    (ms from navigation start; names as :class:`LoadResult`'s, absent ones None) and the
    visual progress; ``idle``: the load waited for network silence (option ``idle``), so
    ``fully_loaded_ms`` is known. TrialFailed: the load fetched nothing."""
    requests = log.finished()
    if not requests:
        raise TrialFailed(f"{browser} fetched nothing from {url}")
    start_s = t0_s if t0_s is not None else requests[0].start_s
    resources = log.resources(start_s)
    done = [r for r in resources if r.error is None]
    header_sizes = [r.header_bytes for r in requests]
    fully_ms = fully_loaded_ms(resources, metrics.get("plt_ms")) if idle else None
    page = {**metrics, "fully_loaded_ms": fully_ms, "_frames": float(visual.frames)}
    har = log.har(url, start_s, page)
    result = LoadResult(
        pdt_ms=round(max(r.end_ms for r in done) - min(r.start_ms for r in done), 3),
        body_bytes=sum(r.body_bytes for r in requests),
        request_header_bytes=None,
        response_header_bytes=(
            sum(h for h in header_sizes if h is not None)
            if all(h is not None for h in header_sizes)
            else None
        ),
        resources=resources,
        failed_requests=len(log.failed()),
        connect_ms=metrics.get("connect_ms"),
        ttfb_ms=metrics.get("ttfb_ms"),
        dcl_ms=metrics.get("dcl_ms"),
        plt_ms=metrics.get("plt_ms"),
        fp_ms=metrics.get("fp_ms"),
        fcp_ms=metrics.get("fcp_ms"),
        lcp_ms=metrics.get("lcp_ms"),
        speed_index_ms=metrics.get("speed_index_ms"),
        visual_complete_ms=metrics.get("visual_complete_ms"),
        first_visual_change_ms=metrics.get("first_visual_change_ms"),
        last_visual_change_ms=metrics.get("last_visual_change_ms"),
        visual_complete_85_ms=metrics.get("visual_complete_85_ms"),
        visual_complete_95_ms=metrics.get("visual_complete_95_ms"),
        visual_complete_99_ms=metrics.get("visual_complete_99_ms"),
        cls=metrics.get("cls"),
        tbt_ms=metrics.get("tbt_ms"),
        fully_loaded_ms=fully_ms,
    )
    return Analysis(result, har, visual, frames)


def write_artifacts(analysis: Analysis, folder: Path, *, filmstrip: bool) -> None:
    """A load's HAR and visual progress, and with ``filmstrip`` its screenshots."""
    (folder / PAGE_HAR).write_text(json.dumps(analysis.har))
    visual = analysis.visual
    (folder / VISUAL_PROGRESS).write_text(
        json.dumps({"frames": visual.frames, "progress": visual.progress})
    )
    if filmstrip:
        strip = folder / FILMSTRIP_DIR
        strip.mkdir(exist_ok=True)
        for f in analysis.frames:
            (strip / FILMSTRIP_FRAME.format(t_ms=f.t_ms)).write_bytes(f.image)


def keep_failed_log(log: NetworkLog, url: str, folder: Path) -> None:
    """Write a failed load's every request as a HAR (:func:`failed_load_har`)."""
    har = failed_load_har(log, url)
    if har is None:
        return
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / PAGE_HAR).write_text(json.dumps(har))
