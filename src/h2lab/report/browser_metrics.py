"""The report's browser metrics section: per browser cell and protocol, the median of every
metric a browser reports (:data:`h2lab.results.METRICS` with ``reported_by`` ``browser``: load
and paint times, SpeedIndex and the visual milestones under browsertime's names, CLS, TBT,
fully loaded), over the cell's successful trials. Pure: trials in, HTML out."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from h2lab.analysis.factors import Cell
from h2lab.report import html as h
from h2lab.report.model import browser_clients, factor_texts
from h2lab.results import BROWSER, METRICS, Metric
from h2lab.spec.factors import report_columns
from h2lab.store.frame import TrialsIn, as_frame

BROWSER_PAGE_METRICS: tuple[Metric, ...] = tuple(m for m in METRICS if m.reported_by == BROWSER)
"""The metrics of the section, in column order."""


@dataclass(frozen=True)
class BrowserMetricsRow:
    cell: Cell
    protocol: str
    n: int
    """successful trials"""
    medians: tuple[float | None, ...]
    """one per shown metric; None: no trial of the cell has it"""


def browser_metric_rows(
    trials: TrialsIn,
) -> tuple[tuple[Metric, ...], list[BrowserMetricsRow]]:
    """The metrics some successful browser trial has, and per (cell, protocol) their medians."""
    ok = as_frame(trials).latest_ok()
    browsers = browser_clients(ok)
    ok = ok.take(np.isin(ok.cell_levels("client"), list(browsers)))
    protocols = ok.text("protocol")
    shown = tuple(m for m in BROWSER_PAGE_METRICS if np.any(~np.isnan(ok.number(m.name))))
    groups: dict[tuple[Cell, str], np.ndarray] = {}
    key = ok.cell * len(protocols.values) + protocols.codes
    for code in np.unique(key).tolist():
        cell, protocol = divmod(code, len(protocols.values))
        groups[(ok.cells[cell], str(protocols.values[protocol]))] = np.flatnonzero(key == code)
    out = []
    for cell, protocol in sorted(groups, key=lambda k: (k[0].describe(), k[1])):
        rows = groups[(cell, protocol)]
        medians = []
        for m in shown:
            values = ok.number(m.name)[rows]
            values = values[~np.isnan(values)]
            medians.append(float(np.median(values)) if values.size else None)
        out.append(BrowserMetricsRow(cell, protocol, len(rows), tuple(medians)))
    return shown, out


def _value(metric: Metric, v: float | None) -> str:
    if v is None:
        return "–"
    return f"{v:.3f}" if metric.unit == "score" else f"{v:.0f}"


def browser_metrics_part(trials: TrialsIn) -> str:
    """The section's body: a note and the table (one line when no browser trial succeeded)."""
    shown, rows = browser_metric_rows(trials)
    if not rows:
        return h.empty("no successful browser trial")
    factors = tuple(report_columns())
    headers = (*factors, "protocol", "n", *(m.name for m in shown))
    cells = [
        (
            *factor_texts(r.cell),
            r.protocol,
            str(r.n),
            *(_value(m, v) for m, v in zip(shown, r.medians, strict=True)),
        )
        for r in rows
    ]
    first_number = len(factors) + 1
    table = h.table(headers, cells, numeric=set(range(first_number, len(headers))))
    note = h.note(
        "Medians over successful trials, ms from navigation start (cls: a score). Names as "
        "browsertime's: first_visual_change_ms = FirstVisualChange, last_visual_change_ms = "
        "LastVisualChange, visual_complete_85/95/99_ms = VisualComplete85/95/99, "
        "speed_index_ms = SpeedIndex, cls = CumulativeLayoutShift, tbt_ms = "
        "TotalBlockingTime; fully_loaded_ms = WebPageTest's fullyLoaded (with the browser's "
        "idle= option). '–': not reported (Firefox has no TBT)."
    )
    return note + f'<div class="wide">{table}</div>'
