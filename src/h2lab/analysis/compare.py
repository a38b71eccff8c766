"""Paired comparison on a factor other than the protocol: push vs none, one scheduler vs
another, a buffer vs none, cubic vs bbr (pure).

For each cell whose ``factor`` is at some level other than the baselines, its nearest baseline
whose cell (the one differing only in ``factor``) exists (:func:`nearest_baselines`), and each
protocol, the ratio
s = metric(level) / metric(baseline) is taken per repetition, then its median and bootstrap CI,
and an outcome from the whole CI with seed 001's thresholds (as for h2 against h1). When the
experiment named the factor in ``[compare]`` those trials also ran back to back with the same
loss seed; otherwise they are paired by repetition number only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from h2lab.analysis.factors import Cell
from h2lab.analysis.stats import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    median_ci,
    quantile,
)
from h2lab.analysis.verdict import (
    Outcome,
    OutlierRule,
    collect_values,
    outcome_of,
)
from h2lab.spec.factors import COMPARABLE
from h2lab.store.frame import TrialsIn

CompareOutcome = Literal["level faster", "baseline faster", "tie", "too few blocks"]


@dataclass(frozen=True)
class LevelRatio:
    """One level of the compared factor against the baseline, in one cell and protocol."""

    cell: Cell
    """the level's cell (its ``factor`` field is ``level``)"""
    protocol: str
    factor: str
    level: str
    baseline: str
    metric: str
    n_pairs: int
    """repetitions where both the level and the baseline have a value"""
    level_median_ms: float | None
    baseline_median_ms: float | None
    """medians over the paired repetitions"""
    median_ratio: float | None
    ci_low_ratio: float | None
    ci_high_ratio: float | None
    outcome: CompareOutcome


def level_of(cell: Cell, factor: str) -> str:
    return str(cell[factor])


def _with_level(cell: Cell, factor: str, level: str) -> Cell:
    return cell.replace(factor, level)


def _tokens(level: str) -> set[str]:
    """The parts of a level: ``haproxy:backend=origin:delay_css=80ms,buffer=1MB`` ->
    {haproxy, backend=origin, delay_css=80ms, buffer=1MB}."""
    return {t for t in re.split(r"[,;:+|]", level) if t}


def nearest_baselines(level: str, candidates: Sequence[str]) -> list[str]:
    """The candidates most like ``level`` (Jaccard similarity of their parts; ties kept): with
    several baselines, each level is compared with its own. In seed 003, the level
    ``...delay_css=80ms;delay_image=200ms,buffer=1MB`` goes with the baseline
    ``...delay_css=80ms;delay_image=200ms,buffer=none``, not with
    ``...delay_css=80ms,buffer=none``."""
    if not candidates:
        return []
    ours = _tokens(level)

    def similarity(baseline: str) -> float:
        theirs = _tokens(baseline)
        return len(ours & theirs) / max(1, len(ours | theirs))

    best = max(similarity(b) for b in candidates)
    return [b for b in candidates if similarity(b) == best]


def repetition_of(block: str) -> str:
    """The block string ends in ``|r<repetition>`` (:attr:`TrialSpec.block`)."""
    return block.rsplit("|", 1)[-1]


_OUTCOMES: dict[Outcome, CompareOutcome] = {
    "h2 faster": "level faster",
    "h1 faster": "baseline faster",
    "tie": "tie",
    "too few blocks": "too few blocks",
}


def compare_outcome(low: float, high: float, n: int) -> CompareOutcome:
    """The verdicts' rule (:func:`outcome_of`), with the level in h2's place."""
    return _OUTCOMES[outcome_of(low, high, n)]


def compare_levels(
    trials: TrialsIn,
    rng: np.random.Generator,
    factor: str,
    baselines: Sequence[str],
    *,
    metric: str = "pdt_ms",
    outlier_rule: OutlierRule | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
) -> tuple[LevelRatio, ...]:
    """Every (cell at a non-baseline level, nearest baseline, protocol) where the baseline's
    cell has the protocol too, in cell order. ``factor`` is a key of :data:`COMPARABLE`."""
    if factor not in COMPARABLE:
        raise ValueError(f"factor must be one of {', '.join(COMPARABLE)}, got {factor!r}")
    data = collect_values(trials, metric, outlier_rule)
    out: list[LevelRatio] = []
    pairs = []
    for cell in sorted(data):
        level = level_of(cell, factor)
        if level in baselines:
            continue
        present = [b for b in baselines if _with_level(cell, factor, b) in data]
        pairs += [(cell, b) for b in nearest_baselines(level, present)]
    for cell, baseline in pairs:
        level = level_of(cell, factor)
        base_cell = _with_level(cell, factor, baseline)
        for protocol in sorted(data[cell]):
            if protocol not in data[base_cell]:
                continue
            ours = {repetition_of(b): v for b, v in data[cell][protocol].by_block.items()}
            base = {repetition_of(b): v for b, v in data[base_cell][protocol].by_block.items()}
            reps = sorted(set(ours) & set(base))
            reps = [r for r in reps if base[r] > 0]
            ratios = [ours[r] / base[r] for r in reps]
            median = low = high = None
            level_ms = base_ms = None
            outcome: CompareOutcome = "too few blocks"
            if ratios:
                ci = median_ci(ratios, rng, resamples=resamples, confidence=confidence)
                median, low, high = quantile(ratios, 0.5), ci.low, ci.high
                level_ms = quantile([ours[r] for r in reps], 0.5)
                base_ms = quantile([base[r] for r in reps], 0.5)
                outcome = compare_outcome(low, high, len(ratios))
            out.append(
                LevelRatio(
                    cell,
                    protocol,
                    factor,
                    level,
                    baseline,
                    metric,
                    len(ratios),
                    level_ms,
                    base_ms,
                    median,
                    low,
                    high,
                    outcome,
                )
            )
    return tuple(out)
