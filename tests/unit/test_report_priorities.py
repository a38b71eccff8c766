"""The report's "Priority signals" part: what each client said of its requests' priorities,
counted by the store over the ok trials."""

from __future__ import annotations

from pathlib import Path

from h2lab.clients import ResourceTiming
from h2lab.report import write_report
from h2lab.report.priorities import TITLE
from h2lab.results import TrialRecord
from h2lab.store import Store
from tests.unit.test_report_build import section_html
from tests.unit.test_report_failed import tables
from tests.unit.test_report_model import trial


def browser(client: str, rep: int, status: str = "ok") -> TrialRecord:
    return trial("h3", rep, 90.0, client=client, plt=100.0 + rep, status=status)


def res(
    path: str, priority: str | None, field: str | None, update: str | None = None
) -> ResourceTiming:
    return ResourceTiming(
        f"https://o1{path}", "o1", 0.0, None, 10.0, 100, "h3", "c0", priority=priority,
        priority_field=field, priority_update=update,
    )  # fmt: skip


def test_the_store_counts_each_clients_signals_and_the_report_shows_them(tmp_path: Path) -> None:
    store = Store(tmp_path)
    for rep in (0, 1):
        store.add_trial(
            browser("chromium", rep),
            (
                res("/", "VeryHigh", "u=0, i"),
                res("/a.css", "VeryHigh", "u=0"),
                res(f"/img{rep}.png", "Low", "u=4, i", update="High" if rep else None),
            ),
        )
    store.add_trial(browser("firefox", 0), (res("/", "u=0, i", "u=0, i"),))
    store.add_trial(browser("firefox", 1, status="failed"), (res("/", "u=1", "u=1"),))
    store.add_trial(trial("h3", 0, 80.0), (res("/x", None, None),))  # curl: says nothing
    assert store.priority_signals() == [
        ("chromium", "h3", "Low", "u=4, i", 2, 1),
        ("chromium", "h3", "VeryHigh", "u=0", 2, 0),
        ("chromium", "h3", "VeryHigh", "u=0, i", 2, 0),
        ("firefox", "h3", "u=0, i", "u=0, i", 1, 0),
    ]
    store.close()
    repro = section_html(write_report(tmp_path).read_text(), "repro")
    part = repro[repro.index(f"<h3>{TITLE}</h3>") :]
    rows = tables(part)[0]
    assert rows[0] == ("chromium", "h3", "Low", "u=4, i", "2", "1")
    assert len(rows) == 4
