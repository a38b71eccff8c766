"""Per-cell medians and paired h2/h1 ratios (per block, then the median over blocks)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass

from h2lab.results import TrialRecord
from h2lab.spec.factors import Cell
from h2lab.spec.protocols import ProtocolName

# Which h1 variant each h2 variant is compared with: same transport security, and h2c
# against pipelining as in seed 002.
PAIRS: tuple[tuple[ProtocolName, ProtocolName], ...] = (
    ("h2s", "h1s"),
    ("h2c", "h1c"),
    ("h2c", "h1p"),
    ("h3", "h2s"),
)
"""(newer, older) protocol pairs compared in a cell: s = metric(newer) / metric(older). The
analysis calls the newer one "h2" and the older "h1" (seed 001's words); for ``h3/h2s`` that is
h3 and h2s (:func:`h2lab.analysis.verdict.outcome_text`)."""


@dataclass(frozen=True)
class CellSummary:
    cell: Cell
    n_ok: dict[str, int]
    n_failed: dict[str, int]
    """trials with no successful attempt, per protocol"""
    medians: dict[str, float]
    """protocol -> median of the metric over its ok trials"""
    ratios: dict[str, tuple[float, int]]
    """"h2s/h1s" -> (median of per-block ratios, number of blocks)"""


def summarize(trials: list[TrialRecord], metric: str = "pdt_ms") -> list[CellSummary]:
    by_cell: dict[Cell, list[TrialRecord]] = defaultdict(list)
    for t in trials:
        by_cell[t.cell].append(t)
    out = []
    for cell, rows in by_cell.items():
        values: dict[str, list[float]] = defaultdict(list)
        n_failed: dict[str, int] = defaultdict(int)
        blocks: dict[str, dict[str, float]] = defaultdict(dict)
        succeeded = {t.trial_key for t in rows if t.status == "ok"}
        failed_keys: set[str] = set()
        for t in rows:
            v = getattr(t, metric)
            if t.status == "ok" and v is not None:
                values[t.protocol].append(float(v))
                blocks[t.block][t.protocol] = float(v)
            elif t.status != "ok" and t.trial_key not in succeeded | failed_keys:
                # a trial that failed (every attempt), counted once
                failed_keys.add(t.trial_key)
                n_failed[t.protocol] += 1
        ratios = {}
        for h2, h1 in PAIRS:
            paired = [b[h2] / b[h1] for b in blocks.values() if h2 in b and h1 in b and b[h1] > 0]
            if paired:
                ratios[f"{h2}/{h1}"] = (statistics.median(paired), len(paired))
        out.append(
            CellSummary(
                cell=cell,
                n_ok={p: len(v) for p, v in values.items()},
                n_failed=dict(n_failed),
                medians={p: statistics.median(v) for p, v in values.items()},
                ratios=ratios,
            )
        )
    return sorted(out, key=lambda c: c.cell)
