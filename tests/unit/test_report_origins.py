"""The report's part "Which protocol carried each origin" (Reproducibility section) on stores
built in memory: per cell and origin the requests of the ok h3 browser trials by protocol, at
most MAX_TRIALS trials a cell, nothing without an h3 browser trial."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from h2lab.clients import ResourceTiming
from h2lab.report import origins, write_report
from h2lab.report.origins import TITLE, origin_rows, origins_part
from h2lab.results import TrialRecord
from h2lab.store import Store
from tests.unit.test_report_failed import tables
from tests.unit.test_report_model import trial


def h3_browser(rep: int, client: str = "chromium") -> TrialRecord:
    t = trial("h3", rep, 90.0, client=client, plt=100.0 + rep)
    return dataclasses.replace(t, failed_requests=0)


def res(origin: str, protocol: str, n: int) -> ResourceTiming:
    return ResourceTiming(f"https://{origin}/{n}", origin, 0.0, 5.0, 10.0, 100, protocol, "c0")


FIRST_VIEW = (
    res("o1", "h2", 0),  # the document: over TCP before h3 is known
    res("o1", "h3", 1),
    res("o1", "h3", 2),
    res("o2", "h2", 3),
)


def test_requests_per_origin_and_protocol_of_the_h3_browser_trials(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.add_trial(h3_browser(0), FIRST_VIEW)
    store.add_trial(h3_browser(1), FIRST_VIEW)
    store.add_trial(trial("h2s", 0, 90.0, client="chromium"), (res("o1", "h2", 0),))  # not h3
    store.add_trial(trial("h3", 0, 90.0), (res("o1", "h3", 0),))  # h2load: not a browser
    records = store.trials()
    rows = origin_rows(records, store.resources_of([r.id or 0 for r in records]))
    assert [(r.origin, r.trials, r.requests) for r in rows] == [
        ("o1", 2, {"h2": 2, "h3": 4}),
        ("o2", 2, {"h2": 2}),
    ]
    part = origins_part(store, records)
    assert TITLE in part
    (table,) = tables(part)
    assert [row[-5:] for row in table] == [("o1", "2", "0", "2", "4"), ("o2", "2", "0", "2", "0")]
    store.close()
    assert TITLE in write_report(tmp_path).read_text()


def test_at_most_max_trials_a_cell_are_read_and_none_without_h3(tmp_path: Path) -> None:
    store = Store(tmp_path)
    for rep in range(origins.MAX_TRIALS + 5):
        store.add_trial(h3_browser(rep), (res("o1", "h3", 0),))
    records = store.trials()
    (row,) = origin_rows(records, store.resources_of([r.id or 0 for r in records]))
    assert row.trials == origins.MAX_TRIALS and row.requests == {"h3": origins.MAX_TRIALS}
    store.close()
    assert origins_part(store, []) == ""
