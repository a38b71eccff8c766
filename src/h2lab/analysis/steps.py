"""A journey's steps as metrics (pure): ``step:NAME`` is the duration of the step called NAME
(its action to the end of its wait), ``step:NAME/FIELD`` another of its times (``ttfb_ms``,
``fcp_ms``, ``lcp_ms``, ``load_ms``, ``interaction_ms``), so that ``h2lab compare`` and its
budgets judge a step as they judge a trial's metric (issue #57).

The steps are the store's ``steps`` rows: every step after the first. The first step is the
trial's measured load, whose times are the trial's own metrics (``plt_ms``, ``ttfb_ms``, ...),
and the whole journey is ``journey_ms``: neither needs a step metric.

A step metric is a column added to a :class:`~h2lab.store.frame.TrialFrame` (:func:`with_steps`):
the analysis reads it as it reads a stored metric; a trial without that step has NaN there.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from h2lab.analysis.ab import RunComparison, compare_runs
from h2lab.analysis.verdict import OutlierRule
from h2lab.results import StepTiming
from h2lab.store.frame import TrialFrame, TrialsIn, as_frame

PREFIX = "step:"
FIELDS = tuple(
    name for name in StepTiming.__dataclass_fields__ if name.endswith("_ms")
)  # duration_ms first
DEFAULT_FIELD = "duration_ms"
SYNTAX = re.compile(r"step:(?P<step>[^:/]+)(?:/(?P<field>[a-z_]+))?")
"""A step metric; the name holds no ``:`` or ``/`` (a budget's separators)."""

Steps = Mapping[int, Sequence[StepTiming]]
"""A run's steps by trial id (:func:`h2lab.store.reader.read_run`)."""


def is_step_metric(metric: str) -> bool:
    return metric.startswith(PREFIX)


def step_metric(step: str, field: str = DEFAULT_FIELD) -> str:
    """The metric's name: ``step:NAME`` for the duration, else ``step:NAME/FIELD``."""
    return f"{PREFIX}{step}" if field == DEFAULT_FIELD else f"{PREFIX}{step}/{field}"


def parse(metric: str) -> tuple[str, str]:
    """(step name, field) of a step metric; ValueError naming what is wrong."""
    m = SYNTAX.fullmatch(metric)
    if m is None:
        raise ValueError(f"{metric!r}: expected step:NAME or step:NAME/FIELD")
    field = m["field"] or DEFAULT_FIELD
    if field not in FIELDS:
        raise ValueError(f"{metric!r}: a step has no {field!r} ({', '.join(FIELDS)})")
    return m["step"].strip(), field


def step_names(steps: Steps) -> list[str]:
    """The steps' names, in journey order (their place, then first seen)."""
    first: dict[str, int] = {}
    for rows in steps.values():
        for s in rows:
            first[s.name] = min(first.get(s.name, s.step), s.step)
    return sorted(first, key=lambda name: (first[name], name))


def with_steps(trials: TrialsIn, steps: Steps, metrics: Iterable[str]) -> TrialFrame:
    """The trials' frame with one column per step metric (NaN where a trial lacks the step
    or the step lacks the time)."""
    frame = as_frame(trials)
    ids = frame.number("id").astype(np.int64).tolist()
    added = {}
    for metric in metrics:
        step, field = parse(metric)
        column = np.full(len(ids), np.nan)
        for row, trial_id in enumerate(ids):
            for s in steps.get(trial_id, ()):
                value = getattr(s, field)
                if s.name == step and value is not None:
                    column[row] = float(value)
        added[metric] = column
    return TrialFrame(frame.cells, frame.cell, frame.texts, {**frame.numbers, **added})


def compare_steps(
    a: tuple[TrialsIn, Steps],
    b: tuple[TrialsIn, Steps],
    rng: np.random.Generator,
    *,
    outlier_rules: tuple[OutlierRule | None, OutlierRule | None] = (None, None),
) -> RunComparison | None:
    """Run B against run A on every step both have after the first (its duration), as
    :func:`~h2lab.analysis.ab.compare_runs` compares a metric: one comparison whose cells are
    each step's, in journey order; None when the runs have no step in common."""
    names_b = set(step_names(b[1]))
    metrics = [step_metric(n) for n in step_names(a[1]) if n in names_b]
    if not metrics:
        return None
    frames = (with_steps(a[0], a[1], metrics), with_steps(b[0], b[1], metrics))
    compared = [
        compare_runs(*frames, rng, metric, outlier_rules=outlier_rules) for metric in metrics
    ]
    cells = tuple(c for comparison in compared for c in comparison.cells)
    return dataclasses.replace(compared[0], cells=cells)
