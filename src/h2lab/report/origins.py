"""The report's part "Which protocol carried each origin" (in the Reproducibility section): for
the ok h3 browser trials, per cell and origin, how many requests went over each protocol, read
from the stored resources (``resources.origin``, ``resources.protocol``). It shows what a
``discovery`` other than ``forced`` measured: a first view's document over h2, an origin's
requests over h3 only once the browser had learnt it, every request over h2 where UDP to 443
was blocked; and what ``h3_origins`` left on h2. At most :data:`MAX_TRIALS` trials of a cell
are read (the lowest ids), so a big store costs the report a bounded read."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from h2lab.report import html as h
from h2lab.report.model import factor_texts
from h2lab.spec.factors import Cell, report_columns
from h2lab.store import Store
from h2lab.store.frame import TrialFrame, TrialsIn, as_frame

TITLE = "Which protocol carried each origin (h3 trials)"
MAX_TRIALS = 50
"""Trials read per cell."""
PROTOCOLS = ("h1", "h2", "h3")
NOTE = (
    "Requests of the ok h3 browser trials (warm-ups not counted) by origin and by the protocol "
    "that carried them, as the browser reported it. With discovery forced every request goes "
    "over h3; with alt-svc a first view starts over h2 and an origin moves to h3 once the "
    "browser has learnt it; with udp-blocked every request falls back to TCP; with h3_origins "
    "other than all, the origins it leaves out stay on h2 "
    '(docs/servers.md, "How browsers find h3").'
)


@dataclass(frozen=True)
class OriginRow:
    cell: Cell
    origin: str
    trials: int
    """the cell's trials read (at most :data:`MAX_TRIALS`)"""
    requests: Mapping[str, int]
    """protocol -> requests of this origin over it, in those trials"""


def _h3_browser_ok(trials: TrialsIn) -> TrialFrame:
    """The latest ok attempt of each h3 browser trial (``failed_requests`` recorded)."""
    ok = as_frame(trials).latest_ok()
    protocols = ok.text("protocol")
    h3 = protocols.code_of("h3")
    browser = ~np.isnan(ok.number("failed_requests"))
    return ok.take((ok.number("warmup") == 0) & browser & (protocols.codes == h3))


def chosen_ids(trials: TrialsIn) -> dict[int, list[int]]:
    """Cell index (into the frame's ``cells``) -> the ids of its first :data:`MAX_TRIALS`
    h3 browser trials."""
    f = _h3_browser_ok(trials)
    ids = f.number("id")
    chosen: dict[int, list[int]] = {}
    for cell in np.unique(f.cell).tolist():
        mine = sorted(int(i) for i in ids[f.cell == cell].tolist())
        chosen[int(cell)] = mine[:MAX_TRIALS]
    return chosen


def origin_rows(
    trials: TrialsIn, resources: Mapping[int, Sequence[Mapping[str, Any]]]
) -> list[OriginRow]:
    """Per cell and origin, the requests of :func:`chosen_ids`' trials by protocol, from
    ``resources`` (trial id -> its rows, as ``Store.resources_of`` gives them)."""
    f = _h3_browser_ok(trials)
    rows = []
    for cell, ids in chosen_ids(f).items():
        counts: dict[str, Counter[str]] = {}
        for i in ids:
            for r in resources.get(i, ()):
                origin = str(r.get("origin") or "")
                counts.setdefault(origin, Counter())[str(r.get("protocol") or "?")] += 1
        for origin in sorted(counts):
            rows.append(OriginRow(f.cells[cell], origin, len(ids), dict(counts[origin])))
    return sorted(rows, key=lambda r: (r.cell, r.origin))


def _cells(r: OriginRow, shown: Sequence[str]) -> tuple[str, ...]:
    counts = (str(r.requests.get(p, 0)) for p in shown)
    return (*factor_texts(r.cell), r.origin, str(r.trials), *counts)


def render(rows: Sequence[OriginRow]) -> str:
    """The part's HTML; nothing without an h3 browser trial."""
    if not rows:
        return ""
    others = sorted({p for r in rows for p in r.requests} - set(PROTOCOLS))
    shown = (*PROTOCOLS, *others)
    headers = (*report_columns(), "origin", "trials", *(f"requests over {p}" for p in shown))
    body = [_cells(r, shown) for r in rows]
    first = len(report_columns()) + 1
    numeric = set(range(first, len(headers)))
    return h.h3(TITLE) + h.note(NOTE) + h.table(headers, body, numeric=numeric)


def origins_part(store: Store, trials: TrialsIn) -> str:
    """Read the chosen trials' resources and render them."""
    ids = [i for mine in chosen_ids(trials).values() for i in mine]
    return render(origin_rows(trials, store.resources_of(ids) if ids else {}))
