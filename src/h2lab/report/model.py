"""What the report shows, computed from stored trials (pure: records in, plain data out).

Which metric for which client: a client that measured a browser metric (``plt_ms`` or
``speed_index_ms``) for some trial is a *browser*; its cells are judged on ``plt_ms`` and
``speed_index_ms``; every other client's cells on ``pdt_ms`` (seed 002's page download time).
The *primary* metric of a cell (for the tree, the heatmap and the median trials) is ``plt_ms``
for a browser (``speed_index_ms`` if it has no ``plt_ms``), else ``pdt_ms``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload

import numpy as np

from h2lab.analysis.compare import LevelRatio
from h2lab.analysis.factors import Cell, CellFactors, cell_factors
from h2lab.analysis.verdict import Analysis, CellStats, Verdict, outcome_text
from h2lab.analysis.verdict import latest_ok as latest_ok  # the report's rule, kept here too
from h2lab.report.svg.charts import LinePoint
from h2lab.results import BROWSER, LOAD, METRICS, TrialRecord
from h2lab.spec.factors import FACTORS, report_columns
from h2lab.store.frame import TrialFrame, TrialsIn, as_frame

TRANSPORT_METRIC = next(m.name for m in METRICS if m.judges == LOAD)
BROWSER_METRICS = tuple(m.name for m in METRICS if m.judges == BROWSER)
METRIC_NAMES = {m.name: m.title for m in METRICS}
NUMERIC_FACTORS = (
    "object_count",
    "object_size_bytes",
    "origins",
    "rtt_ms",
    "down_rate_bps",
    "up_rate_bps",
    "loss_fraction",
)
"""The numbers of :meth:`CellFactors.features` a line plot can use."""
FACTOR_NAMES = {
    "object_count": "objects on the page",
    "object_size_bytes": "object size (bytes)",
    "origins": "origins (hosts)",
    "rtt_ms": "RTT (ms)",
    "down_rate_bps": "downlink rate (bit/s)",
    "up_rate_bps": "uplink rate (bit/s)",
    "loss_fraction": "downlink loss (fraction)",
    **{f.name: f.name.replace("_", " ") for f in FACTORS},
    "initcwnd_packets": "initial congestion window (packets)",
}
MIN_TREE_CELLS = 4
"""Fewer labelled cells draw no tree: one split needs at least two cells on each side to say
more than "these two cells differ"."""


# ------------------------------------------------------------------------- trials and metrics


def browser_clients(trials: TrialsIn) -> frozenset[str]:
    f = as_frame(trials)
    measured = np.zeros(len(f), bool)
    for m in BROWSER_METRICS:
        measured |= ~np.isnan(f.number(m))
    return frozenset(f.cells[c].client for c in np.unique(f.cell[measured]).tolist())


def _is_browser(f: TrialFrame, browsers: frozenset[str]) -> np.ndarray:
    """Each row: whether its client is one of ``browsers``."""
    return np.isin(f.cell_levels("client"), list(browsers)) if len(f) else np.zeros(0, bool)


TrialsT = TypeVar("TrialsT", tuple[TrialRecord, ...], TrialFrame)


@dataclass(frozen=True)
class MetricView(Generic[TrialsT]):
    """One main metric and the trials (every attempt) of the clients it judges: records when
    :func:`metric_views` was given records, else a frame."""

    metric: str
    trials: TrialsT


def view_clients(view: MetricView[Any]) -> list[str]:
    """The clients whose trials the view holds, sorted."""
    if isinstance(view.trials, TrialFrame):
        f = view.trials
        return sorted({f.cells[c].client for c in np.unique(f.cell).tolist()})
    return sorted({t.cell.client for t in view.trials})


@overload
def metric_views(trials: TrialFrame) -> list[MetricView[TrialFrame]]: ...
@overload
def metric_views(trials: Sequence[TrialRecord]) -> list[MetricView[tuple[TrialRecord, ...]]]: ...
def metric_views(trials: Sequence[TrialRecord] | TrialFrame) -> list[MetricView[Any]]:
    """``pdt_ms`` over the non-browser clients, ``plt_ms`` and ``speed_index_ms`` over the
    browsers; a metric no successful trial has is left out."""
    f = as_frame(trials)
    browsers = browser_clients(f)
    is_browser = _is_browser(f, browsers)
    out: list[MetricView[Any]] = []
    for metric in (TRANSPORT_METRIC, *BROWSER_METRICS):
        wanted = is_browser == (metric != TRANSPORT_METRIC)
        if np.any(wanted & f.ok & ~np.isnan(f.number(metric))):
            if isinstance(trials, TrialFrame):
                out.append(MetricView(metric, f.take(wanted)))
            else:
                out.append(
                    MetricView(metric, tuple(t for t, w in zip(trials, wanted, strict=True) if w))
                )
    return out


def primary_metric(client: str, browsers: frozenset[str], trials: Sequence[TrialRecord]) -> str:
    if client not in browsers:
        return TRANSPORT_METRIC
    if any(t.plt_ms is not None for t in trials if t.cell.client == client):
        return "plt_ms"
    return "speed_index_ms"


def primary_verdicts(analyses: Mapping[str, Analysis], browsers: frozenset[str]) -> list[Verdict]:
    """Each cell's verdicts on its primary metric."""
    browser_metric = "plt_ms" if "plt_ms" in analyses else "speed_index_ms"
    out = []
    for metric, a in analyses.items():
        for v in a.verdicts:
            wanted = browser_metric if v.cell.client in browsers else TRANSPORT_METRIC
            if metric == wanted:
                out.append(v)
    return out


# ------------------------------------------------------------------------------- verdicts


@dataclass(frozen=True)
class VerdictRow:
    """One row of the verdict table, every field already text."""

    factors: tuple[str, ...]
    """the cell's levels, one text per column of :func:`h2lab.spec.factors.report_columns`"""
    pair: str
    h1: str
    """median [CI] of the h1 protocol"""
    h2: str
    ratio: str
    """median s [CI]"""
    outcome: str
    """in the pair's words ("h3 faster")"""
    n: str
    failures: str
    kind: str = ""
    """the outcome as the analysis names it ("h2 faster": the newer protocol), for colour"""


def _ms(s: CellStats) -> str:
    if s.median_ms is None or s.ci_low_ms is None or s.ci_high_ms is None:
        return "–"
    return f"{s.median_ms:.0f} [{s.ci_low_ms:.0f}, {s.ci_high_ms:.0f}]"


def _ratio_text(median: float | None, low: float | None, high: float | None) -> str:
    """``median [low, high]`` of a ratio, or a dash when there is none."""
    if median is None or low is None or high is None:
        return "–"
    return f"{median:.3f} [{low:.3f}, {high:.3f}]"


def factor_texts(c: Cell) -> tuple[str, ...]:
    """A cell's levels under the report's factor columns (factors sharing one, like the TCP
    settings, joined by a space)."""
    return tuple(" ".join(c.text(n) for n in names) for names in report_columns().values())


def verdict_rows(analysis: Analysis) -> list[VerdictRow]:
    rows = []
    for v in analysis.verdicts:
        r = v.ratio
        ratio = _ratio_text(r.median_ratio, r.ci_low_ratio, r.ci_high_ratio)
        n = f"{r.n_blocks} blocks ({v.h1.protocol} {v.h1.n}, {v.h2.protocol} {v.h2.n})"
        if r.n_incomplete_blocks:
            n += f", {r.n_incomplete_blocks} incomplete"
        failures = str(v.n_failed)
        missing = v.h1.n_missing + v.h2.n_missing
        if missing:
            failures += f" ({missing} without a value)"
        if v.n_outliers_removed:
            failures += f", {v.n_outliers_removed} outliers removed"
        c = v.cell
        rows.append(
            VerdictRow(
                factor_texts(c),
                r.pair,
                f"{v.h1.protocol}: {_ms(v.h1)}",
                f"{v.h2.protocol}: {_ms(v.h2)}",
                ratio,
                outcome_text(v.outcome, v.h2.protocol, v.h1.protocol),
                n,
                failures,
                v.outcome,
            )
        )
    return rows


@dataclass(frozen=True)
class CompareRow:
    """One row of the comparison table, every field already text."""

    cell: str
    """the cell's factors other than the compared one"""
    protocol: str
    level: str
    baseline: str
    baseline_ms: str
    level_ms: str
    ratio: str
    outcome: str
    n: str


def compare_row(r: LevelRatio) -> CompareRow:
    others = [r.cell.text(f.name) for f in FACTORS if f.name != r.factor]

    def ms(v: float | None) -> str:
        return "–" if v is None else f"{v:.0f}"

    return CompareRow(
        " | ".join(others),
        r.protocol,
        r.level,
        r.baseline,
        ms(r.baseline_median_ms),
        ms(r.level_median_ms),
        _ratio_text(r.median_ratio, r.ci_low_ratio, r.ci_high_ratio),
        r.outcome,
        f"{r.n_pairs} pairs",
    )


# ------------------------------------------------------------------------ distributions


def values_by(
    trials: TrialsIn, metric: str, factors: str | Sequence[str]
) -> dict[str, dict[str, np.ndarray]]:
    """Level of ``factors`` (as text; several joined by `` · ``) -> protocol -> values of
    ``metric`` (successful trials with a value, in id order)."""
    names = (factors,) if isinstance(factors, str) else tuple(factors)
    f = as_frame(trials).latest_ok()
    values = f.number(metric)
    has = ~np.isnan(values)
    texts = [" · ".join(c.text(n) for n in names) for c in f.cells]
    levels = sorted(set(texts))
    index = {t: i for i, t in enumerate(levels)}
    level_of_cell = np.array([index[t] for t in texts] + [0], np.int64)[:-1]
    protocols = f.text("protocol")
    width = len(protocols.values)
    key = level_of_cell[f.cell[has]] * width + protocols.codes[has]
    out: dict[str, dict[str, np.ndarray]] = defaultdict(dict)
    for group in _groups(key):
        level, protocol = divmod(int(key[group[0]]), width)
        out[levels[level]][str(protocols.values[protocol])] = values[has][group]
    return dict(out)


def _groups(key: np.ndarray) -> list[np.ndarray]:
    """Row indices per distinct ``key``, each in row order, groups by key."""
    order = np.argsort(key, kind="stable")
    bounds = np.flatnonzero(np.r_[True, key[order][1:] != key[order][:-1], True])
    return [order[a:b] for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)]


def cdf_series(analysis: Analysis) -> dict[str, list[float]]:
    """Protocol -> the median of every cell (page × network × …) that has one."""
    out: dict[str, list[float]] = defaultdict(list)
    for s in analysis.cell_stats:
        if s.median_ms is not None:
            out[s.protocol].append(s.median_ms)
    return dict(sorted(out.items()))


FactorsOf = Callable[[Cell], CellFactors]


def numeric_factor_levels(
    cells: Iterable[Cell], factors: FactorsOf = cell_factors
) -> dict[str, dict[Cell, float]]:
    """Numeric factor -> its finite value per cell, for factors known (and finite) in at least
    two cells with at least two distinct values. Unknown values (imported pages, traces) and
    unlimited rates are left out of that factor's plot."""
    out: dict[str, dict[Cell, float]] = {}
    feats = {c: factors(c).features() for c in cells}
    for name in NUMERIC_FACTORS:
        levels = {}
        for c, f in feats.items():
            v = f.get(name)
            if isinstance(v, int | float) and math.isfinite(v):
                levels[c] = float(v)
        if len(set(levels.values())) >= 2:
            out[name] = levels
    return out


def line_series(
    trials: TrialsIn, metric: str, levels: Mapping[Cell, float], split: Sequence[str] = ()
) -> dict[str, list[LinePoint]]:
    """Series -> (level, median, p25, p75) of ``metric`` over the trials at each level of a
    factor: one series per protocol and combination of the ``split`` factors' levels (named
    ``protocol level level``), pooled over the other factors."""
    f = as_frame(trials).latest_ok()
    level = np.array([levels.get(c, np.nan) for c in f.cells] + [np.nan], float)[:-1][f.cell]
    values = f.number(metric)
    keep = ~np.isnan(values) & ~np.isnan(level)
    protocols = f.text("protocol")
    names = [" ".join(str(c.text(s)) for s in split) for c in f.cells]
    group = np.array([*names, ""], dtype=object)[:-1][f.cell] if len(f) else np.array([])
    out: dict[str, list[LinePoint]] = {}
    for code in np.unique(protocols.codes[keep]).tolist():
        for g in sorted(set(group[keep & (protocols.codes == code)].tolist())):
            mine = keep & (protocols.codes == code) & (group == g)
            pts = []
            for x in np.unique(level[mine]).tolist():
                vals = values[mine & (level == x)]
                q25, q50, q75 = np.quantile(vals, [0.25, 0.5, 0.75])
                pts.append(LinePoint(x, float(q50), float(q25), float(q75)))
            out[f"{protocols.values[code]} {g}".strip()] = pts
    return out


# ------------------------------------------------------------------------------- heatmap


def format_level(factor: str, value: float | str) -> str:
    if isinstance(value, str):
        return value
    if factor in ("down_rate_bps", "up_rate_bps"):
        return "unlimited" if math.isinf(value) else f"{value / 1e6:g} Mbit/s"
    if factor == "loss_fraction":
        return f"{value * 100:g}%"
    if factor == "rtt_ms":
        return f"{value:g} ms"
    if factor == "object_size_bytes":
        return f"{value / 1000:g} KB" if value >= 1000 else f"{value:g} B"
    return f"{value:g}"


@dataclass(frozen=True)
class Heatmap:
    pair: str
    x_factor: str
    y_factor: str
    x_labels: tuple[str, ...]
    y_labels: tuple[str, ...]
    values: Mapping[tuple[int, int], tuple[float, int]]
    """(column, row) -> (median s over the blocks pooled there, number of blocks)"""


CATEGORICAL_AXES = tuple(f.name for f in FACTORS if f.kind is str)
"""The factors a heatmap can use as categories (by name)."""


def _axis_values(
    verdicts: Sequence[Verdict], factors: FactorsOf
) -> dict[str, dict[Cell, float | str]]:
    feats = {v.cell: factors(v.cell).features() for v in verdicts}
    out: dict[str, dict[Cell, float | str]] = {}
    for name in NUMERIC_FACTORS:
        vals: dict[Cell, float | str] = {}
        for c, f in feats.items():
            v = f.get(name)
            if isinstance(v, int | float):
                vals[c] = float(v)
        if len(vals) == len(feats) and len(set(vals.values())) >= 2:
            out[name] = vals
    for name in CATEGORICAL_AXES:
        out[name] = {c: c.text(name) for c in feats}
    return out


def choose_heatmap_axes(
    verdicts: Sequence[Verdict], factors: FactorsOf = cell_factors
) -> tuple[str, str]:
    """The two factors whose combinations hold the most distinct cells (ties: numeric factors
    first, then more levels); page × network when fewer than two factors vary."""
    axes = _axis_values(verdicts, factors)
    varying = [a for a, vals in axes.items() if len(set(vals.values())) >= 2]
    best: tuple[tuple[int, int, int], str, str] | None = None
    for i, a in enumerate(varying):
        for b in varying[i + 1 :]:
            filled = len({(axes[a][v.cell], axes[b][v.cell]) for v in verdicts})
            numeric = (a in NUMERIC_FACTORS) + (b in NUMERIC_FACTORS)
            levels = len(set(axes[a].values())) * len(set(axes[b].values()))
            score = (filled, numeric, levels)
            if best is None or score > best[0]:
                best = (score, a, b)
    if best is None:
        return "page", "network"
    return best[1], best[2]


def heatmaps(verdicts: Sequence[Verdict], factors: FactorsOf = cell_factors) -> list[Heatmap]:
    """One heatmap per pair (h2s/h1s, ...) over the chosen two factors."""
    if not verdicts:
        return []
    xf, yf = choose_heatmap_axes(verdicts, factors)
    axes = _axis_values(verdicts, factors)
    out = []
    for pair in sorted({v.ratio.pair for v in verdicts}):
        pooled: dict[tuple[float | str, float | str], list[float]] = defaultdict(list)
        for v in verdicts:
            if v.ratio.pair == pair:
                pooled[(axes[xf][v.cell], axes[yf][v.cell])].extend(v.ratio.ratios)
        xs = sorted({k[0] for k in pooled}, key=_sort_key)
        ys = sorted({k[1] for k in pooled}, key=_sort_key)
        values = {
            (xs.index(kx), ys.index(ky)): (float(np.median(r)), len(r))
            for (kx, ky), r in pooled.items()
            if r
        }
        out.append(
            Heatmap(
                pair,
                xf,
                yf,
                tuple(format_level(xf, x) for x in xs),
                tuple(format_level(yf, y) for y in ys),
                values,
            )
        )
    return out


def _sort_key(v: float | str) -> tuple[int, float, str]:
    return (0, v, "") if isinstance(v, float) else (1, 0.0, v)


# --------------------------------------------------------------------------- header bytes


@dataclass(frozen=True)
class HeaderRow:
    client: str
    protocol: str
    n: int
    request_header_bytes: float | None
    """median over trials; None: the client does not record it"""
    response_header_bytes: float | None
    body_bytes: float | None
    request_share: float | None
    """median of request header bytes / (request + response headers + bodies)"""
    response_share: float | None


def _median(xs: np.ndarray) -> float | None:
    return float(np.median(xs)) if xs.size else None


def header_rows(trials: TrialsIn) -> list[HeaderRow]:
    """Seed 000 Table 2: header bytes per protocol and their share of the page's bytes."""
    f = as_frame(trials).latest_ok()
    clients = f.cell_levels("client")
    protocols = f.text("protocol").texts()
    req, resp, body = (
        f.number(c) for c in ("request_header_bytes", "response_header_bytes", "body_bytes")
    )
    total = np.nan_to_num(req) + np.nan_to_num(resp) + np.nan_to_num(body)
    with np.errstate(divide="ignore", invalid="ignore"):
        req_share, resp_share = req / total, resp / total
    counted = total > 0
    by: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, key in enumerate(zip(clients.tolist(), protocols, strict=True)):
        by[(str(key[0]), str(key[1]))].append(i)
    out = []
    for (client, protocol), rows in sorted(by.items()):
        r = np.asarray(rows)
        share = r[counted[r]]

        def med(x: np.ndarray, rows: np.ndarray = r) -> float | None:
            v = x[rows]
            return _median(v[~np.isnan(v)])

        out.append(
            HeaderRow(
                client, protocol, len(rows), med(req), med(resp), med(body),
                med(req_share, share), med(resp_share, share),
            )
        )  # fmt: skip
    return out


# ------------------------------------------------------------------- the chosen cell's trials


def choose_cell(trials: TrialsIn) -> Cell | None:
    """The browser cell with the most successful trials (ties: the first in sort order), else
    the cell with the most successful trials of any client; None without successful trials."""
    ok = as_frame(trials).latest_ok()
    if not len(ok):
        return None
    browsers = browser_clients(ok)
    codes, n = np.unique(ok.cell, return_counts=True)
    counts = {ok.cells[c]: k for c, k in zip(codes.tolist(), n.tolist(), strict=True)}
    pool: list[Cell] = [c for c in counts if c.client in browsers] or list(counts)
    return min(pool, key=lambda c: (-counts[c], c.describe()))


def median_rows(f: TrialFrame, cell: Cell) -> tuple[str, dict[str, int]]:
    """The cell's primary metric and, per protocol, the row in ``f.latest_ok()`` of its median
    trial (the lower middle one for an even count), among successful trials with a value."""
    browsers = browser_clients(f)
    is_browser = _is_browser(f, frozenset({cell.client}) & browsers)
    has_plt = bool(np.any(is_browser & ~np.isnan(f.number("plt_ms"))))
    metric = "plt_ms" if has_plt else "speed_index_ms"
    if cell.client not in browsers:
        metric = TRANSPORT_METRIC
    ok = f.latest_ok()
    rows = np.flatnonzero(np.array([c == cell for c in ok.cells] + [False])[:-1][ok.cell])
    rows = rows[~np.isnan(ok.number(metric)[rows])]
    keys = ok.text("trial_key").codes
    out = {}
    protocols = ok.text("protocol")
    for code in np.unique(protocols.codes[rows]).tolist():
        mine = rows[protocols.codes[rows] == code]
        mine = mine[np.lexsort((keys[mine], ok.number(metric)[mine]))]
        out[str(protocols.values[code])] = int(mine[(len(mine) - 1) // 2])
    return metric, out


def median_trials(trials: Sequence[TrialRecord], cell: Cell) -> tuple[str, dict[str, TrialRecord]]:
    """The cell's primary metric and, per protocol, its median trial (the lower middle one for
    an even count), among successful trials with a value (:func:`median_rows`)."""
    metric, rows = median_rows(TrialFrame.of(trials), cell)
    ok = latest_ok(trials)  # the order of the frame's latest_ok()
    return metric, {p: ok[r] for p, r in rows.items()}
