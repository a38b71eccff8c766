"""What a Chromium page load measured, from what it left (:class:`RawLoad`): the metrics, the
resources and the HAR. Pure: the trial's artifacts are written by the caller.

Navigation and paint timing come from the page (``ttfb_ms`` = responseStart, ``dcl_ms`` =
domContentLoadedEventStart, ``plt_ms`` = loadEventEnd, ``fp_ms``, ``fcp_ms``, ``lcp_ms``, all
from navigation start); resources from the network log (start, first byte, end, body bytes,
protocol, connection id, priority); SpeedIndex and visual complete from the screenshots of a
Chrome trace (``disabled-by-default-devtools.screenshot``: one JPEG per compositor frame that
changed, so every visual change is seen, up to the display rate of 60 per second), computed by
:mod:`h2lab.metrics.visual`.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from h2lab.clients.browser_log import NetworkLog
from h2lab.clients.browser_result import Analysis, assemble, visual_fields
from h2lab.metrics.visual import Frame, VisualMetrics, visual_metrics


@dataclass
class RawLoad:
    """What a page load leaves for the analysis."""

    trace: bytes
    """the Chrome trace, JSON"""
    timing: dict[str, Any]
    """the page's navigation and paint timing (ms from navigation start) and its Element
    Timing, as the after-load script read them"""
    log: NetworkLog


def trace_frames(trace: Mapping[str, Any]) -> tuple[float | None, list[Frame]]:
    """The navigation start (seconds, monotonic) of the main frame's last navigation and
    the screenshots after it, from a Chrome trace."""
    events = trace.get("traceEvents", [])
    nav_us = None
    for e in events:
        if e.get("name") == "navigationStart":
            data = e.get("args", {}).get("data", {})
            if data.get("isLoadingMainFrame") and data.get("documentLoaderURL", "").startswith(
                ("http://", "https://")
            ):
                nav_us = max(nav_us or 0, e["ts"])
    frames = []
    if nav_us is not None:
        for e in events:
            if e.get("name") == "Screenshot" and e.get("ts", 0) >= nav_us:
                snap = e.get("args", {}).get("snapshot")
                if snap:
                    frames.append(Frame((e["ts"] - nav_us) / 1000, base64.b64decode(snap)))
    return (None if nav_us is None else nav_us / 1e6), frames


def page_metrics(timing: Mapping[str, Any], visual: VisualMetrics) -> dict[str, float | None]:
    """The page's metrics in ms from navigation start (None: not reported, or not positive)."""

    def rel(name: str) -> float | None:
        v = timing.get(name)
        return None if v is None or v <= 0 else round(float(v), 3)

    return {
        "connect_ms": rel("connectEnd"),
        "ttfb_ms": rel("responseStart"),
        "dcl_ms": rel("dcl"),
        "plt_ms": rel("loadEventEnd"),
        "fp_ms": rel("fp"),
        "fcp_ms": rel("fcp"),
        "lcp_ms": rel("lcp"),
        **visual_fields(visual),
    }


def analyse(raw: RawLoad, url: str) -> Analysis:
    """Metrics, resources and HAR of a load of ``url`` (TrialFailed: it fetched nothing)."""
    timing = raw.timing
    nav_s, frames = trace_frames(json.loads(raw.trace))
    visual = visual_metrics(frames)
    analysis = assemble(
        "chromium", raw.log, url, nav_s, page_metrics(timing, visual), visual, frames
    )
    # Element Timing (``<img elementtiming=...>``): when Chrome painted each marked element
    elements = {str(k): round(float(v), 3) for k, v in (timing.get("elements") or {}).items()}
    analysis.har["log"]["pages"][0]["_element_timing_ms"] = elements
    return analysis
