"""CumulativeLayoutShift and TotalBlockingTime from what a browser reported (pure: no I/O).

**CLS** (web-vitals' ``onCLS``): layout shifts with recent input (``hadRecentInput``) are left
out; the others are grouped into session windows, a shift joining the current window when it
comes less than :data:`SESSION_GAP_MS` after the window's last shift and less than
:data:`SESSION_MAX_MS` after its first; CLS is the largest window's sum of scores. A page with
no shift has CLS 0.

**TBT** (Lighthouse's ``TotalBlockingTime``): over the main thread's top-level tasks, the part
of each beyond :data:`BLOCKING_THRESHOLD_MS` that lies between first contentful paint and an
end. Lighthouse clips each task to [FCP, TTI] and counts it if the clipped part is longer than
50 ms; h2lab takes the end of the trial's trace as the end (the load event, two animation
frames and 100 ms later, or the end of the ``idle=`` wait), since it computes no TTI.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

SESSION_GAP_MS = 1000.0
"""A shift this long or longer after the previous one starts a new session window
(web-vitals)."""
SESSION_MAX_MS = 5000.0
"""A session window spans at most this long (web-vitals)."""
BLOCKING_THRESHOLD_MS = 50.0
"""A task blocks the main thread for its part beyond this (RAIL's 50 ms; Lighthouse)."""


@dataclass(frozen=True)
class LayoutShift:
    start_ms: float
    """when it happened, ms from navigation start"""
    score: float
    """its layout-shift score (``value``)"""
    had_recent_input: bool = False
    """it followed user input within 500 ms (and does not count)"""


@dataclass(frozen=True)
class Task:
    start_ms: float
    """ms from navigation start"""
    duration_ms: float


def cumulative_layout_shift(shifts: Iterable[LayoutShift]) -> float:
    """The largest session window's sum of scores (shifts in time order; 0 with none)."""
    best = window = 0.0
    first_ms = last_ms = 0.0
    for shift in sorted(shifts, key=lambda s: s.start_ms):
        if shift.had_recent_input:
            continue
        t = shift.start_ms
        if window and t - last_ms < SESSION_GAP_MS and t - first_ms < SESSION_MAX_MS:
            window += shift.score
        else:
            window, first_ms = shift.score, t
        last_ms = t
        best = max(best, window)
    return best


def total_blocking_time_ms(tasks: Iterable[Task], fcp_ms: float, end_ms: float) -> float:
    """Lighthouse's sum of blocking time of ``tasks`` clipped to [``fcp_ms``, ``end_ms``]."""
    total = 0.0
    for task in tasks:
        if task.duration_ms <= BLOCKING_THRESHOLD_MS:
            continue
        start = max(task.start_ms, fcp_ms)
        end = min(task.start_ms + task.duration_ms, end_ms)
        if end - start > BLOCKING_THRESHOLD_MS:
            total += end - start - BLOCKING_THRESHOLD_MS
    return total
