"""Timing assertions that hold their error rate, and what they measured, for the rerun ledger.

A bound on the median of 3 trials is a coin toss when the true value sits near the bound (an
OkHttp page time 12.07 % and 12.67 % above h2load's against a bound of 12 %, in two fresh-clone
runs): it fails in some runs whatever the code does. A test that checks a timing property here
takes enough paired trials and asserts on a confidence interval of the paired statistic,
with a bound placed where the property is decided, far from the measured value: the interval
leaves it only when the property does not hold, or in about 1 run in 40 (a two-sided 95 %
interval, one side asserted) when it sits right at the bound.

Each assertion records what it measured and its bound as the test's JUnit properties
(``measured``, ``bound``), so that tests/suite.py can write them to the rerun ledger
(tests/reruns.tsv) when a test runs again.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from scipy import stats  # type: ignore[import-untyped]  # ships no types

CONFIDENCE = 0.95

RecordProperty = Callable[[str, object], None]
"""pytest's ``record_property`` fixture."""


@dataclass(frozen=True)
class Interval:
    """A mean and its confidence interval, from n paired values."""

    mean: float
    low: float
    high: float
    n: int

    def __str__(self) -> str:
        return f"{self.mean:.4g} [{self.low:.4g}, {self.high:.4g}] (n={self.n})"


def mean_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """Student's t interval of the mean of ``values`` (at least 2)."""
    n = len(values)
    if n < 2:
        raise ValueError(f"a confidence interval needs at least 2 values, got {n}")
    mean = statistics.fmean(values)
    half = stats.t.ppf((1 + confidence) / 2, n - 1) * statistics.stdev(values) / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n)


def paired_difference(a: Sequence[float], b: Sequence[float]) -> Interval:
    """The mean of ``a[i] - b[i]`` with its interval (trials paired by repetition)."""
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} and {len(b)}")
    return mean_interval([x - y for x, y in zip(a, b, strict=True)])


def paired_ratio(a: Sequence[float], b: Sequence[float]) -> Interval:
    """The geometric mean of ``a[i] / b[i]`` with its interval: a t interval of the log
    ratios, taken back (page times are skewed: their ratios are closer to log-normal)."""
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} and {len(b)}")
    logs = mean_interval([math.log(x / y) for x, y in zip(a, b, strict=True)])
    return Interval(math.exp(logs.mean), math.exp(logs.low), math.exp(logs.high), logs.n)


def ratio_of_groups(a: Sequence[float], b: Sequence[float]) -> Interval:
    """The ratio of the geometric means of two independent groups, with Welch's t interval
    of the difference of their mean logs (runs that are not paired: each group's own spread,
    Welch-Satterthwaite's degrees of freedom)."""
    la, lb = [math.log(x) for x in a], [math.log(x) for x in b]
    if len(la) < 2 or len(lb) < 2:
        raise ValueError(f"each group needs at least 2 values, got {len(la)} and {len(lb)}")
    va, vb = statistics.variance(la) / len(la), statistics.variance(lb) / len(lb)
    diff = statistics.fmean(la) - statistics.fmean(lb)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(la) - 1) + vb**2 / (len(lb) - 1)) if se else 1.0
    half = stats.t.ppf((1 + CONFIDENCE) / 2, df) * se
    return Interval(math.exp(diff), math.exp(diff - half), math.exp(diff + half), len(la) + len(lb))


def assert_within(
    record_property: RecordProperty,
    what: str,
    interval: Interval,
    low: float | None = None,
    high: float | None = None,
) -> None:
    """Assert that ``interval`` lies inside ``(low, high)`` (either may be open), after
    recording it and the bound for the ledger."""
    bound = f"({'-inf' if low is None else format(low, '.4g')}, "
    bound += f"{'inf' if high is None else format(high, '.4g')})"
    record_property("measured", f"{what}: {interval}")
    record_property("bound", bound)
    print(f"{what}: {interval}, bound {bound}")
    assert low is None or interval.low > low, f"{what}: {interval} not above {low:.4g}"
    assert high is None or interval.high < high, f"{what}: {interval} not below {high:.4g}"
