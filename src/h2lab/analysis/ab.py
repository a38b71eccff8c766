"""A/B of two runs (pure): the same cells measured in two results folders that differ in what
the user changed between them (yesterday's server configuration against today's).

**Matching.** A factor whose levels in run A and run B have none in common (server
``origin:scheduler=fcfs`` in A, ``origin:scheduler=client`` in B) is what the runs compare: it
is set aside and cells are matched on the other factors (:func:`factor_differences`,
:func:`match_cells`). The page is never set aside: two different pages are not an A/B. A factor
whose levels overlap (A ran cable and 3g, B only 3g) is matched on, and the cells of one run
without a partner are listed.

**Pairing.** In each matched pair of cells, for each protocol both ran, the trial of repetition
r in A is paired with the trial of repetition r in B (the trials that count are those of
:func:`collect_values`, each run with its own outlier rule). Per pair of cells and protocol
(:class:`PairedCell`): the number of pairs, the medians of A and of B over them, s = B/A per
pair with its median and percentile bootstrap CI, the two-sided Wilcoxon signed-rank p of the
paired values (:func:`wilcoxon_p`), and an outcome from the whole CI with the verdicts'
thresholds (:func:`outcome_of`): ``B faster`` when it lies at or below 0.95, ``A faster`` at or
above 1.05, else ``tie``; fewer than 2 pairs: ``too few pairs``.

Unlike the protocols of one block, A's and B's trials did not run back to back: a pair shares
its repetition number (the same round of its run), not the time, and not the loss seed when a
factor level differs (the seed derives from the block). Method: docs/statistics.md.

Randomness: one seeded :class:`numpy.random.Generator`, consumed in cell-pair order, then
protocol order, so a seed gives the same intervals.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np

from h2lab.analysis.compare import repetition_of
from h2lab.analysis.factors import Cell
from h2lab.analysis.stats import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    median_ci,
    quantile,
    wilcoxon_p,
)
from h2lab.analysis.verdict import CellValues, Outcome, OutlierRule, collect_values, outcome_of
from h2lab.spec.factors import FACTORS
from h2lab.store.frame import TrialsIn, as_frame

AbOutcome = Literal["B faster", "A faster", "tie", "too few pairs"]
NEVER_SET_ASIDE = ("page",)
"""Factors cells are always matched on, even when the runs have no level in common."""

_OUTCOMES: dict[Outcome, AbOutcome] = {
    "h2 faster": "B faster",
    "h1 faster": "A faster",
    "tie": "tie",
    "too few blocks": "too few pairs",
}


def ab_outcome(ci_low_ratio: float, ci_high_ratio: float, n_pairs: int) -> AbOutcome:
    """The verdicts' rule (:func:`outcome_of`) on s = B/A, with B in h2's place."""
    return _OUTCOMES[outcome_of(ci_low_ratio, ci_high_ratio, n_pairs)]


@dataclass(frozen=True)
class FactorDifference:
    """A factor whose levels are not the same in the two runs."""

    factor: str
    levels_a: tuple[str, ...]
    """its levels in run A (as the report shows them), sorted"""
    levels_b: tuple[str, ...]
    set_aside: bool
    """True: no level in common, so cells are matched without it (what the runs compare)"""


@dataclass(frozen=True)
class ConfigDifference:
    """A setting of the runs (not a factor) that is not the same in both: the experiment's
    seed, a tool's version, the machine, ..."""

    name: str
    a: str
    b: str


@dataclass(frozen=True)
class PairedCell:
    """One cell of A against its partner in B, for one protocol."""

    cell_a: Cell
    cell_b: Cell
    """equal to ``cell_a`` but in the factors set aside"""
    protocol: str
    metric: str
    """the TrialRecord time field compared (e.g. ``plt_ms``)"""
    n_pairs: int
    """repetitions where both runs have a value (and A's is above 0)"""
    n_a: int
    """values in A for this cell and protocol (paired or not)"""
    n_b: int
    median_a_ms: float | None
    """median over the paired repetitions"""
    median_b_ms: float | None
    ratios: tuple[float, ...]
    """s = B/A per pair, in repetition order"""
    median_ratio: float | None
    ci_low_ratio: float | None
    ci_high_ratio: float | None
    p_value: float | None
    """two-sided Wilcoxon signed-rank p of the paired values; None without pairs"""
    outcome: AbOutcome


@dataclass(frozen=True)
class RunComparison:
    """Everything :func:`compare_runs` computes."""

    differences: tuple[FactorDifference, ...]
    matched: tuple[tuple[Cell, Cell], ...]
    """(cell of A, cell of B) pairs that agree in every factor not set aside"""
    cells: tuple[PairedCell, ...]
    """one per matched pair of cells and protocol both ran, in that order"""
    unmatched_a: tuple[Cell, ...]
    """cells of A with no partner in B"""
    unmatched_b: tuple[Cell, ...]
    confidence: float
    resamples: int

    @property
    def set_aside(self) -> tuple[str, ...]:
        return tuple(d.factor for d in self.differences if d.set_aside)


def factor_differences(
    cells_a: Iterable[Cell], cells_b: Iterable[Cell]
) -> tuple[FactorDifference, ...]:
    """Every factor whose levels differ between the runs, in factor order; set aside when the
    two have no level in common (never the page, :data:`NEVER_SET_ASIDE`)."""
    ca, cb = list(cells_a), list(cells_b)
    out = []
    for f in FACTORS:
        la, lb = {c.text(f.name) for c in ca}, {c.text(f.name) for c in cb}
        if la != lb:
            aside = bool(la) and bool(lb) and not la & lb and f.name not in NEVER_SET_ASIDE
            out.append(FactorDifference(f.name, tuple(sorted(la)), tuple(sorted(lb)), aside))
    return tuple(out)


def _key(cell: Cell, aside: frozenset[str]) -> tuple[object, ...]:
    return tuple(cell[f.name] for f in FACTORS if f.name not in aside)


def match_cells(
    cells_a: Iterable[Cell], cells_b: Iterable[Cell], aside: Iterable[str]
) -> list[tuple[Cell, Cell]]:
    """(A cell, B cell) for every two cells equal in the factors not in ``aside``, sorted."""
    skip = frozenset(aside)
    by_key: dict[tuple[object, ...], list[Cell]] = defaultdict(list)
    for c in sorted(set(cells_b)):
        by_key[_key(c, skip)].append(c)
    return [(a, b) for a in sorted(set(cells_a)) for b in by_key.get(_key(a, skip), [])]


def pair_values(a: Mapping[str, float], b: Mapping[str, float]) -> tuple[list[float], list[float]]:
    """The values of A and B (by block) of the repetitions both have, in repetition order; a
    repetition where A's value is 0 (no ratio) is left out."""
    ra = {repetition_of(k): v for k, v in a.items()}
    rb = {repetition_of(k): v for k, v in b.items()}
    reps = sorted(set(ra) & set(rb), key=lambda r: (len(r), r))  # r2 before r10
    reps = [r for r in reps if ra[r] > 0]
    return [ra[r] for r in reps], [rb[r] for r in reps]


def _paired(
    cells: tuple[Cell, Cell],
    protocol: str,
    metric: str,
    values: tuple[CellValues, CellValues],
    rng: np.random.Generator,
    resamples: int,
    confidence: float,
) -> PairedCell:
    xs, ys = pair_values(values[0].by_block, values[1].by_block)
    ratios = tuple(y / x for x, y in zip(xs, ys, strict=True))
    median = low = high = a_ms = b_ms = None
    outcome: AbOutcome = "too few pairs"
    if ratios:
        ci = median_ci(ratios, rng, resamples=resamples, confidence=confidence)
        median, low, high = quantile(ratios, 0.5), ci.low, ci.high
        a_ms, b_ms = quantile(xs, 0.5), quantile(ys, 0.5)
        outcome = ab_outcome(low, high, len(ratios))
    return PairedCell(
        cell_a=cells[0],
        cell_b=cells[1],
        protocol=protocol,
        metric=metric,
        n_pairs=len(ratios),
        n_a=len(values[0].by_block),
        n_b=len(values[1].by_block),
        median_a_ms=a_ms,
        median_b_ms=b_ms,
        ratios=ratios,
        median_ratio=median,
        ci_low_ratio=low,
        ci_high_ratio=high,
        p_value=wilcoxon_p(xs, ys),
        outcome=outcome,
    )


MetricOf = Callable[[Cell, Cell], str]
"""The metric to compare a cell of A and its partner in B on."""


def _always(name: str) -> MetricOf:
    return lambda _a, _b: name


def compare_runs(
    trials_a: TrialsIn,
    trials_b: TrialsIn,
    rng: np.random.Generator,
    metric: str | MetricOf,
    *,
    outlier_rules: tuple[OutlierRule | None, OutlierRule | None] = (None, None),
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
) -> RunComparison:
    """Match the cells of run A and run B, pair their trials by repetition and protocol, and
    compare each pair of cells on ``metric`` (one name, or a function of the two cells): a
    stored metric, or a column the frames were given (a journey step's,
    :func:`h2lab.analysis.steps.with_steps`)."""
    metric_of = metric if callable(metric) else _always(metric)
    frames = (as_frame(trials_a), as_frame(trials_b))
    cells_a, cells_b = set(frames[0].cells), set(frames[1].cells)
    diffs = factor_differences(cells_a, cells_b)
    matched = match_cells(cells_a, cells_b, (d.factor for d in diffs if d.set_aside))
    data: dict[tuple[int, str], dict[Cell, dict[str, CellValues]]] = {}

    def values(side: int, name: str) -> dict[Cell, dict[str, CellValues]]:
        if (side, name) not in data:
            data[(side, name)] = collect_values(frames[side], name, outlier_rules[side])
        return data[(side, name)]

    out = []
    for ca, cb in matched:
        name = metric_of(ca, cb)
        va, vb = values(0, name).get(ca, {}), values(1, name).get(cb, {})
        for protocol in sorted(set(va) & set(vb)):
            pair = (va[protocol], vb[protocol])
            out.append(_paired((ca, cb), protocol, name, pair, rng, resamples, confidence))
    return RunComparison(
        differences=diffs,
        matched=tuple(matched),
        cells=tuple(out),
        unmatched_a=tuple(sorted(cells_a - {a for a, _ in matched})),
        unmatched_b=tuple(sorted(cells_b - {b for _, b in matched})),
        confidence=confidence,
        resamples=resamples,
    )


NOT_RECORDED = "not recorded"


def config_differences(a: Mapping[str, str], b: Mapping[str, str]) -> tuple[ConfigDifference, ...]:
    """The settings (name -> value as text) whose values differ, A's order first; a setting
    only one run recorded is :data:`NOT_RECORDED` in the other."""
    names = [*a, *(k for k in b if k not in a)]
    return tuple(
        ConfigDifference(k, a.get(k, NOT_RECORDED), b.get(k, NOT_RECORDED))
        for k in names
        if a.get(k, NOT_RECORDED) != b.get(k, NOT_RECORDED)
    )
