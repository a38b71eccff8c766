"""h2lab.analysis.stats: quantiles, bootstrap CI of the median, the Wilcoxon signed-rank test,
seed 002's outlier rule, lower-bound efficiency."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from h2lab.analysis.lower_bound import fetch_lower_bound_ms, handshake_rtts
from h2lab.analysis.stats import (
    DEFAULT_RESAMPLES,
    Interval,
    bootstrap_median_ci,
    lower_bound_efficiency,
    quantile,
    split_outliers,
    wilcoxon_p,
)


def test_quantiles_interpolate_linearly() -> None:
    xs = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert quantile(xs, 0.25) == 2.0
    assert quantile(xs, 0.5) == 3.0
    assert quantile(xs, 0.75) == 4.0
    assert quantile([1.0, 2.0], 0.5) == 1.5
    with pytest.raises(ValueError, match="no values"):
        quantile([], 0.5)
    with pytest.raises(ValueError, match="q must be"):
        quantile([1.0], 1.5)


def test_bootstrap_ci_covers_the_true_median_at_the_nominal_rate() -> None:
    # lognormal(mu=0, sigma=1): true median e^0 = 1. 400 samples of n = 30, each with its own
    # 95 % percentile-bootstrap CI (B = 2000). The number that cover 1 is Binomial(400, p);
    # if p = 0.95 it lies within 3 sd (3 × √(0.95 × 0.05 / 400) = 0.033) of 0.95 with
    # probability 0.997. About 0.7 s (one vectorised draw of B × n indices per CI).
    rng = np.random.default_rng(20260107)
    reps, n = 400, 30
    covered = 0
    for _ in range(reps):
        sample = rng.lognormal(mean=0.0, sigma=1.0, size=n)
        ci = bootstrap_median_ci(list(sample), rng, resamples=DEFAULT_RESAMPLES)
        covered += ci.low <= 1.0 <= ci.high
    tolerance = 3 * math.sqrt(0.95 * 0.05 / reps)
    assert abs(covered / reps - 0.95) <= tolerance, covered / reps


def test_bootstrap_ci_width_shrinks_with_n_and_grows_with_confidence() -> None:
    rng = np.random.default_rng(1)
    small = list(rng.lognormal(0, 1, 20))
    large = list(rng.lognormal(0, 1, 500))
    w_small = _width(bootstrap_median_ci(small, np.random.default_rng(2)))
    w_large = _width(bootstrap_median_ci(large, np.random.default_rng(2)))
    assert w_large < w_small / 2  # width ~ 1/√n: √(500/20) = 5
    w90 = _width(bootstrap_median_ci(small, np.random.default_rng(2), confidence=0.90))
    w99 = _width(bootstrap_median_ci(small, np.random.default_rng(2), confidence=0.99))
    assert w90 < w99


def _width(ci: Interval) -> float:
    return ci.high - ci.low


def test_bootstrap_is_reproducible_from_the_seed() -> None:
    xs = list(np.random.default_rng(0).lognormal(0, 1, 20))  # even n: many distinct medians
    a = bootstrap_median_ci(xs, np.random.default_rng(7), resamples=500)
    b = bootstrap_median_ci(xs, np.random.default_rng(7), resamples=500)
    c = bootstrap_median_ci(xs, np.random.default_rng(8), resamples=500)
    assert a == b
    assert a != c
    # every bootstrap median is a median of values of the sample
    assert min(xs) <= a.low <= quantile(xs, 0.5) <= a.high <= max(xs)


def test_bootstrap_edge_cases() -> None:
    rng = np.random.default_rng(0)
    assert bootstrap_median_ci([42.0], rng) == Interval(42.0, 42.0)
    assert bootstrap_median_ci([3.0] * 10, rng) == Interval(3.0, 3.0)
    with pytest.raises(ValueError, match="no values"):
        bootstrap_median_ci([], rng)
    with pytest.raises(ValueError, match="resamples"):
        bootstrap_median_ci([1.0], rng, resamples=0)
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_median_ci([1.0], rng, confidence=1.0)
    with pytest.raises(ValueError, match="non-finite"):
        bootstrap_median_ci([1.0, math.nan], rng)


def test_outlier_rule_removes_exactly_the_planted_outliers() -> None:
    # 30 evenly spaced values in [995, 1005] (a uniform spread: none is 2 sd from the mean,
    # |z| <= √3) plus two planted values far out on either side
    clean = [995 + 10 * i / 29 for i in range(30)]
    values = [*clean[:10], 1400.0, *clean[10:], 600.0]
    split = split_outliers(values)
    assert split.removed == (1400.0, 600.0)
    assert split.n_removed == 2
    assert split.kept == tuple(clean)


def test_one_far_outlier_can_mask_another() -> None:
    # seed 002's rule is one pass with the outliers inside mean and sd: 400 inflates the sd
    # so much that 1 (105 below the mean of 106) stays within 2 sd (113). Documented, kept.
    clean = [95 + 10 * i / 29 for i in range(30)]
    assert split_outliers([*clean, 400.0, 1.0]).removed == (400.0,)


def test_outlier_rule_threshold_is_two_sample_sds() -> None:
    # 9 zeros and one x: mean x/10, sample sd x·√(1/10) = x·0.316; the deviation of x is 0.9x,
    # i.e. 2.85 sd: removed. With sds = 3 it stays.
    values = [0.0] * 9 + [10.0]
    assert split_outliers(values).removed == (10.0,)
    assert split_outliers(values, sds=3.0).removed == ()


def test_outlier_rule_cannot_fire_on_small_or_flat_samples() -> None:
    assert split_outliers([1.0, 1000.0]).n_removed == 0  # fewer than 3 values
    # 5 values: the largest possible |z| is (n − 1)/√n = 1.79 < 2
    assert split_outliers([1.0, 1.0, 1.0, 1.0, 1e9]).n_removed == 0
    assert split_outliers([5.0] * 8).n_removed == 0
    with pytest.raises(ValueError, match="sds"):
        split_outliers([1.0, 2.0, 3.0], sds=0)


def test_lower_bound_efficiency_is_bound_over_measured() -> None:
    assert lower_bound_efficiency(50.0, 100.0) == 0.5
    assert lower_bound_efficiency(100.0, 100.0) == 1.0
    assert lower_bound_efficiency(120.0, 100.0) == 1.2  # beat the bound: reported, not clipped
    # with the bound of analysis/lower_bound.py as the input: 100 KB over 10 Mbit/s at 100 ms
    bound = fetch_lower_bound_ms(100_000, 100.0, 10_000_000, handshake_rtts=handshake_rtts("h2s"))
    assert lower_bound_efficiency(bound, 2 * bound) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="measured_ms"):
        lower_bound_efficiency(10.0, 0.0)
    with pytest.raises(ValueError, match="bound_ms"):
        lower_bound_efficiency(-1.0, 10.0)


# ------------------------------------------------------------- Wilcoxon signed-rank test


def _midranks(values: list[float]) -> list[float]:
    order = sorted(values)
    return [
        (order.index(v) + 1 + len(order) - order[::-1].index(v)) / 2 for v in values
    ]  # first and last position of v, averaged


def _enumerated_p(a: list[float], b: list[float]) -> float:
    """Two-sided p by listing all 2^n sign patterns of the nonzero differences' midranks:
    the share whose |W+ − n(n+1)/4| is at least the observed one (independent of scipy)."""
    d = [y - x for x, y in zip(a, b, strict=True) if y != x]
    ranks = _midranks([abs(v) for v in d])
    centre = sum(ranks) / 2
    observed = abs(sum(r for r, v in zip(ranks, d, strict=True) if v > 0) - centre)
    hits = total = 0
    for signs in itertools.product((0, 1), repeat=len(d)):
        total += 1
        w = sum(r for r, s in zip(ranks, signs, strict=True) if s)
        hits += abs(w - centre) >= observed - 1e-9
    return hits / total


def test_wilcoxon_p_of_a_textbook_example() -> None:
    # Hollander & Wolfe, Nonparametric Statistical Methods (1973), Table 3.1: Hamilton
    # depression scale before (x) and after (y) tranquilizer, 9 patients; T+ = 40 of 45,
    # exact two-sided p = 2 · 0.0195 = 0.039
    x = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30]
    y = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29]
    assert wilcoxon_p(x, y) == pytest.approx(0.0390625)  # 20/512
    assert wilcoxon_p(y, x) == pytest.approx(0.0390625)  # two-sided: symmetric


def test_wilcoxon_p_smallest_values_are_two_over_two_to_the_n() -> None:
    for n, p in ((3, 0.25), (4, 0.125), (5, 0.0625), (6, 0.03125)):
        a = [100.0 * (i + 1) for i in range(n)]
        b = [v * 0.8 for v in a]  # every pair faster in B, distinct magnitudes
        assert wilcoxon_p(a, b) == pytest.approx(p)


def test_wilcoxon_p_with_ties_and_zeros_is_the_exact_enumeration() -> None:
    a = [10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0]
    b = [11.0, 12.0, 11.0, 12.0, 9.0, 11.0, 10.0, 13.0, 8.0, 11.0]  # tied |d|, one zero
    assert wilcoxon_p(a, b) == pytest.approx(_enumerated_p(a, b))
    assert wilcoxon_p(a, b) == pytest.approx(90 / 512)
    # a zero difference is dropped (Wilcoxon's rule): the same p as without that pair
    assert wilcoxon_p([*a, 5.0], [*b, 5.0]) == pytest.approx(wilcoxon_p(a, b))


def test_wilcoxon_p_beyond_50_pairs_is_the_normal_approximation() -> None:
    n = 60
    a = [100.0] * n
    b = [100.0 + (i + 1) * (1 if i % 3 else -1) for i in range(n)]  # |d| = 1..60, no ties
    w_plus = sum(i + 1 for i in range(n) if i % 3)
    mean, sd = n * (n + 1) / 4, math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    z = (abs(w_plus - mean) - 0.5) / sd  # continuity correction
    assert wilcoxon_p(a, b) == pytest.approx(math.erfc(z / math.sqrt(2)), rel=1e-9)


def test_wilcoxon_p_edge_cases() -> None:
    assert wilcoxon_p([], []) is None
    assert wilcoxon_p([5.0, 6.0], [5.0, 6.0]) == 1.0  # every difference zero
    assert wilcoxon_p([1.0], [2.0]) == 1.0
    with pytest.raises(ValueError, match="unequal length"):
        wilcoxon_p([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="non-finite"):
        wilcoxon_p([1.0], [math.nan])


def test_bootstrap_medians_from_ranks_are_those_of_sorted_values() -> None:
    """The CI is what sorting every resample's values gave before issue #43, ties and an even
    or odd count alike."""
    for n, seed in ((1, 0), (2, 1), (7, 2), (40, 3), (301, 4)):
        values = np.round(np.random.default_rng(seed).lognormal(size=n), 1)  # ties
        draws = np.random.default_rng(seed + 100).integers(0, n, size=(500, n))
        resampled = np.sort(values[draws], axis=1)
        medians = (resampled[:, (n - 1) // 2] + resampled[:, n // 2]) / 2
        low, high = np.quantile(medians, [0.025, 0.975])
        ci = bootstrap_median_ci(list(values), np.random.default_rng(seed + 100), resamples=500)
        assert (ci.low, ci.high) == (float(low), float(high)), n
