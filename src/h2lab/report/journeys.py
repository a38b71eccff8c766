"""The report's journeys, step by step (issue #57): for each cell of a ``journey:FILE`` page,
one row per step (the first is the measured load: its plt; then every other step's duration;
then the whole journey, ``journey_ms``) with its median per protocol, the paired ratios h2/h1
and h3/h2 (per repetition, as the verdicts pair a block) with their CI, and the connections
each protocol's trials opened in the step (median)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from h2lab.analysis.stats import CI_METHOD, median_ci
from h2lab.report import html as h
from h2lab.report import svg, timeline
from h2lab.results import StepTiming
from h2lab.spec.factors import JOURNEY, Cell
from h2lab.store.frame import TrialFrame

PAIRS = (("h2s", "h1s"), ("h2c", "h1c"), ("h3", "h2s"))
"""The ratios shown where both protocols ran: h2 against h1, h3 against h2."""
FIRST = "(first: the measured load, plt)"
WHOLE = "whole journey (journey_ms)"

Values = dict[str, dict[int, float]]
"""protocol -> repetition -> ms"""


def journeys_part(
    trials: TrialFrame, steps: Mapping[int, Sequence[StepTiming]], rng: np.random.Generator
) -> str:
    """The section: ``steps`` by trial id (the store's ``steps``)."""
    ok = trials.latest_ok()
    cells: dict[Cell, dict[tuple[int, str], Values]] = defaultdict(dict)
    conns: dict[Cell, dict[tuple[int, str], dict[str, list[int]]]] = defaultdict(dict)
    protocols = ok.text("protocol")
    for i in range(len(ok)):
        cell = ok.cells[ok.cell[i]]
        if not cell.page.startswith(f"{JOURNEY}:"):
            continue
        protocol = str(protocols.at(i))
        rep = _repetition(str(ok.text("block").at(i)))
        got = cells[cell]
        _put(got, (0, FIRST), protocol, rep, ok.number("plt_ms")[i])
        for s in steps.get(int(ok.number("id")[i]), ()):
            _put(got, (s.step, s.name), protocol, rep, s.duration_ms)
            conns[cell].setdefault((s.step, s.name), {}).setdefault(protocol, []).append(
                s.new_connections
            )
        _put(got, (10_000, WHOLE), protocol, rep, ok.number("journey_ms")[i])
    if not cells:
        return h.empty('no journey trials (page = "journey:FILE", docs/guide.md)')
    parts = [
        h.note(
            "Per journey cell, one row per step: the median duration per protocol (the first "
            "step's plt, then each step's action to the end of its wait, then journey_ms), "
            "s = ratio per repetition of the two protocols named, its median and 95% CI "
            f"({CI_METHOD}), and the connections each protocol opened during the step (median)."
        )
    ]
    for cell, rows in cells.items():
        parts.append(h.h3(cell.describe()))
        parts.append(_table(rows, conns[cell], rng))
    return "".join(parts)


def _repetition(block: str) -> int:
    last = block.rsplit("|", 1)[-1]
    return int(last[1:]) if last.startswith("r") and last[1:].isdigit() else 0


def _put(got: dict[tuple[int, str], Values], key: tuple[int, str], protocol: str, rep: int,
         value: float) -> None:  # fmt: skip
    if value == value:  # not NaN
        got.setdefault(key, {}).setdefault(protocol, {})[rep] = float(value)


def _table(
    rows: Mapping[tuple[int, str], Values],
    conns: Mapping[tuple[int, str], dict[str, list[int]]],
    rng: np.random.Generator,
) -> str:
    protocols = sorted({p for v in rows.values() for p in v})
    pairs = [(a, b) for a, b in PAIRS if a in protocols and b in protocols]
    heads = ["step", *(f"{p} median ms" for p in protocols)]
    heads += [f"s = {a}/{b} [CI]" for a, b in pairs]
    heads += [f"{p} new connections" for p in protocols]
    body = []
    for (index, name), values in sorted(rows.items()):
        label = name if index in (0, 10_000) else f"{index}. {name}"
        row = [label, *(_median(values.get(p, {})) for p in protocols)]
        row += [_ratio(values.get(a, {}), values.get(b, {}), rng) for a, b in pairs]
        opened = conns.get((index, name), {})
        row += [_median_int(opened.get(p, [])) for p in protocols]
        body.append(row)
    numeric = set(range(1, 1 + len(protocols)))
    return h.table(heads, body, numeric)


def _median(by_rep: Mapping[int, float]) -> str:
    return f"{statistics.median(by_rep.values()):.0f} (n {len(by_rep)})" if by_rep else "–"


def _median_int(values: Sequence[int]) -> str:
    return f"{statistics.median(values):g}" if values else "–"


def _ratio(a: Mapping[int, float], b: Mapping[int, float], rng: np.random.Generator) -> str:
    ratios = [a[r] / b[r] for r in sorted(set(a) & set(b)) if b[r] > 0]
    if len(ratios) < 2:
        return "–" if not ratios else f"{ratios[0]:.3f} (one pair)"
    ci = median_ci(ratios, rng)
    return f"{statistics.median(ratios):.3f} [{ci.low:.3f}, {ci.high:.3f}]"


def step_waterfalls(
    resources: Mapping[str, Sequence[Mapping[str, object]]],
    names: Mapping[str, Mapping[int, str]],
    caption: Mapping[str, str],
) -> str:
    """The chosen journey cell's median trials, one waterfall per step side by side per
    protocol: ``resources`` and ``names`` (step -> name, after the first) by protocol, each
    step's bars from its first request (every protocol on one time axis per step)."""
    split = {p: timeline.by_step(rows) for p, rows in resources.items()}
    steps = sorted({s for by in split.values() for s in by})
    parts = []
    for step in steps:
        rows = {p: timeline.waterfall_rows(by.get(step, [])) for p, by in split.items()}
        t_max = max((r.end_ms for rs in rows.values() for r in rs), default=1.0)
        name = next((n[step] for n in names.values() if step in n), None)
        title = "step 0: the measured load" if step == 0 else f"step {step}: {name or '?'}"
        parts.append(h.h3(title))
        falls = [
            (f"{caption[p]}, {len(rows[p])} requests",
             svg.waterfall(rows[p], t_max_ms=t_max, title=f"waterfall {p} {title}"))
            for p in rows
        ]  # fmt: skip
        parts.append(h.side_by_side(falls))
    return "".join(parts)
