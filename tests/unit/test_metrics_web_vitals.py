"""h2lab.metrics.web_vitals: CLS session windows (web-vitals) and TBT (Lighthouse)."""

from __future__ import annotations

import pytest

from h2lab.metrics.web_vitals import (
    LayoutShift,
    Task,
    cumulative_layout_shift,
    total_blocking_time_ms,
)


def test_no_shift_is_cls_zero() -> None:
    assert cumulative_layout_shift([]) == 0.0


def test_cls_is_the_largest_session_window() -> None:
    shifts = [
        LayoutShift(100.0, 0.1),
        LayoutShift(900.0, 0.1),  # < 1 s after the last: same window (0.2)
        LayoutShift(2000.0, 0.15),  # 1.1 s gap: a new window (0.15 + 0.1 = 0.25)
        LayoutShift(2500.0, 0.1),
        LayoutShift(3000.0, 0.3, had_recent_input=True),  # after input: left out
    ]
    assert cumulative_layout_shift(shifts) == pytest.approx(0.25)


def test_a_session_window_spans_at_most_five_seconds() -> None:
    # one shift every 0.9 s: a window is cut at 5 s from its first shift (6 shifts: 0..4.5 s)
    shifts = [LayoutShift(900.0 * k, 0.01) for k in range(12)]
    assert cumulative_layout_shift(shifts) == pytest.approx(0.06)


def test_shifts_are_taken_in_time_order() -> None:
    shifts = [LayoutShift(1500.0, 0.2), LayoutShift(100.0, 0.2), LayoutShift(900.0, 0.2)]
    assert cumulative_layout_shift(shifts) == pytest.approx(0.6)


def test_tbt_counts_the_part_beyond_50_ms_after_fcp() -> None:
    tasks = [
        Task(10.0, 400.0),  # ends at 410, FCP at 300: 110 ms after FCP -> 60
        Task(500.0, 300.0),  # 250
        Task(900.0, 50.0),  # exactly 50: nothing
        Task(1000.0, 49.0),
        Task(2000.0, 120.0),  # ends after the end (2050): 50 ms inside -> nothing
    ]
    assert total_blocking_time_ms(tasks, fcp_ms=300.0, end_ms=2050.0) == pytest.approx(310.0)


def test_tbt_of_tasks_before_fcp_is_zero() -> None:
    assert total_blocking_time_ms([Task(0.0, 200.0)], fcp_ms=300.0, end_ms=1000.0) == 0.0
