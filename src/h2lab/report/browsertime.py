"""A results folder as browsertime JSON (``h2lab export --format browsertime DIR``): for every
browser cell and protocol, one ``browsertime.json`` shaped as browsertime 28.3.0 writes it
(``bin/browsertime.js``: an array with one result per URL, built by
``lib/core/engine/collector.js``), each repetition one iteration. Tools that read browsertime's
JSON find h2lab's metrics under browsertime's names and paths:

=============================================  ==========================================
browsertime path (per iteration, in arrays)     h2lab column
=============================================  ==========================================
``browserScripts[].timings.ttfb``               ``ttfb_ms`` (responseStart)
``browserScripts[].timings.pageTimings``        ``backEndTime`` = ``ttfb_ms``,
                                                ``domContentLoadedTime`` = ``dcl_ms``
``browserScripts[].timings.loadEventEnd``       ``plt_ms``
``browserScripts[].timings.paintTiming``        ``first-paint`` = ``fp_ms``,
                                                ``first-contentful-paint`` = ``fcp_ms``
``browserScripts[].timings.largestContentfulPaint.renderTime``  ``lcp_ms``
``browserScripts[].pageinfo.cumulativeLayoutShift``  ``cls``
``visualMetrics[]``                             ``FirstVisualChange``, ``SpeedIndex``,
                                                ``VisualComplete85/95/99``,
                                                ``LastVisualChange``, ``VisualReadiness``
                                                (last − first), ``VisualProgress``
``cpu[].longTasks.totalBlockingTime``           ``tbt_ms``
``googleWebVitals[]``                           ``ttfb``, ``firstContentfulPaint``,
                                                ``largestContentfulPaint``,
                                                ``cumulativeLayoutShift``,
                                                ``totalBlockingTime``
``fullyLoaded[]``                               ``fully_loaded_ms``
``timestamps[]``                                ``started_at``
=============================================  ==========================================

``statistics`` mirrors the numbers as browsertime's ``Statistics.summarizeDeep`` does (per
path: median, mean, mdev, rsd, stddev, min, p10, p90, p99, max; ``statistics.timings.fullyLoaded``
for fully loaded), with browsertime's rounding. ``info`` names the URL (the trial's document),
the network profile as ``connectivity.profile`` (engine ``rattan``), the browser (``chrome`` or
``firefox``), and the cell's factors and protocol in ``info.extra``. What h2lab does not measure
(user timings, CPU categories, the rest of browsertime's page info) is absent, as browsertime
leaves out what a browser does not report. Values keep h2lab's precision (browsertime rounds
most of them to whole ms).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import numpy as np

from h2lab.analysis.verdict import latest_ok
from h2lab.artifacts import VISUAL_PROGRESS
from h2lab.results import TrialRecord
from h2lab.spec.factors import Cell

BROWSER_NAMES = {"chromium": "chrome", "firefox": "firefox"}
"""h2lab's browser client -> browsertime's ``--browser`` name."""
PERCENTILES = (0, 10, 90, 99, 100)
"""browsertime's default ``percentiles`` (0 and 100 named ``min`` and ``max``)."""
EXPORT_DIR = "browsertime"
"""The folder, in the results folder, the export writes its files into."""

Json = dict[str, Any]


def browser_of(client: str) -> str | None:
    """browsertime's name of a client level's browser (``chromium:idle=2s`` -> ``chrome``)."""
    return BROWSER_NAMES.get(client.split(":", 1)[0])


def _clean(d: Mapping[str, Any]) -> Json:
    """``d`` without None values and without what became empty."""
    out: Json = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            v = _clean(v)
            if not v:
                continue
        if v is not None:
            out[k] = v
    return out


def browser_scripts(t: TrialRecord, url: str) -> Json:
    """The numbers browsertime's browser scripts read from the page, h2lab's values."""
    timings = {
        "ttfb": t.ttfb_ms,
        "loadEventEnd": t.plt_ms,
        "pageTimings": {"backEndTime": t.ttfb_ms, "domContentLoadedTime": t.dcl_ms},
        "paintTiming": {"first-paint": t.fp_ms, "first-contentful-paint": t.fcp_ms},
        "largestContentfulPaint": {"renderTime": t.lcp_ms},
    }
    return _clean({"timings": timings, "pageinfo": {"url": url, "cumulativeLayoutShift": t.cls}})


def visual_metrics(t: TrialRecord, progress: str | None) -> Json:
    """browsertime's ``visualMetrics`` of one iteration (``progress``: its VisualProgress)."""
    first, last = t.first_visual_change_ms, t.last_visual_change_ms
    return _clean(
        {
            "FirstVisualChange": first,
            "SpeedIndex": t.speed_index_ms,
            "VisualComplete85": t.visual_complete_85_ms,
            "VisualComplete95": t.visual_complete_95_ms,
            "VisualComplete99": t.visual_complete_99_ms,
            "LastVisualChange": last,
            "VisualReadiness": None if first is None or last is None else round(last - first, 3),
            "VisualProgress": progress,
        }
    )


def web_vitals(t: TrialRecord) -> Json:
    return _clean(
        {
            "ttfb": t.ttfb_ms,
            "firstContentfulPaint": t.fcp_ms,
            "largestContentfulPaint": t.lcp_ms,
            "cumulativeLayoutShift": t.cls,
            "totalBlockingTime": t.tbt_ms,
        }
    )


def progress_text(progress: Sequence[Sequence[float]]) -> str:
    """visualmetrics' "Visual Progress" line, ``ms=percent, ...``, from h2lab's progress."""
    return ", ".join(f"{int(t)}={math.floor(100 * p + 1e-9)}" for t, p in progress)


def _timestamp(started_at: str) -> str:
    """browsertime's ``localTime`` format, ``2026-11-26T08:00:00+00:00``."""
    when = dt.datetime.fromisoformat(started_at)
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.isoformat(timespec="seconds")


class _Stats:
    """browsertime's ``Statistics.addDeep``: numbers collected by key path."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, ...], list[float]] = defaultdict(list)

    def add(self, data: Any, path: tuple[str, ...] = ()) -> None:
        if isinstance(data, bool) or data is None:
            return
        if isinstance(data, int | float):
            self.values[path].append(float(data))
        elif isinstance(data, Mapping):
            for k, v in data.items():
                self.add(v, (*path, str(k)))

    def summarize(self) -> Json:
        out: Json = {}
        for path, values in self.values.items():
            node = out
            for key in path[:-1]:
                node = node.setdefault(key, {})
            node[path[-1]] = summary(values)
        return out


def to_fixed(x: float, decimals: int) -> float:
    """JavaScript's ``Number(x.toFixed(decimals))``: the nearest, a tie to the larger (so 390.5
    is 391, where Python's ``round`` gives 390)."""
    step = Decimal(1).scaleb(-decimals)
    return float(Decimal(x).quantize(step, rounding=ROUND_HALF_UP))


def summary(values: Sequence[float]) -> Json:
    """browsertime's ``summarizeDeep`` of one path: its statistics, rounded as browsertime
    rounds them (whole numbers; 4 decimals for a median in (0, 1), 2 for a fractional median
    in (1, 100); ties away from zero, as JavaScript's ``toFixed``). Percentiles by linear
    interpolation."""
    a = np.asarray(values, dtype=float)
    median = float(np.median(a))
    decimals = 0
    if 0 < median < 1:
        decimals = 4
    elif median != math.floor(median) and 1 < median < 100:
        decimals = 2
    mean, std = float(a.mean()), float(a.std())
    out: Json = {
        "median": to_fixed(median, decimals),
        "mean": to_fixed(mean, decimals),
        "mdev": to_fixed(std / math.sqrt(len(a)), 4),
        "rsd": 100 * std / mean if std > 0 else 0,
        "stddev": to_fixed(std, decimals),
    }
    for p in PERCENTILES:
        name = {0: "min", 100: "max"}.get(p, f"p{p}")
        out[name] = to_fixed(float(np.percentile(a, p)), decimals)
    return out


def result(
    cell: Cell,
    protocol: str,
    trials: Sequence[TrialRecord],
    urls: Mapping[int, str],
    progress: Mapping[int, str],
) -> Json:
    """One browsertime result (one URL's iterations) for a cell and protocol's trials.
    ``urls``: trial id -> its document's URL; ``progress``: trial id -> VisualProgress."""
    stats = _Stats()
    run: Json = {
        "info": {
            "url": urls.get(trials[0].id or 0, ""),
            "timestamp": _timestamp(trials[0].started_at),
            "connectivity": {"engine": "rattan", "profile": cell.network},
            "browser": {"name": browser_of(cell.client)},
            "description": f"{cell.describe()} | {protocol}",
            "extra": {**cell.columns(), "protocol": protocol},
        },
        "markedAsFailure": 0,
        "failureMessages": [],
        "timestamps": [],
        "browserScripts": [],
        "visualMetrics": [],
        "cpu": [],
        "googleWebVitals": [],
        "fullyLoaded": [],
        "errors": [],
    }
    for t in trials:
        scripts = browser_scripts(t, urls.get(t.id or 0, ""))
        visual = visual_metrics(t, progress.get(t.id or 0))
        run["timestamps"].append(_timestamp(t.started_at))
        run["browserScripts"].append(scripts)
        run["errors"].append([])
        stats.add(scripts)
        if visual:
            run["visualMetrics"].append(visual)
            stats.add({k: v for k, v in visual.items() if "Progress" not in k}, ("visualMetrics",))
        if t.tbt_ms is not None:
            cpu = {"longTasks": {"totalBlockingTime": t.tbt_ms}}
            run["cpu"].append(cpu)
            stats.add(cpu, ("cpu",))
        vitals = web_vitals(t)
        if vitals:
            run["googleWebVitals"].append(vitals)
            stats.add(vitals, ("googleWebVitals",))
        if t.fully_loaded_ms is not None:
            run["fullyLoaded"].append(t.fully_loaded_ms)
            stats.add(t.fully_loaded_ms, ("timings", "fullyLoaded"))
    run["statistics"] = stats.summarize()
    return run


def browser_groups(trials: Sequence[TrialRecord]) -> list[tuple[Cell, str, list[TrialRecord]]]:
    """The successful trials of every browser cell and protocol, in cell order."""
    groups: dict[tuple[Cell, str], list[TrialRecord]] = defaultdict(list)
    for t in latest_ok(trials):
        if browser_of(t.cell.client) is not None:
            groups[(t.cell, t.protocol)].append(t)
    ordered = sorted(groups, key=lambda k: (k[0].describe(), k[1]))
    return [(c, p, sorted(groups[(c, p)], key=lambda t: t.repetition)) for c, p in ordered]


def folder_name(n: int, cell: Cell, protocol: str) -> str:
    """``01-h2s-<the cell's levels>``, safe as a file name, at most 100 characters."""
    text = f"{protocol}-{cell.describe()}"
    safe = re.sub(r"[^A-Za-z0-9._=-]+", "_", text).strip("_")
    return f"{n:02d}-{safe}"[:100]


def write_browsertime(
    out: Path,
    groups: Sequence[tuple[Cell, str, list[TrialRecord]]],
    urls: Mapping[int, str],
    progress: Mapping[int, str],
) -> list[Path]:
    """``out/browsertime/<n>-<cell>/browsertime.json`` per group; the paths written."""
    written = []
    for n, (cell, protocol, trials) in enumerate(groups, 1):
        folder = out / EXPORT_DIR / folder_name(n, cell, protocol)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "browsertime.json"
        body = [result(cell, protocol, trials, urls, progress)]
        path.write_text(json.dumps(body, indent=1))
        written.append(path)
    return written


def export_browsertime(out_dir: Path) -> list[Path]:
    """Write the browsertime JSON of the results folder ``out_dir`` (SpecError naming the
    folder: it has no successful browser trial); the paths written."""
    from h2lab.errors import SpecError
    from h2lab.store import Store

    store = Store(out_dir)
    try:
        groups = browser_groups(store.trials())
        if not groups:
            raise SpecError(str(out_dir), "trials", "no successful browser trial to export")
        urls, progress = {}, {}
        for _, _, trials in groups:
            for t in trials:
                tid = t.id or 0
                rows = sorted(store.resources(tid), key=lambda r: float(r["start_ms"]))
                if rows:
                    urls[tid] = str(rows[0]["url"])
                p = store.artifacts_dir(t.trial_key, t.attempt) / VISUAL_PROGRESS
                if p.is_file():
                    progress[tid] = progress_text(json.loads(p.read_text())["progress"])
    finally:
        store.close()
    return write_browsertime(out_dir, groups, urls, progress)
