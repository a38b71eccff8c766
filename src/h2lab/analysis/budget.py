"""Budgets for CI (pure): ``h2lab compare A B --budget plt_ms:h2s:5%`` fails (exit 1) when B is
slower than A by more than the budget in some cell, with the whole confidence interval beyond
it, as Lighthouse CI's assertions and sitespeed.io's budgets fail a build.

A budget is ``METRIC[:PROTOCOL]:PERCENT%``: the time metric (or a journey step's,
``step:NAME[/FIELD]``, :mod:`h2lab.analysis.steps`), optionally one protocol (else
every protocol both runs measured), and how much slower B may be than A. A cell breaks it when
the lower end of the 95% bootstrap CI of s = B/A (:mod:`h2lab.analysis.ab`) is above
1 + PERCENT/100: the slowdown is larger than the budget at the comparison's confidence, not
merely in the median. A cell with too few pairs for an interval is not judged (and said so).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from h2lab.analysis import steps
from h2lab.analysis.ab import PairedCell
from h2lab.errors import SpecError
from h2lab.spec.protocols import PROTOCOLS

MAX_BUDGET_PCT = 1000.0
_SYNTAX = re.compile(
    r"(?P<metric>step:[^:/]+(?:/[a-z_]+)?|[a-z_]+)(?::(?P<protocol>[a-z0-9]+))?:(?P<pct>[0-9.]+)%"
)


@dataclass(frozen=True)
class Budget:
    text: str
    """as given on the command line"""
    metric: str
    protocol: str | None
    """None: every protocol"""
    slower_pct: float
    """how much slower than A the run B may be, in percent of A"""

    @property
    def limit_ratio(self) -> float:
        return 1 + self.slower_pct / 100


def parse_budget(text: str, metrics: Sequence[str]) -> Budget:
    """One ``--budget``; :class:`SpecError` naming the command line for anything else."""

    def bad(why: str) -> SpecError:
        return SpecError("command line", "--budget", f"{text!r}: {why}")

    m = _SYNTAX.fullmatch(text.strip())
    if m is None:
        raise bad("expected METRIC[:PROTOCOL]:PERCENT%, e.g. plt_ms:h2s:5% or step:login:h2s:5%")
    metric, protocol = m["metric"], m["protocol"]
    if steps.is_step_metric(metric):
        try:
            steps.parse(metric)
        except ValueError as exc:
            raise bad(str(exc).removeprefix(f"{metric!r}: ")) from None
    elif metric not in metrics:
        raise bad(f"unknown metric {metric!r} ({', '.join(metrics)})")
    if protocol is not None and protocol not in PROTOCOLS:
        raise bad(f"unknown protocol {protocol!r} ({', '.join(PROTOCOLS)})")
    try:
        pct = float(m["pct"])
    except ValueError:
        raise bad(f"{m['pct']!r} is not a number") from None
    if not 0 <= pct <= MAX_BUDGET_PCT:
        raise bad(f"the percentage must be between 0 and {MAX_BUDGET_PCT:g}")
    return Budget(text.strip(), metric, protocol, pct)


@dataclass(frozen=True)
class BudgetResult:
    budget: Budget
    judged: tuple[PairedCell, ...]
    """the cells of its metric and protocol with an interval"""
    broken: tuple[PairedCell, ...]
    not_judged: int
    """cells of its metric and protocol with too few pairs for an interval"""


def judge(budget: Budget, cells: Sequence[PairedCell]) -> BudgetResult:
    """The budget against the compared cells of its metric (and protocol)."""
    mine = [c for c in cells if c.metric == budget.metric and budget.protocol in (None, c.protocol)]
    judged = tuple(c for c in mine if c.ci_low_ratio is not None)
    broken = tuple(c for c in judged if (c.ci_low_ratio or 0.0) > budget.limit_ratio)
    return BudgetResult(budget, judged, broken, len(mine) - len(judged))
