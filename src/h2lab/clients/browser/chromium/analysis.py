"""What a Chromium page load measured, from what it left (:class:`RawLoad`): the metrics, the
resources and the HAR. Pure: the trial's artifacts are written by the caller.

Navigation and paint timing come from the page (``ttfb_ms`` = responseStart, ``dcl_ms`` =
domContentLoadedEventStart, ``plt_ms`` = loadEventEnd, ``fp_ms``, ``fcp_ms``, ``lcp_ms``, all
from navigation start); resources from the network log (start, first byte, end, body bytes,
protocol, connection id, priority); SpeedIndex and visual complete from the screenshots of a
Chrome trace (``disabled-by-default-devtools.screenshot``: one JPEG per compositor frame that
changed, so every visual change is seen, up to the display rate of 60 per second), computed by
:mod:`h2lab.metrics.visual` (option ``speed_index=wpt``: its WebPageTest-compatible mode), with
the visual milestones (first and last visual change, visually 85/95/99% complete).

``cls`` from the page's layout shifts (a buffered ``layout-shift`` PerformanceObserver read after
the load) and ``tbt_ms`` from the trace's top-level tasks (``RunTask`` of
``disabled-by-default-devtools.timeline``) on the main thread of the page's renderer (the
thread of its ``navigationStart``), both by :mod:`h2lab.metrics.web_vitals`;
``fully_loaded_ms`` with option ``idle`` (:func:`~h2lab.clients.browser.result.assemble`).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from h2lab.clients.browser.log import NetworkLog
from h2lab.clients.browser.result import Analysis, assemble, cls, visual_fields
from h2lab.metrics.visual import H2LAB, Frame, VisualMetrics, visual_metrics
from h2lab.metrics.web_vitals import Task, total_blocking_time_ms

TASK_EVENTS = frozenset({"RunTask", "ThreadControllerImpl::RunTask"})
"""A task of a thread's scheduler, in a Chrome trace (Lighthouse's ``isScheduleableTask``)."""


@dataclass
class RawLoad:
    """What a page load leaves for the analysis."""

    trace: bytes
    """the Chrome trace, JSON"""
    timing: dict[str, Any]
    """the page's navigation and paint timing (ms from navigation start) and its Element
    Timing, as the after-load script read them"""
    log: NetworkLog


def navigation(trace: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``navigationStart`` event of the main frame's last navigation to an http(s) URL."""
    nav = None
    for e in trace.get("traceEvents", []):
        if e.get("name") == "navigationStart":
            data = e.get("args", {}).get("data", {})
            url = data.get("documentLoaderURL", "")
            main = data.get("isLoadingMainFrame") and url.startswith(("http://", "https://"))
            if main and (nav is None or e["ts"] >= nav["ts"]):
                nav = e
    return nav


def trace_frames(trace: Mapping[str, Any]) -> tuple[float | None, list[Frame]]:
    """The navigation start (seconds, monotonic) of the main frame's last navigation and
    the screenshots after it, from a Chrome trace."""
    events = trace.get("traceEvents", [])
    nav = navigation(trace)
    nav_us = None if nav is None else nav["ts"]
    frames = []
    if nav_us is not None:
        for e in events:
            if e.get("name") == "Screenshot" and e.get("ts", 0) >= nav_us:
                snap = e.get("args", {}).get("snapshot")
                if snap:
                    frames.append(Frame((e["ts"] - nav_us) / 1000, base64.b64decode(snap)))
    return (None if nav_us is None else nav_us / 1e6), frames


def main_thread_tasks(trace: Mapping[str, Any]) -> tuple[list[Task], float] | None:
    """The top-level tasks of the thread that ran the main frame's last navigation (its
    renderer's main thread), timed from navigation start, and the trace's end (ms from
    navigation start); None: no navigation in the trace."""
    nav = navigation(trace)
    if nav is None:
        return None
    nav_us, thread = nav["ts"], (nav.get("pid"), nav.get("tid"))
    spans = sorted(
        (e["ts"], e.get("dur", 0))
        for e in trace.get("traceEvents", [])
        if e.get("name") in TASK_EVENTS
        and e.get("ph") == "X"
        and (e.get("pid"), e.get("tid")) == thread
    )
    tasks, busy_until_us = [], float("-inf")
    for ts, dur in spans:
        if ts >= busy_until_us:  # not nested in the task before it
            tasks.append(Task((ts - nav_us) / 1000, dur / 1000))
            busy_until_us = ts + dur
    events = trace.get("traceEvents", [])
    end_us = max((e.get("ts", 0) + e.get("dur", 0) for e in events), default=0)
    return tasks, (end_us - nav_us) / 1000


def tbt_ms(trace: Mapping[str, Any], fcp_ms: float | None) -> float | None:
    """TotalBlockingTime from FCP to the end of the trace (None: no FCP or no navigation)."""
    found = main_thread_tasks(trace)
    if fcp_ms is None or found is None:
        return None
    tasks, end_ms = found
    return round(total_blocking_time_ms(tasks, fcp_ms, end_ms), 3)


def page_metrics(timing: Mapping[str, Any], visual: VisualMetrics) -> dict[str, float | None]:
    """The page's metrics in ms from navigation start (None: not reported, or not positive),
    and its CLS."""

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
        "cls": cls(timing),
        **visual_fields(visual),
    }


def analyse(
    raw: RawLoad, url: str, *, mode: str = H2LAB, idle: bool = False, tbt: bool = True
) -> Analysis:
    """Metrics, resources and HAR of a load of ``url`` (TrialFailed: it fetched nothing);
    ``mode``: how SpeedIndex is computed; ``idle``: the load waited for network silence;
    ``tbt``: the trace holds the tasks (option ``tbt``), else ``tbt_ms`` is None."""
    timing = raw.timing
    trace = json.loads(raw.trace)
    nav_s, frames = trace_frames(trace)
    visual = visual_metrics(frames, mode)
    metrics = page_metrics(timing, visual)
    metrics["tbt_ms"] = tbt_ms(trace, metrics["fcp_ms"]) if tbt else None
    analysis = assemble("chromium", raw.log, url, nav_s, metrics, visual, frames, idle=idle)
    # Element Timing (``<img elementtiming=...>``): when Chrome painted each marked element
    elements = {str(k): round(float(v), 3) for k, v in (timing.get("elements") or {}).items()}
    analysis.har["log"]["pages"][0]["_element_timing_ms"] = elements
    return analysis
