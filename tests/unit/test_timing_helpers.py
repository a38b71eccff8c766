"""tests/timing.py: the intervals the timing tests assert on, against values worked by hand."""

from __future__ import annotations

import math

import pytest

from tests.timing import (
    assert_within,
    mean_interval,
    paired_difference,
    paired_ratio,
    ratio_of_groups,
)


def test_the_mean_interval_is_students_t() -> None:
    # mean 2, sd 1, n 3: t(0.975, 2) = 4.3027 -> half width 4.3027 / sqrt(3) = 2.4841
    got = mean_interval([1.0, 2.0, 3.0])
    assert (got.mean, got.n) == (2.0, 3)
    assert got.low == pytest.approx(2 - 2.4841, abs=1e-3)
    assert got.high == pytest.approx(2 + 2.4841, abs=1e-3)
    with pytest.raises(ValueError, match="at least 2"):
        mean_interval([1.0])


def test_paired_statistics_pair_by_position() -> None:
    diff = paired_difference([101.0, 102.0, 103.0], [1.0, 2.0, 3.0])
    assert diff.low == diff.mean == diff.high == 100.0  # no spread, no width
    ratio = paired_ratio([2.0, 4.0, 8.0], [1.0, 2.0, 4.0])
    assert ratio.mean == pytest.approx(2.0) and ratio.high == pytest.approx(2.0)
    with pytest.raises(ValueError, match="differ in length"):
        paired_ratio([1.0], [1.0, 2.0])


def test_groups_take_welchs_interval_on_the_logs() -> None:
    a, b = [1.0, math.e, math.e**2], [math.e, math.e**2, math.e**3]
    # mean logs 1 and 2, each variance 1/3: se sqrt(2/3), df 4, t(0.975, 4) = 2.7764
    got = ratio_of_groups(a, b)
    assert got.mean == pytest.approx(math.exp(-1))
    assert got.high == pytest.approx(math.exp(-1 + 2.7764 * math.sqrt(2 / 3)), rel=1e-3)


def test_assert_within_records_what_it_measured() -> None:
    recorded: dict[str, object] = {}
    interval = mean_interval([1.0, 2.0, 3.0])
    assert_within(lambda k, v: recorded.__setitem__(k, v), "x", interval, -1.0, 5.0)
    assert recorded == {"measured": f"x: {interval}", "bound": "(-1, 5)"}
    with pytest.raises(AssertionError, match="not below 4"):
        assert_within(lambda k, v: None, "x", interval, high=4.0)
    with pytest.raises(AssertionError, match="not above 0"):
        assert_within(lambda k, v: None, "x", interval, low=0.0)
