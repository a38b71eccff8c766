"""What the trials varied, so that no figure pools the levels of a factor that varied and an
experiment without ``[compare]`` still compares what it set (issue #56: five servers over one
protocol got a report that pooled them into one box and said "no cell has both an h1 and an h2
protocol").

The workload factors (``page``, ``network``) are the conditions a treatment is measured under,
not a treatment: they split the figures but are not compared against a first level unless
``[compare]`` asks. Every other factor the trials hold at two levels or more is compared against
its first level as the experiment file lists it (``experiment.json``'s ``levels``; else the
first in sorted order), paired by repetition, the way ``h2lab report --compare`` does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from h2lab.spec.factors import COMPARABLE, FACTORS, Cell

WORKLOAD = ("page", "network")
"""Factors measured under, not compared, unless ``[compare]`` names one."""

MAX_BOX_GROUPS = 40
"""Most groups one box chart draws (each a combination of the varied factors' levels); past
it the chart says how many it left out (the CSV exports hold every value)."""


def varied(cells: Iterable[Cell]) -> tuple[str, ...]:
    """The factors at two levels or more among ``cells``, in key order."""
    seen = list(cells)
    return tuple(f.name for f in FACTORS if len({c[f.name] for c in seen}) > 1)


def compared(
    cells: Iterable[Cell], listed: Mapping[str, tuple[str, ...]]
) -> list[tuple[str, tuple[str, ...]]]:
    """(factor, (baseline,)) for each varied factor that is not a workload factor; the
    baseline its first level in ``listed`` (the experiment file's order) that the trials
    have, else its first level in sorted order."""
    seen = list(cells)
    out: list[tuple[str, tuple[str, ...]]] = []
    for name in varied(seen):
        if name in WORKLOAD or name not in COMPARABLE:
            continue
        have = {str(c[name]) for c in seen}
        order = [lv for lv in listed.get(name, ()) if lv in have] or sorted(have)
        out.append((name, (order[0],)))
    return out


def box_factors(cells: Iterable[Cell]) -> tuple[str, ...]:
    """The factors one box group stands for: every varied factor (the network alone when
    nothing varied), so that no box pools two levels of a factor that varied."""
    return varied(cells) or ("network",)
