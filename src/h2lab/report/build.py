"""``write_report(DIR)``: read ``DIR/results.sqlite``, analyse, write ``DIR/report.html`` and
the CSV/Parquet exports. The statistics are :mod:`h2lab.analysis`'s; this module only picks
what to show and reads the store and the artifact folders."""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Mapping, Sequence, Sized
from pathlib import Path
from typing import TypeVar

import numpy as np

import h2lab
from h2lab.analysis.compare import compare_levels
from h2lab.analysis.factors import Cell
from h2lab.analysis.stats import CI_METHOD
from h2lab.analysis.verdict import Analysis, OutlierRule, Verdict, analyze
from h2lab.artifacts import FILMSTRIP_DIR, RESULTS_DB
from h2lab.errors import H2LabError
from h2lab.report import artifacts, journeys, model, quic, svg, timeline, varied
from h2lab.report import html as h
from h2lab.report.browser_metrics import browser_metrics_part
from h2lab.report.coverage import coverage_part
from h2lab.report.export import export_tables
from h2lab.report.failed import failed_part
from h2lab.report.origins import origins_part
from h2lab.report.priorities import priorities_part
from h2lab.report.repro import experiments, repro
from h2lab.results import TrialRecord
from h2lab.spec.factors import JOURNEY
from h2lab.store import Store
from h2lab.store.columns import read_trial_frame
from h2lab.store.frame import TrialFrame
from h2lab.version import short_commit

T = TypeVar("T")


class NoResults(H2LabError):
    """The folder holds no results database."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        super().__init__(f"{out_dir}: no results.sqlite (run an experiment into it first)")


def write_report(
    out_dir: Path,
    *,
    chosen_cell: Cell | None = None,
    rng_seed: int = 0,
    timings: dict[str, float] | None = None,
    compare: tuple[str, tuple[str, ...]] | None = None,
) -> Path:
    """Write ``out_dir/report.html`` (one self-contained file) and ``trials.parquet``,
    ``resources.parquet``, ``trials.csv`` and ``resources.csv`` (each CSV up to
    :data:`~h2lab.report.export.CSV_ROWS_MAX` rows) next to it; returns the
    report's path.

    ``chosen_cell``: the cell whose median trials get waterfalls, filmstrips and a frame
    timeline (default: the browser cell with the most trials, else any). ``rng_seed`` seeds
    the bootstrap and the tree (recorded in the report). ``timings``, when given, receives the
    seconds spent in each phase. ``compare`` (factor, baselines) sets
    the paired comparison on another factor (default: the experiment's ``[compare]``).
    """
    if not (out_dir / RESULTS_DB).is_file():
        raise NoResults(out_dir)
    clock: dict[str, float] = timings if timings is not None else {}

    def timed(name: str, fn: Callable[[], T]) -> T:
        t0 = time.perf_counter()
        try:
            return fn()
        finally:
            clock[name] = clock.get(name, 0.0) + time.perf_counter() - t0

    Store(out_dir).close()  # brings an older store's schema up to date
    # read while no connection of this process has the store open: the ADBC driver carries
    # its own copy of SQLite, and closing its file releases every POSIX lock this process holds
    # on the store, another connection's among them (sqlite.org/howtocorrupt.html, 2.2.1)
    trials = timed("load", lambda: read_trial_frame(out_dir / RESULTS_DB))
    store = Store(out_dir)
    try:
        rng = np.random.default_rng(rng_seed)
        views = model.metric_views(trials)
        info = artifacts.experiment_info(out_dir)
        rule = info.outlier_rule
        analyses = timed("analysis", lambda: _analyses(views, rng, rule))
        primary = model.primary_verdicts(analyses, model.browser_clients(trials))
        chosen = compare or info.compare
        compared = timed("compare", lambda: _comparisons(views, rng, rule, chosen, info.levels))
        sections = timed(
            "figures",
            lambda: [
                h.section("verdicts", _verdicts(views, analyses, compared)),
                h.section("compare", _compare(compared, views, chosen, info.compare)),
                h.section("journeys", journeys.journeys_part(trials, store.all_steps(), rng)),
                h.section("cdf", _cdfs(views, analyses)),
                h.section("boxes", _boxes(views)),
                h.section("factors", _factors(views, trials)),
                h.section("heatmap", _heatmap(primary)),
            ],
        )
        sections.append(timed("tree", lambda: h.section("tree", _tree(primary, rng_seed))))
        sections.append(h.section("headers", _headers(trials)))
        sections.append(h.section("browser-metrics", browser_metrics_part(trials)))
        cell = chosen_cell if chosen_cell is not None else model.choose_cell(trials)
        sections += timed("chosen cell", lambda: _chosen_cell(store, trials, cell, out_dir))
        failed = timed("failed requests", lambda: failed_part(store, trials))
        failed += timed("coverage", lambda: coverage_part(store, trials))
        failed += timed("priority signals", lambda: priorities_part(store))
        failed += timed("origins' protocols", lambda: origins_part(store, trials))
        sections.append(h.section("repro", repro(out_dir, trials, rng_seed, failed)))
        path = _write_page(out_dir, trials, sections)
    finally:
        store.close()
    # Not in a thread beside the analysis (as it was for a day): its read-only connection
    # takes the file as immutable when no run holds the folder's lock and no -wal has content
    # (store/tables.py: opening), and the store's own connection, open meanwhile, may write it
    # (its schema, a checkpoint at close): a Bus error in one run of the unit tests. Once the
    # store is closed, nothing else of this process writes it, nor holds a lock the export's
    # connection would release as it closes (above).
    timed("export", lambda: export_tables(out_dir / RESULTS_DB, out_dir))
    return path


def _write_page(out_dir: Path, trials: TrialFrame, sections: list[str]) -> Path:
    """``out_dir/report.html``: the sections under a title naming the experiments and a
    subtitle saying what was stored, when and by which h2lab."""
    n_ok = len(trials.latest_ok())
    subtitle = (
        f"{len(trials)} trial attempts ({n_ok} trials succeeded) in {out_dir}; "
        f"written {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC by h2lab "
        f"{h2lab.__version__} (commit {short_commit()})"
    )
    names = experiments(trials) or ["(no trials)"]
    path = out_dir / "report.html"
    path.write_text(h.page(f"h2lab report: {', '.join(names)}", subtitle, sections), "utf-8")
    return path


# ---------------------------------------------------------------------------------- sections

NO_METRIC = "no successful trial has a value for pdt_ms, plt_ms or speed_index_ms"


def _metric_title(view: model.MetricView[TrialFrame]) -> str:
    clients = ", ".join(model.view_clients(view))
    return f"{model.METRIC_NAMES[view.metric]} — {view.metric}, clients: {clients}"


def _analyses(
    views: Sequence[model.MetricView[TrialFrame]],
    rng: np.random.Generator,
    rule: OutlierRule | None,
) -> dict[str, Analysis]:
    """Each metric view's verdicts (h2 against h1 per cell)."""
    return {v.metric: analyze(v.trials, rng, metric=v.metric, outlier_rule=rule) for v in views}


Comparison = tuple[str, tuple[str, ...], list[model.CompareRow]]
"""One factor against its baselines: (factor, baselines, rows)."""


def _comparisons(
    views: Sequence[model.MetricView[TrialFrame]],
    rng: np.random.Generator,
    rule: OutlierRule | None,
    chosen: tuple[str, tuple[str, ...]] | None,
    listed: Mapping[str, tuple[str, ...]],
) -> list[list[Comparison]]:
    """Per metric view, the comparisons of the factor ``chosen`` (``[compare]`` or
    ``--compare``), else of each factor that varied among the view's trials
    (:func:`h2lab.report.varied.compared`)."""
    out = []
    for v in views:
        factors = [chosen] if chosen else varied.compared(v.trials.cells, listed)
        mine = []
        for factor, baselines in factors:
            ratios = compare_levels(
                v.trials, rng, factor, baselines, metric=v.metric, outlier_rule=rule
            )
            mine.append((factor, baselines, [model.compare_row(r) for r in ratios]))
        out.append(mine)
    return out


def _verdicts(
    views: Sequence[model.MetricView[TrialFrame]],
    analyses: Mapping[str, Analysis],
    compared: Sequence[Sequence[Comparison]],
) -> str:
    if not views:
        return h.empty(NO_METRIC)
    parts = [
        h.note(
            f"Per cell: median of each protocol with its 95% CI ({CI_METHOD}); "
            "s = metric(h2)/metric(h1) per block (paired: same "
            "loss seed), its median and CI; verdict 'h2 faster' when the whole CI of s is "
            "≤ 0.95, 'h1 faster' when ≥ 1.05, else 'tie' (seed 001's thresholds); fewer than 2 "
            "complete blocks: 'too few blocks'. Method: docs/statistics.md."
        )
    ]
    for i, v in enumerate(views):
        a = analyses[v.metric]
        parts.append(h.h3(_metric_title(v)))
        rows = model.verdict_rows(a)
        if rows:
            parts.append(h.verdict_table(rows))
        else:
            parts.append(_verdicts_of_levels(compared[i]))
        paired = {x.cell for x in a.verdicts}
        alone = {s.cell for s in a.cell_stats} - paired
        if alone and rows:
            parts.append(h.note(f"{len(alone)} cell(s) without an h1/h2 pair are not in the table"))
    return "".join(parts)


def _verdicts_of_levels(compared: Sequence[Comparison]) -> str:
    """Where no cell has two protocols: what the experiment varied, against its baseline."""
    tables = [(f, b, rows) for f, b, rows in compared if rows]
    if not tables:
        return h.empty(
            "no cell has both an h1 and an h2 protocol to compare, and no other factor varied"
        )
    parts = [
        h.note(
            "No cell has two protocols: the verdicts are those of the factors the experiment "
            "varied, each level against its baseline (s = metric(level)/metric(baseline) per "
            "repetition; 'Paired comparison' says how)."
        )
    ]
    for factor, baselines, rows in tables:
        parts.append(h.note(f"{factor} against {' or '.join(baselines)}:"))
        parts.append(h.compare_table(factor, rows))
    return "".join(parts)


def _compare(
    compared: Sequence[Sequence[Comparison]],
    views: Sequence[model.MetricView[TrialFrame]],
    chosen: tuple[str, tuple[str, ...]] | None,
    designed: tuple[str, tuple[str, ...]] | None,
) -> str:
    if not views:
        return h.empty(NO_METRIC)
    if not any(compared):
        return h.empty(
            "no factor to compare besides the protocol: nothing else varied (experiment key "
            "[compare], or h2lab report DIR --compare FACTOR=BASELINE)"
        )
    if chosen is None:
        how = (
            "paired by repetition number only: with no [compare] in the experiment, each "
            "factor that varied is compared against its first level (h2lab report DIR "
            "--compare FACTOR=BASELINE picks another), its trials did not share a seed or run "
            "back to back"
        )
    elif chosen == designed:
        how = "they ran back to back with one loss seed ([compare] in the experiment)"
    else:
        how = (
            "paired by repetition number only: the experiment did not name this factor in "
            "[compare], so the two did not share a seed or run back to back"
        )
    parts = [
        h.note(
            "Every level of a factor against its baseline, per cell and protocol: s = "
            "metric(level)/metric(baseline) per repetition, the baseline's trial being the one "
            f"of the same repetition in the cell that differs only in that factor; {how}. "
            f"Median s with its 95% CI ({CI_METHOD}); 'level faster' when the whole "
            "CI is ≤ 0.95, 'baseline faster' when ≥ 1.05, else 'tie'."
        )
    ]
    for v, mine in zip(views, compared, strict=True):
        parts.append(h.h3(_metric_title(v)))
        if not mine:
            parts.append(h.empty("no factor but the protocol varied among these trials"))
        for factor, baselines, rows in mine:
            named = " or ".join(baselines)
            if not rows:
                parts.append(h.empty(f"no cell has both {named} and another level of {factor}"))
                continue
            parts.append(h.note(f"{factor} against {named}:"))
            parts.append(h.compare_table(factor, rows))
    return "".join(parts)


def _cdfs(views: Sequence[model.MetricView[TrialFrame]], analyses: Mapping[str, Analysis]) -> str:
    if not views:
        return h.empty(NO_METRIC)
    parts = [h.note("Each step is one cell (page × network × server × client × tcp): its median.")]
    for v in views:
        parts.append(h.h3(_metric_title(v)))
        parts.append(
            svg.cdf_chart(
                model.cdf_series(analyses[v.metric]),
                x_label=f"median {v.metric}",
                title=f"CDF of cell medians, {v.metric}",
            )
        )
    return "".join(parts)


def _boxes(views: Sequence[model.MetricView[TrialFrame]]) -> str:
    if not views:
        return h.empty(NO_METRIC)
    parts = [
        h.note(
            "Box: quartiles and median; whiskers: furthest values within 1.5 IQR. One group per "
            "combination of the factors that varied (the network alone when none did), one box "
            "per protocol: no box pools two levels of a factor that varied."
        )
    ]
    for v in views:
        factors = varied.box_factors(v.trials.cells)
        parts.append(h.h3(_metric_title(v)))
        groups = model.values_by(v.trials, v.metric, factors)
        parts.append(h.note(_box_sizes(groups)))
        if len(groups) > varied.MAX_BOX_GROUPS:
            left = len(groups) - varied.MAX_BOX_GROUPS
            parts.append(h.note(f"{left} more groups not drawn (every value is in trials.csv)"))
            groups = dict(list(groups.items())[: varied.MAX_BOX_GROUPS])
        title = f"{v.metric} per {' × '.join(factors)}"
        parts.append(svg.box_chart(groups, y_label=v.metric, title=title))
    return "".join(parts)


def _box_sizes(groups: Mapping[str, Mapping[str, Sized]]) -> str:
    """What the boxes are drawn from: every value, and which outliers get a dot."""
    n = sum(len(vals) for inner in groups.values() for vals in inner.values())
    return (
        f"Aggregated: each box is computed from all its values ({n:,} trials in all, none "
        f"sampled); dots: the outliers, at most the {svg.MAX_OUTLIER_DOTS} most extreme per "
        "box, so the figure's size does not grow with the number of trials."
    )


LOG_X = {"object_count", "object_size_bytes", "down_rate_bps", "up_rate_bps"}
MAX_LINE_SERIES = 12
"""Most lines one chart draws: past it the lines pool the varied factors (and say so)."""


def _series_count(trials: TrialFrame, split: Sequence[str]) -> int:
    protocols = set(trials.text("protocol").texts())
    return len(protocols) * len({tuple(c.text(s) for s in split) for c in trials.cells})


def _factors(views: Sequence[model.MetricView[TrialFrame]], trials: TrialFrame) -> str:
    if not views:
        return h.empty(NO_METRIC)
    levels = model.numeric_factor_levels(set(trials.cells))
    if not levels:
        return h.empty(
            "no numeric factor varies in this experiment (object count, object size, origins, "
            "RTT, rates and loss are each constant or unknown)"
        )
    split = [f for f in varied.varied(trials.cells) if f not in varied.WORKLOAD]
    pooled = ""
    if _series_count(trials, split) > MAX_LINE_SERIES:
        pooled, split = f" and over {', '.join(split)} (past {MAX_LINE_SERIES} lines)", []
    per = f" and level of {', '.join(split)} (the other factors that varied)" if split else ""
    parts = [
        h.note(
            f"Median per level with p25–p75 bars, one line per protocol{per}, pooled over the "
            f"pages' and networks' other properties{pooled}; cells whose value is unknown "
            "(imported pages, traces) or unlimited are left out of a plot."
        )
    ]
    for v in views:
        parts.append(h.h3(_metric_title(v)))
        charts = [
            svg.line_chart(
                model.line_series(v.trials, v.metric, lv, split),
                x_label=model.FACTOR_NAMES[name],
                y_label=v.metric,
                title=f"{v.metric} against {name}",
                log_x=name in LOG_X,
            )
            for name, lv in levels.items()
        ]
        parts.append('<div class="side">' + "".join(charts) + "</div>")
    return "".join(parts)


def _heatmap(primary: Sequence[Verdict]) -> str:
    maps = model.heatmaps(primary)
    if not maps:
        return h.empty("no cell has both an h1 and an h2 protocol: no ratio to map")
    parts = [
        h.note(
            "Median of the per-block ratios s = h2/h1 of each cell's primary metric (pdt for "
            "transport clients, plt for browsers) pooled over the cells at each combination; "
            "blue: h2 faster, red: h1 faster. Factors: the two whose combinations hold the "
            "most cells."
        )
    ]
    for m in maps:
        parts.append(h.h3(f"{m.pair}: {m.x_factor} × {m.y_factor}"))
        parts.append(
            svg.heatmap(
                m.x_labels,
                m.y_labels,
                m.values,
                x_label=model.FACTOR_NAMES.get(m.x_factor, m.x_factor),
                y_label=model.FACTOR_NAMES.get(m.y_factor, m.y_factor),
                title=f"median s ({m.pair})",
            )
        )
    return "".join(parts)


DRAWN_TREE_DEPTH = 4
"""At most 16 leaves drawn: a tree grown until its leaves are pure can have hundreds, which
no one reads as a figure; the full tree is printed as text under it."""


def _tree(primary: Sequence[Verdict], seed: int) -> str:
    from h2lab.analysis.tree import fit_tree, samples_from_verdicts

    samples = samples_from_verdicts(primary)
    if len(samples) < model.MIN_TREE_CELLS:
        return h.empty(
            f"too few cells to fit a tree: {len(samples)} cell(s) with a verdict, at least "
            f"{model.MIN_TREE_CELLS} needed"
        )
    tree = fit_tree(samples, seed=seed, max_depth=DRAWN_TREE_DEPTH)
    full = fit_tree(samples, seed=seed)
    parts = [
        h.note(
            "Entropy decision tree (scikit-learn, as seed 001's ID3) over the factors of the "
            "cells, one sample per cell and pair labelled by its verdict on the primary metric; "
            "a node is h2 / h1 / tie when that class holds ≥ 75% of its cells, else mixed "
            "(h2: the newer protocol of the pair is faster, h2 over h1, h3 over h2s). "
            f"Drawn to depth {DRAWN_TREE_DEPTH}; the full tree (leaves pure) is below as text."
        )
    ]
    if tree.root.is_leaf:
        parts.append(h.note("Every cell has the same verdict: the tree is one leaf."))
    parts.append(f'<div class="wide">{svg.tree_chart(tree.root)}</div>')
    if tree.dropped:
        parts.append(
            h.note(
                "Factors left out: " + "; ".join(f"{d.factor} ({d.reason})" for d in tree.dropped)
            )
        )
    parts.append(h.details("the full tree as text", h.pre(full.render_text())))
    return "".join(parts)


def _headers(trials: TrialFrame) -> str:
    rows = model.header_rows(trials)
    if not rows:
        return h.empty("no successful trial")
    return h.note(
        "Medians over successful trials. % of page bytes = bytes / (request headers + response "
        "headers + bodies) of the trial (seed 000, Table 2). 'not recorded': the client does "
        "not report it (h2load and Chromium do not count request header bytes; nghttp does)."
    ) + h.header_table(rows)


CHOSEN_SECTIONS = ("waterfalls", "filmstrips", "frames", "quic")
"""The sections of the chosen cell's median trials."""


def _chosen_cell(store: Store, trials: TrialFrame, cell: Cell | None, out_dir: Path) -> list[str]:
    if cell is None:
        line = h.empty("no successful trial: no median trial to show")
        return [h.section(s, line) for s in CHOSEN_SECTIONS]
    metric, at = model.median_rows(trials, cell)
    ids = trials.latest_ok().number("id")
    by_id = {t.id: t for t in store.trials_by_id([int(ids[r]) for r in at.values()])}
    median = {p: by_id[int(ids[r])] for p, r in at.items()}
    if not median:
        line = h.empty(f"the chosen cell has no successful trial: {cell.describe()}")
        return [h.section(s, line) for s in CHOSEN_SECTIONS]
    intro = h.note(f"Chosen cell: {cell.describe()}. Per protocol, its median trial by {metric}.")
    rows = {p: timeline.waterfall_rows(store.resources(t.id or 0)) for p, t in median.items()}
    t_max = max((r.end_ms for rs in rows.values() for r in rs), default=1.0)

    def caption(p: str, t: TrialRecord) -> str:
        return f"{p}: repetition {t.repetition}, {metric} {getattr(t, metric):.0f} ms"

    if cell.page.startswith(f"{JOURNEY}:"):
        falls = _journey_falls(store, median, caption)
    else:
        falls = h.side_by_side(
            [
                (caption(p, t), svg.waterfall(rows[p], t_max_ms=t_max, title=f"waterfall {p}"))
                for p, t in median.items()
            ]
        )
    waterfalls = (
        intro
        + h.note(
            "Bars from request start to last byte, light until the first byte (where the client "
            "reports it), one colour per connection; same time axis for every protocol (a "
            "journey: one waterfall per step, from the step's first request)."
        )
        + falls
    )
    dirs = {p: store.artifacts_dir(t.trial_key, t.attempt) for p, t in median.items()}
    return [
        h.section("waterfalls", waterfalls + quic.trial_files(dirs, out_dir)),
        h.section("filmstrips", intro + _filmstrips(dirs)),
        h.section("frames", intro + _frames(dirs, rows)),
        h.section("quic", intro + quic.quic_part(dirs)),
    ]


def _journey_falls(
    store: Store, median: Mapping[str, TrialRecord], caption: Callable[[str, TrialRecord], str]
) -> str:
    steps = store.all_steps()
    names = {p: {s.step: s.name for s in steps.get(t.id or 0, [])} for p, t in median.items()}
    resources = {p: store.resources(t.id or 0) for p, t in median.items()}
    return journeys.step_waterfalls(resources, names, {p: caption(p, t) for p, t in median.items()})


NO_FILMSTRIP = "no filmstrip recorded (run with client chromium:filmstrip=1)"


def _filmstrips(dirs: Mapping[str, Path]) -> str:
    frames = {p: artifacts.filmstrip_frames(d) for p, d in dirs.items()}
    progress = {p: artifacts.visual_progress(d) for p, d in dirs.items()}
    parts = []
    if any(frames.values()):
        times = timeline.filmstrip_times(f[-1][0] for f in frames.values() if f)
        parts.append(h.note("What was on screen at the same instants for every protocol."))
        for p, fs in frames.items():
            parts.append(h.h3(p))
            if not fs:
                parts.append(h.empty(NO_FILMSTRIP))
                continue
            uris: dict[str, str] = {}
            strip = []
            for t in times:
                name = timeline.frame_at(fs, t)
                if name is not None and name not in uris:
                    uris[name] = artifacts.thumbnail_uri(dirs[p] / FILMSTRIP_DIR / name)
                strip.append((t, None if name is None else uris[name]))
            parts.append(h.filmstrip(strip))
    else:
        parts.append(h.empty(NO_FILMSTRIP))
    curves = {p: c for p, c in progress.items() if c}
    if curves:
        parts.append(h.h3("visual progress"))
        parts.append(
            svg.step_chart(
                curves,
                x_label="ms from navigation start",
                y_label="visual completeness",
                title="visual progress",
                y_max=1.0,
            )
        )
    return "".join(parts)


def _frames(dirs: Mapping[str, Path], rows: Mapping[str, list[svg.WaterfallRow]]) -> str:
    h2 = [p for p in dirs if p.startswith("h2")]
    if not h2:
        return h.empty("the chosen cell has no HTTP/2 trial")
    parts = []
    for p in h2:
        lanes, files = artifacts.frame_log_rows(dirs[p])
        if lanes:
            source = f"from the frame log ({', '.join(files)}): one mark per DATA frame received"
        else:
            lanes = timeline.frame_rows_from_resources(rows[p])
            source = (
                "derived from resource timings (no frame log recorded for this trial): one lane "
                "per stream, from its first byte to its last"
            )
        t_max = max((b for lane in lanes for _, b, _ in lane.spans), default=1.0)
        parts.append(h.h3(f"{p}: {source}"))
        parts.append(svg.timeline(lanes, t_max_ms=t_max, title=f"streams over time, {p}"))
    return "".join(parts)
