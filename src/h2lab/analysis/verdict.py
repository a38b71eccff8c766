"""Per-cell statistics, paired h2/h1 ratios and verdicts over stored trials (pure).

:func:`analyze` gives
* per cell and protocol (:class:`CellStats`): n, median, p25/p75, bootstrap CI of the median;
* per cell and (h2, h1) pair (:class:`PairedRatio`): s = metric(h2) / metric(h1) per complete
  block, median s with its bootstrap CI;
* per cell and pair (:class:`Verdict`): "h2 faster" / "h1 faster" / "tie" from the CI of s
  (seed 001's thresholds, :func:`outcome_of`).

* :func:`trial_efficiencies`: lower bound / measured per trial, bounds given as input.

Randomness: one seeded :class:`numpy.random.Generator`, consumed in a fixed order (cells
sorted, then protocols sorted, then pairs in :data:`PAIRS` order), so a seed gives the same
intervals. Method: docs/statistics.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from h2lab.analysis.factors import Cell
from h2lab.analysis.stats import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    OUTLIER_SDS,
    lower_bound_efficiency,
    median_ci,
    quantile,
    split_outliers,
)
from h2lab.analysis.summary import PAIRS
from h2lab.results import TrialRecord
from h2lab.store.frame import TrialFrame, TrialsIn, as_frame

H2_FASTER_AT_MOST = 0.95
"""Seed 001 §IV.A: HTTP/2 outperforms HTTPS when s = PLT(h2) / PLT(https) ≤ 0.95."""
H1_FASTER_AT_LEAST = 1.05
"""Seed 001 §IV.A: HTTPS outperforms HTTP/2 when s ≥ 1.05."""
MIN_BLOCKS = 2
"""Fewer complete blocks give no verdict: with one block the bootstrap distribution is a single
point and its "interval" says nothing about the spread."""

Outcome = Literal["h2 faster", "h1 faster", "tie", "too few blocks"]
OutlierRule = Literal["2sd"]
"""``"2sd"``: seed 002's |x − mean| > 2 sd, per cell and protocol (:func:`split_outliers`)."""


@dataclass(frozen=True)
class CellStats:
    """One protocol in one cell: the distribution of ``metric`` over its trials."""

    cell: Cell
    protocol: str
    metric: str
    """TrialRecord field, a time in ms (e.g. ``pdt_ms``)"""
    n: int
    """trials whose value entered the statistics"""
    n_failed: int
    """trials with no successful attempt"""
    n_missing: int
    """successful trials without a value for ``metric`` (e.g. ``plt_ms`` from h2load)"""
    n_outliers_removed: int
    """removed by the outlier rule (0 when it is off)"""
    median_ms: float | None
    p25_ms: float | None
    p75_ms: float | None
    ci_low_ms: float | None
    """bootstrap CI of the median, at ``confidence``; None when n = 0"""
    ci_high_ms: float | None
    confidence: float
    resamples: int


@dataclass(frozen=True)
class PairedRatio:
    """s = metric(h2) / metric(h1) over the complete blocks of one cell."""

    cell: Cell
    h2_protocol: str
    h1_protocol: str
    metric: str
    n_blocks: int
    """complete blocks: both protocols have a value (after outlier removal)"""
    n_incomplete_blocks: int
    """blocks where only one of the two has a value (failed, missing or removed); not used"""
    ratios: tuple[float, ...]
    """s per complete block, in block order"""
    median_ratio: float | None
    ci_low_ratio: float | None
    ci_high_ratio: float | None
    confidence: float
    resamples: int

    @property
    def pair(self) -> str:
        return f"{self.h2_protocol}/{self.h1_protocol}"


@dataclass(frozen=True)
class Verdict:
    """The comparison of one h2 variant with its h1 counterpart in one cell."""

    cell: Cell
    outcome: Outcome
    ratio: PairedRatio
    h2: CellStats
    h1: CellStats
    outlier_rule: OutlierRule | None
    """the rule that was applied, or None (off)"""

    @property
    def n_blocks(self) -> int:
        return self.ratio.n_blocks

    @property
    def n_failed(self) -> int:
        return self.h2.n_failed + self.h1.n_failed

    @property
    def n_outliers_removed(self) -> int:
        return self.h2.n_outliers_removed + self.h1.n_outliers_removed


def outcome_of(ci_low_ratio: float, ci_high_ratio: float, n_blocks: int = MIN_BLOCKS) -> Outcome:
    """Seed 001's thresholds applied to the whole CI of s: "h2 faster" if it lies at or below
    0.95, "h1 faster" if at or above 1.05, else "tie" (including a CI straddling a threshold)."""
    if n_blocks < MIN_BLOCKS:
        return "too few blocks"
    if ci_high_ratio <= H2_FASTER_AT_MOST:
        return "h2 faster"
    if ci_low_ratio >= H1_FASTER_AT_LEAST:
        return "h1 faster"
    return "tie"


def outcome_text(outcome: Outcome, newer: str, older: str) -> str:
    """An outcome in the words of its pair: "h2 faster" of ``h3/h2s`` is "h3 faster" (the
    seeds' h2/h1 pairs keep their words)."""
    if newer.startswith("h2"):
        return outcome
    words = {"h2 faster": f"{newer} faster", "h1 faster": f"{older} faster"}
    return words.get(outcome, outcome)


@dataclass(frozen=True)
class CellValues:
    """The usable values of one protocol in one cell, by block, plus the counts of the rest."""

    by_block: dict[str, float]
    n_failed: int
    n_missing: int
    n_outliers_removed: int


def _check_metric(metric: str, frame: TrialFrame | None = None) -> None:
    if frame is not None and metric.startswith("step:") and metric in frame.numbers:
        return  # a journey step's time, added to the frame (h2lab.analysis.steps)
    if not metric.endswith("_ms") or metric not in TrialRecord.__dataclass_fields__:
        raise ValueError(f"metric must be a TrialRecord time field (…_ms), got {metric!r}")


def latest_ok(trials: Iterable[TrialRecord]) -> list[TrialRecord]:
    """One record per trial: its latest successful attempt (trials that never succeeded are
    left out; the verdict table counts them as failures)."""
    best: dict[str, TrialRecord] = {}
    for t in trials:
        if t.status != "ok":
            continue
        have = best.get(t.trial_key)
        if have is None or t.attempt > have.attempt:
            best[t.trial_key] = t
    return sorted(best.values(), key=lambda t: (t.id or 0, t.trial_key))


def collect_values(
    trials: TrialsIn, metric: str, outlier_rule: OutlierRule | None
) -> dict[Cell, dict[str, CellValues]]:
    """Cell -> protocol -> values. A trial retried after failures counts once: its successful
    attempt if any (the latest), else as one failure. Values keep the order of their trials'
    first attempts (the bootstrap draws by position); a block seen twice in one cell and
    protocol keeps its first place and its last value."""
    f = as_frame(trials)
    _check_metric(metric, f)
    rows = f.chosen(ok_only=False)
    ok = f.ok[rows]
    values = f.number(metric)[rows]
    has = ok & ~np.isnan(values)
    cells, protocols = f.cell[rows], f.text("protocol").codes[rows]
    names = f.text("protocol").values
    block = f.text("block")
    out: dict[Cell, dict[str, CellValues]] = defaultdict(dict)
    group = cells * len(names) + protocols
    order = np.argsort(group, kind="stable")  # rows of one group stay in first-attempt order
    bounds = np.flatnonzero(np.r_[True, group[order][1:] != group[order][:-1], True])
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        idx = order[a:b]
        first = int(idx[0])
        kept = idx[has[idx]]
        by_block = dict(
            zip(
                [block.values[c] or "" for c in block.codes[rows[kept]].tolist()],
                values[kept].tolist(),
                strict=True,
            )
        )
        n_failed = int(np.count_nonzero(~ok[idx]))
        n_missing = len(idx) - n_failed - len(kept)
        n_values = len(by_block)
        if outlier_rule == "2sd":
            # the rule depends on the value only, so equal values share one fate
            removed = set(split_outliers(list(by_block.values()), OUTLIER_SDS).removed)
            by_block = {k: v for k, v in by_block.items() if v not in removed}
        cell, protocol = f.cells[int(cells[first])], str(names[int(protocols[first])])
        out[cell][protocol] = CellValues(by_block, n_failed, n_missing, n_values - len(by_block))
    return out


def _stats(
    cell: Cell,
    protocol: str,
    metric: str,
    v: CellValues,
    rng: np.random.Generator,
    resamples: int,
    confidence: float,
) -> CellStats:
    xs = list(v.by_block.values())
    median = p25 = p75 = low = high = None
    if xs:
        ci = median_ci(xs, rng, resamples=resamples, confidence=confidence)
        median, p25, p75 = quantile(xs, 0.5), quantile(xs, 0.25), quantile(xs, 0.75)
        low, high = ci.low, ci.high
    return CellStats(
        cell=cell,
        protocol=protocol,
        metric=metric,
        n=len(xs),
        n_failed=v.n_failed,
        n_missing=v.n_missing,
        n_outliers_removed=v.n_outliers_removed,
        median_ms=median,
        p25_ms=p25,
        p75_ms=p75,
        ci_low_ms=low,
        ci_high_ms=high,
        confidence=confidence,
        resamples=resamples,
    )


def _ratio(
    cell: Cell,
    h2: str,
    h1: str,
    metric: str,
    a: CellValues,
    b: CellValues,
    rng: np.random.Generator,
    resamples: int,
    confidence: float,
) -> PairedRatio:
    complete = sorted(set(a.by_block) & set(b.by_block))
    either = set(a.by_block) | set(b.by_block)
    ratios = tuple(a.by_block[k] / b.by_block[k] for k in complete if b.by_block[k] > 0)
    n_incomplete = len(either) - len(ratios)
    median = low = high = None
    if ratios:
        ci = median_ci(ratios, rng, resamples=resamples, confidence=confidence)
        median, low, high = quantile(ratios, 0.5), ci.low, ci.high
    return PairedRatio(
        cell=cell,
        h2_protocol=h2,
        h1_protocol=h1,
        metric=metric,
        n_blocks=len(ratios),
        n_incomplete_blocks=n_incomplete,
        ratios=ratios,
        median_ratio=median,
        ci_low_ratio=low,
        ci_high_ratio=high,
        confidence=confidence,
        resamples=resamples,
    )


@dataclass(frozen=True)
class Analysis:
    """Everything :func:`analyze` computes, each list sorted by cell."""

    cell_stats: tuple[CellStats, ...]
    verdicts: tuple[Verdict, ...]
    metric: str
    outlier_rule: OutlierRule | None


def analyze(
    trials: TrialsIn,
    rng: np.random.Generator,
    *,
    metric: str = "pdt_ms",
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    outlier_rule: OutlierRule | None = None,
    pairs: Sequence[tuple[str, str]] = PAIRS,
) -> Analysis:
    """Per-cell statistics of every protocol and a verdict for every (h2, h1) pair of
    ``pairs`` present in a cell (both protocols have trials there)."""
    data = collect_values(trials, metric, outlier_rule)
    stats: list[CellStats] = []
    out: list[Verdict] = []
    for cell in sorted(data):
        protocols = data[cell]
        by_protocol = {
            p: _stats(cell, p, metric, protocols[p], rng, resamples, confidence)
            for p in sorted(protocols)
        }
        stats.extend(by_protocol.values())
        for h2, h1 in pairs:
            if h2 not in protocols or h1 not in protocols:
                continue
            r = _ratio(
                cell, h2, h1, metric, protocols[h2], protocols[h1], rng, resamples, confidence
            )
            outcome: Outcome = "too few blocks"
            if r.ci_low_ratio is not None and r.ci_high_ratio is not None:
                outcome = outcome_of(r.ci_low_ratio, r.ci_high_ratio, r.n_blocks)
            out.append(Verdict(cell, outcome, r, by_protocol[h2], by_protocol[h1], outlier_rule))
    return Analysis(tuple(stats), tuple(out), metric, outlier_rule)


@dataclass(frozen=True)
class TrialEfficiency:
    trial_key: str
    protocol: str
    bound_ms: float
    measured_ms: float
    efficiency: float
    """bound_ms / measured_ms (1 = as fast as physically possible)"""


def trial_efficiencies(
    trials: Iterable[TrialRecord], bounds_ms: Mapping[str, float], *, metric: str = "pdt_ms"
) -> tuple[TrialEfficiency, ...]:
    """Lower-bound efficiency of every successful trial that has a value and a bound.

    ``bounds_ms`` maps trial keys to the trial's lower bound in ms, computed by the caller (e.g.
    from :func:`h2lab.analysis.lower_bound.fetch_lower_bound_ms` with the trial's page and
    network), so that this stays a function of data only.
    """
    _check_metric(metric)
    out = []
    for t in trials:
        value = getattr(t, metric)
        if t.status != "ok" or value is None or t.trial_key not in bounds_ms:
            continue
        bound = bounds_ms[t.trial_key]
        out.append(
            TrialEfficiency(
                t.trial_key, t.protocol, bound, float(value), lower_bound_efficiency(bound, value)
            )
        )
    return tuple(out)
