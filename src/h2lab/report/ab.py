"""``h2lab compare DIR_A DIR_B``: read two results folders, compare them
(:mod:`h2lab.analysis.ab`), and lay the result out as table rows and as one self-contained
HTML page styled like the report (``DIR_B/compare.html`` by default).

Both stores are read without writing to them (:func:`h2lab.store.reader.read_trials`). The
metric of a pair of cells is the report's primary metric of their client (``plt_ms`` for a
browser, ``pdt_ms`` for a load client, :func:`h2lab.report.model.primary_metric`) when the two
agree, else ``pdt_ms``, which every client reports; or the one asked for.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import h2lab
from h2lab.analysis import steps
from h2lab.analysis.ab import (
    AbOutcome,
    ConfigDifference,
    MetricOf,
    PairedCell,
    RunComparison,
    compare_runs,
    config_differences,
)
from h2lab.analysis.factors import Cell
from h2lab.analysis.machines import DELAY_OVERHEAD_KEY, MACHINE_KEYS
from h2lab.analysis.stats import CI_METHOD
from h2lab.analysis.verdict import H1_FASTER_AT_LEAST, H2_FASTER_AT_MOST
from h2lab.artifacts import RESULTS_DB
from h2lab.errors import SpecError
from h2lab.report import html as h
from h2lab.report import model, svg
from h2lab.report.artifacts import ExperimentInfo, experiment_info
from h2lab.results import METRICS, StepTiming, TrialRecord
from h2lab.spec.factors import FACTORS
from h2lab.store.frame import TrialsIn
from h2lab.store.reader import read_run
from h2lab.version import short_commit

COMPARE_FILE = "compare.html"
"""The page ``h2lab compare`` writes in DIR_B unless told where."""
TIME_METRICS = tuple(m.name for m in METRICS if m.unit == "ms")
"""What ``--metric`` may name: every metric in ms."""
SECTIONS = {
    "runs": "The two runs",
    "cells": "B against A, per cell",
    "steps": "B against A, step by step",
    "unmatched": "Cells without a partner",
}
OUTCOME_COLOURS: dict[AbOutcome, str] = {
    "B faster": svg.PROTOCOL_COLOURS["h2s"],
    "A faster": svg.PROTOCOL_COLOURS["h1s"],
    "tie": "#999999",
    "too few pairs": "#cccccc",
}


@dataclass(frozen=True)
class Run:
    """One results folder as read."""

    dir: Path
    trials: tuple[TrialRecord, ...]
    info: ExperimentInfo
    steps: Mapping[int, Sequence[StepTiming]] = dataclasses.field(default_factory=dict)
    """a journey's steps after its first, by trial id"""


def load_run(out_dir: Path) -> Run:
    """The trials and ``experiment.json`` of a results folder; :class:`SpecError` when it has
    no readable store or no trials in it."""
    trials, steps = read_run(out_dir)
    if not trials:
        raise SpecError(out_dir / RESULTS_DB, "trials", "no trials stored")
    return Run(out_dir, tuple(trials), experiment_info(out_dir), steps)


def _joined(values: Iterable[str]) -> str:
    return ", ".join(sorted(values))


def run_settings(run: Run) -> dict[str, str]:
    """What a run records besides its factors, as text: the experiment, its seed and rule,
    repetitions, each page's content digest, the tools' versions and the machines."""
    info, trials = run.info, run.trials
    out = {
        "experiment": _joined({t.experiment for t in trials}),
        "experiment seed": "not recorded" if info.seed is None else str(info.seed),
        "outlier rule": info.outlier_rule or "none",
        "repetitions": str(max(t.repetition for t in trials) + 1),
    }
    digests: dict[str, set[str]] = defaultdict(set)
    versions: dict[str, set[str]] = defaultdict(set)
    for t in trials:
        if t.page_digest:
            digests[f"page content of {t.cell.page}"].add(t.page_digest[:12])
        for key, value in t.versions.items():
            if key == DELAY_OVERHEAD_KEY or key == "machine":
                continue  # measured per boot; the machine column says the same
            # a server's version is keyed by its spec: by the adapter's name here, so that
            # origin:scheduler=fcfs and origin:scheduler=client compare as one
            name = key if key in MACHINE_KEYS else f"{key.split(':', 1)[0]} version"
            versions[name].add(str(value))
    out.update({k: _joined(v) for k, v in sorted(digests.items())})
    out.update({k: _joined(v) for k, v in sorted(versions.items())})
    machines = {t.machine for t in trials if t.machine}
    if machines:
        out["machine"] = _joined(machines)
    return out


def default_metric(a: Run, b: Run) -> MetricOf:
    """The report's primary metric of the two cells' clients when it is the same for both,
    else the transport metric (``pdt_ms``), which every client reports."""
    trials = [*a.trials, *b.trials]
    browsers = model.browser_clients(trials)

    def metric_of(cell_a: Cell, cell_b: Cell) -> str:
        ma = model.primary_metric(cell_a.client, browsers, trials)
        mb = model.primary_metric(cell_b.client, browsers, trials)
        return ma if ma == mb else model.TRANSPORT_METRIC

    return metric_of


@dataclass(frozen=True)
class AbResult:
    a: Run
    b: Run
    comparison: RunComparison
    settings: tuple[ConfigDifference, ...]
    """the settings that differ (:func:`run_settings`)"""
    rng_seed: int
    by_step: RunComparison | None = None
    """journeys: every step both runs have after the first, on its duration"""


def _no_common_cell(a: Run, b: Run, comparison: RunComparison) -> SpecError:
    why = ""
    if comparison.matched:
        pa = {t.protocol for t in a.trials}
        pb = {t.protocol for t in b.trials}
        why = f" (no protocol in common: A {_joined(pa)}; B {_joined(pb)})"
    elif comparison.differences:
        d = comparison.differences[0]
        why = f" ({d.factor}: A {', '.join(d.levels_a)}; B {', '.join(d.levels_b)})"
    return SpecError(
        b.dir / RESULTS_DB, "cells", f"no cell in common with {a.dir / RESULTS_DB}{why}"
    )


def compare_folders(
    dir_a: Path,
    dir_b: Path,
    *,
    metric: str | None = None,
    rng_seed: int = 0,
    flag: str = "--metric",
) -> AbResult:
    """Read both folders and compare them; :class:`SpecError` for an unknown metric, a folder
    without a readable store, or two runs without a cell and protocol in common."""
    if metric is not None:
        check_metric(metric, flag)
    a, b = load_run(dir_a), load_run(dir_b)
    rng = np.random.default_rng(rng_seed)
    rules = (a.info.outlier_rule, b.info.outlier_rule)
    trials_a: TrialsIn = a.trials
    trials_b: TrialsIn = b.trials
    if metric is not None and steps.is_step_metric(metric):
        _check_step_in_both(metric, a, b, flag)
        trials_a = steps.with_steps(a.trials, a.steps, [metric])
        trials_b = steps.with_steps(b.trials, b.steps, [metric])
    chosen = metric or default_metric(a, b)
    comparison = compare_runs(trials_a, trials_b, rng, chosen, outlier_rules=rules)
    if not comparison.cells:
        raise _no_common_cell(a, b, comparison)
    settings = config_differences(run_settings(a), run_settings(b))
    by_step = steps.compare_steps(
        (a.trials, a.steps), (b.trials, b.steps), rng, outlier_rules=rules
    )
    return AbResult(a, b, comparison, settings, rng_seed, by_step)


def _check_step_in_both(metric: str, a: Run, b: Run, flag: str) -> None:
    name = steps.parse(metric)[0]
    names_a, names_b = steps.step_names(a.steps), steps.step_names(b.steps)
    if name not in names_a or name not in names_b:
        raise SpecError(
            "command line", flag, f"{metric!r}: no step {name!r} in both runs (steps after "
            f"the first: A {', '.join(names_a) or 'none'}; B {', '.join(names_b) or 'none'})"
        )  # fmt: skip


def check_metric(metric: str, where: str) -> None:
    """:class:`SpecError` naming the command line's ``where`` unless ``metric`` is a time
    metric or a journey step's (:mod:`h2lab.analysis.steps`)."""
    if steps.is_step_metric(metric):
        try:
            steps.parse(metric)
        except ValueError as exc:
            raise SpecError("command line", where, str(exc)) from None
    elif metric not in TIME_METRICS:
        known = f"{', '.join(TIME_METRICS)}, or a journey's step:NAME[/FIELD]"
        raise SpecError("command line", where, f"unknown metric {metric!r} ({known})")


# ----------------------------------------------------------------------------- as text


def differs_lines(result: AbResult) -> list[str]:
    """One line per factor and setting that differs between the runs."""
    out = []
    for d in result.comparison.differences:
        how = "set aside: cells matched without it" if d.set_aside else "matched on"
        out.append(
            f"{d.factor}: A {', '.join(d.levels_a) or '–'}; B {', '.join(d.levels_b) or '–'}"
            f" ({how})"
        )
    out += [f"{s.name}: A {s.a}; B {s.b}" for s in result.settings]
    return out


@dataclass(frozen=True)
class AbRow:
    """One row of the comparison table, every field already text."""

    factors: tuple[str, ...]
    """one text per factor (:data:`FACTORS` order): the level the two cells share, or
    ``A's level → B's level`` for a factor set aside"""
    protocol: str
    metric: str
    n: str
    a_ms: str
    b_ms: str
    ratio: str
    """median of B/A [CI]"""
    p: str
    outcome: AbOutcome


def _ms(v: float | None) -> str:
    return "–" if v is None else f"{v:.0f}"


def _p(v: float | None) -> str:
    if v is None:
        return "–"
    return "< 0.0001" if v < 0.0001 else f"{v:.4f}"


def cell_ratio_text(c: PairedCell) -> str:
    """``median [low, high]`` of s = B/A, or ``–``."""
    if c.median_ratio is None or c.ci_low_ratio is None or c.ci_high_ratio is None:
        return "–"
    return f"{c.median_ratio:.3f} [{c.ci_low_ratio:.3f}, {c.ci_high_ratio:.3f}]"


def _level(c: PairedCell, factor: str) -> str:
    a, b = c.cell_a.text(factor), c.cell_b.text(factor)
    return a if a == b else f"{a} → {b}"


def ab_rows(comparison: RunComparison) -> list[AbRow]:
    rows = []
    for c in comparison.cells:
        n = f"{c.n_pairs} pairs (A {c.n_a}, B {c.n_b})"
        rows.append(
            AbRow(
                tuple(_level(c, f.name) for f in FACTORS), c.protocol, c.metric, n,
                _ms(c.median_a_ms), _ms(c.median_b_ms), cell_ratio_text(c), _p(c.p_value),
                c.outcome,
            )
        )  # fmt: skip
    return rows


ALWAYS_SHOWN = ("page", "network", "server", "client")
"""The factor columns the page always shows (as ``h2lab run``'s table); the others when their
text varies among the rows."""


def varying_factors(rows: Sequence[AbRow]) -> list[int]:
    """Indexes into :data:`FACTORS` of the factors whose text varies among the rows."""
    return [i for i in range(len(FACTORS)) if len({r.factors[i] for r in rows}) > 1]


def common_levels(rows: Sequence[AbRow]) -> str:
    """The factors every row has the same text for, ``name level`` joined by commas."""
    varying = varying_factors(rows)
    return ", ".join(
        f"{f.name} {rows[0].factors[i]}" for i, f in enumerate(FACTORS) if i not in varying
    )


def row_cells(rows: Sequence[AbRow], *, compact: bool = False) -> tuple[list[str], list[list[str]]]:
    """The table's headers and its rows as text. ``compact`` (the console): only the factors
    that vary among the rows (:func:`common_levels` says the rest); else those and
    :data:`ALWAYS_SHOWN`."""
    varying = varying_factors(rows)
    shown = [
        i for i, f in enumerate(FACTORS) if i in varying or (not compact and f.name in ALWAYS_SHOWN)
    ]
    headers = [FACTORS[i].name for i in shown] + list(ROW_HEADERS)
    body = [
        [r.factors[i] for i in shown]
        + [r.protocol, r.metric, r.n, r.a_ms, r.b_ms, r.ratio, r.p, r.outcome]
        for r in rows
    ]
    return headers, body


ROW_HEADERS = (
    "protocol",
    "metric",
    "n",
    "A median ms",
    "B median ms",
    "s = B/A [95% CI]",
    "Wilcoxon p",
    "verdict",
)
METHOD = (
    "Cells are matched on every factor whose levels the two runs share; a factor with no "
    "level in common is set aside (it is what the runs compare). Per matched cell and "
    "protocol, the trial of repetition r in A is paired with the trial of repetition r in B; "
    f"s = B/A per pair, its median and 95% CI ({CI_METHOD}); Wilcoxon signed-rank test "
    "of the paired values, "
    "two-sided (with n pairs the smallest possible p is 2/2^n); verdict 'B faster' when the "
    f"whole CI is ≤ {H2_FASTER_AT_MOST}, 'A faster' when ≥ {H1_FASTER_AT_LEAST}, else 'tie' "
    "(the report's thresholds, seed 001); fewer than 2 pairs: 'too few pairs'. "
    "Method: docs/statistics.md."
)


# ----------------------------------------------------------------------------- as HTML


def _runs_part(result: AbResult) -> str:
    runs = [
        (
            side,
            str(r.dir),
            _joined({t.experiment for t in r.trials}),
            str(len(r.trials)),
            str(len(model.latest_ok(r.trials))),
        )
        for side, r in (("A", result.a), ("B", result.b))
    ]
    headers = ("run", "folder", "experiment", "trial attempts", "trials ok")
    parts = [h.table(headers, runs, numeric={3, 4}), h.h3("What differs")]
    lines = differs_lines(result)
    if lines:
        parts.append("<ul>" + "".join(f"<li>{h.e(x)}</li>" for x in lines) + "</ul>")
    else:
        parts.append(h.note("Nothing recorded differs: the same factors and settings."))
    return "".join(parts)


def _cells_part(comparison: RunComparison) -> str:
    headers, body = row_cells(ab_rows(comparison))
    head = "".join(f"<th>{h.e(x)}</th>" for x in headers)
    lines = []
    for cells in body:
        outcome = cells[-1]
        lines.append(
            "<tr>"
            + "".join(f"<td>{h.e(c)}</td>" for c in cells[:-6])
            + "".join(f'<td class="num">{h.e(c)}</td>' for c in cells[-6:-3])
            + f'<td>{h.e(cells[-3])}</td><td class="num">{h.e(cells[-2])}</td>'
            + f'<td class="{h.e(outcome.replace(" ", "-").lower())}">{h.e(outcome)}</td></tr>'
        )
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(lines)}</tbody></table>"
    labels = chart_labels(comparison)
    intervals = [
        svg.RatioInterval(
            label,
            c.median_ratio,
            c.ci_low_ratio,
            c.ci_high_ratio,
            OUTCOME_COLOURS[c.outcome],
        )
        for label, c in zip(labels, comparison.cells, strict=True)
        if c.median_ratio is not None and c.ci_low_ratio is not None and c.ci_high_ratio is not None
    ]
    chart = svg.ci_chart(
        intervals,
        x_label="s = B/A (median, 95% CI); below 1: B faster",
        title="B/A per cell with its 95% CI",
        marks=(H2_FASTER_AT_MOST, H1_FASTER_AT_LEAST),
    )
    return h.note(METHOD) + f'<div class="wide">{table}</div>' + h.h3("s = B/A") + chart


def _steps_part(by_step: RunComparison | None) -> str:
    if by_step is None:
        return h.empty("no journey step (after the first) in both runs")
    what = (
        "Each step of a journey after its first (the first is the measured load: see the "
        "cells above with plt_ms), compared on its duration, step:NAME (its action to the end "
        "of its wait), as the cells above are; --metric and --budget take step:NAME too."
    )
    return h.note(what) + _cells_part(by_step)


def chart_labels(comparison: RunComparison) -> list[str]:
    """A short label per compared cell: the levels that vary among them and the protocol."""
    cells = comparison.cells
    names = [f.name for f in FACTORS if len({_level(c, f.name) for c in cells}) > 1]
    several = len({c.metric for c in cells}) > 1
    return [
        " ".join([*(_level(c, n) for n in names), c.protocol, *([c.metric] if several else [])])
        for c in cells
    ]


def _unmatched_part(comparison: RunComparison) -> str:
    rows = [("A", c.describe()) for c in comparison.unmatched_a]
    rows += [("B", c.describe()) for c in comparison.unmatched_b]
    if not rows:
        return h.empty("every cell of each run has a partner in the other")
    return h.table(("run", "cell"), rows)


def ab_page(result: AbResult) -> str:
    """The whole ``compare.html``."""
    sections = [
        h.section("runs", _runs_part(result), SECTIONS),
        h.section("cells", _cells_part(result.comparison), SECTIONS),
        h.section("steps", _steps_part(result.by_step), SECTIONS),
        h.section("unmatched", _unmatched_part(result.comparison), SECTIONS),
    ]
    subtitle = (
        f"A = {result.a.dir}, B = {result.b.dir}; bootstrap seed {result.rng_seed}; written "
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC by h2lab "
        f"{h2lab.__version__} (commit {short_commit()})"
    )
    return h.page("h2lab compare: B against A", subtitle, sections, SECTIONS)


def write_compare(result: AbResult, path: Path) -> Path:
    path.write_text(ab_page(result), encoding="utf-8")
    return path
