"""The distribution-free CI of a median (order statistics) and where :func:`median_ci` takes
it instead of the bootstrap (issue #43: a million trials)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom  # type: ignore[import-untyped]

from h2lab.analysis.stats import (
    ORDER_STATISTIC_FROM,
    bootstrap_median_ci,
    median_ci,
    order_statistic_median_ci,
)


@pytest.mark.parametrize(("n", "rank"), [(6, 1), (10, 2), (30, 10), (500, 228), (1000, 469)])
def test_order_statistic_ranks_are_the_binomial_tables(n: int, rank: int) -> None:
    """The ends are x(l) and x(n − l + 1) with l the largest rank whose two tails together
    stay within 5 % (Conover's table: l = 10 for n = 30)."""
    iv = order_statistic_median_ci([float(v) for v in range(1, n + 1)])
    assert (iv.low, iv.high) == (rank, n - rank + 1)
    assert 1 - 2 * binom.cdf(rank - 1, n, 0.5) >= 0.95
    assert 1 - 2 * binom.cdf(rank, n, 0.5) < 0.95  # one rank further in would not cover


def test_order_statistic_ci_covers_the_true_median_at_least_nominally() -> None:
    """4,000 samples of 501 lognormal values (true median 1): covered 95.35 % here; at least
    95 % less three binomial standard deviations."""
    rng = np.random.default_rng(3)
    hits = 0
    for _ in range(4000):
        iv = order_statistic_median_ci(list(rng.lognormal(0.0, 1.0, 501)))
        hits += iv.low <= 1.0 <= iv.high
    assert hits / 4000 >= 0.95 - 3 * (0.95 * 0.05 / 4000) ** 0.5


def test_order_statistic_ci_edge_cases() -> None:
    assert order_statistic_median_ci([2.0]) == order_statistic_median_ci([2.0, 2.0])
    few = order_statistic_median_ci([5.0, 1.0, 3.0])  # too few values: the whole range
    assert (few.low, few.high) == (1.0, 5.0)
    with pytest.raises(ValueError, match="no values"):
        order_statistic_median_ci([])
    with pytest.raises(ValueError, match="non-finite"):
        order_statistic_median_ci([1.0, float("nan")])
    with pytest.raises(ValueError, match="confidence"):
        order_statistic_median_ci([1.0, 2.0], confidence=1.0)


def test_median_ci_is_the_bootstrap_below_the_threshold_and_the_order_statistics_from_it() -> None:
    rng = np.random.default_rng(7)
    small = list(rng.lognormal(0.0, 0.3, ORDER_STATISTIC_FROM - 1))
    large = list(rng.lognormal(0.0, 0.3, ORDER_STATISTIC_FROM))
    assert median_ci(small, np.random.default_rng(1)) == bootstrap_median_ci(
        small, np.random.default_rng(1)
    )
    assert median_ci(large, np.random.default_rng(1)) == order_statistic_median_ci(large)


def test_order_statistics_agree_with_the_bootstrap_at_the_threshold() -> None:
    """The reason for the threshold: from there on, the two intervals' ends differ by no more
    than two bootstraps with different seeds do (a few % of the width)."""
    rng = np.random.default_rng(11)
    values = list(rng.lognormal(0.0, 0.3, ORDER_STATISTIC_FROM))
    boot = bootstrap_median_ci(values, np.random.default_rng(1))
    exact = order_statistic_median_ci(values)
    width = boot.high - boot.low
    assert abs(exact.low - boot.low) < 0.1 * width
    assert abs(exact.high - boot.high) < 0.1 * width
