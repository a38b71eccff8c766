"""The report's part "Requests that failed in the browser" (Reproducibility section) on stores
built in memory: counts per cell and protocol, the top (URL, error) pairs in order, one line
when no request failed, nothing for a store without browser trials."""

from __future__ import annotations

import dataclasses
import re
from html import escape
from pathlib import Path
from typing import Any

from h2lab.clients import ResourceTiming
from h2lab.report import write_report
from h2lab.report.failed import NONE_FAILED, TITLE, failed_part
from h2lab.results import TrialRecord
from h2lab.store import Store
from tests.unit.test_report_build import section_html
from tests.unit.test_report_model import trial

ORB = "net::ERR_BLOCKED_BY_ORB"
RESET = "net::ERR_CONNECTION_RESET"
FAR = "rtt=100ms"


def browser(protocol: str, rep: int, failed: int | None, **kw: Any) -> TrialRecord:
    t = trial(protocol, rep, 90.0, client="chromium", plt=100.0 + rep, **kw)
    return dataclasses.replace(t, failed_requests=failed)


def res(url: str, error: str | None = None) -> ResourceTiming:
    return ResourceTiming(url, "o1", 0.0, None, 10.0, 0 if error else 100, "h2", "c0", error=error)


DOC = res("https://o1/index.html")


def tables(text: str) -> list[list[tuple[str, ...]]]:
    """Every table of ``text``: its body rows, each a tuple of cell texts."""
    out = []
    for body in re.findall(r"<tbody>(.*?)</tbody>", text, re.S):
        rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
        out.append([tuple(re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)) for r in rows])
    return out


def failed_html(text: str) -> str:
    """The failed-requests part of the report (from its heading to the seeds' details)."""
    repro = section_html(text, "repro")
    start = repro.index(f"<h3>{TITLE}</h3>")
    return repro[start : repro.index("<details>", start)]


def test_failed_requests_per_cell_and_protocol_and_the_top_pairs(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.add_trial(
        browser("h1s", 0, 2), (DOC, res("https://o2/a.js", ORB), res("https://o3/b", RESET))
    )
    store.add_trial(browser("h1s", 1, 0), (DOC,))
    store.add_trial(browser("h2s", 0, 1), (DOC, res("https://o2/a.js", ORB)))
    store.add_trial(browser("h2s", 1, 0), (DOC,))
    far = (DOC, res("https://o2/a.js", ORB), res("https://o3/b", RESET), res("https://o1/c", ORB))
    store.add_trial(browser("h2s", 0, 3, network=FAR), far)
    store.add_trial(browser("h1s", 0, 0, network=FAR), (DOC,))
    store.add_trial(browser("h1s", 1, 4, network=FAR, status="failed"), (res("https://x/", ORB),))
    warm = dataclasses.replace(browser("h2s", 9, 5), warmup=True)
    store.add_trial(warm, (res("https://warm/", ORB),))
    store.add_trial(trial("h2s", 0, 80.0), (DOC,))  # h2load: no failed_requests
    store.close()
    part = failed_html(write_report(tmp_path).read_text())
    assert (
        "3 of 6 ok browser trials (warm-ups not counted) had a request fail in the browser, "
        "6 failed requests in all" in part
    )
    cells, top = tables(part)
    assert [r[-4:] for r in cells] == [
        ("h2s", "1", "1", "3"),
        ("h1s", "2", "1", "2"),
        ("h2s", "2", "1", "1"),
    ]
    assert [r[1] for r in cells] == [FAR, "rtt=20ms", "rtt=20ms"]
    assert "The 3 most frequent failing (URL, error) pairs" in part
    assert top == [
        ("https://o2/a.js", ORB, "3"),
        ("https://o3/b", RESET, "2"),
        ("https://o1/c", ORB, "1"),
    ]


def test_no_failed_request_is_one_line(tmp_path: Path) -> None:
    store = Store(tmp_path)
    for r in range(2):
        store.add_trial(browser("h1s", r, 0), (DOC,))
        store.add_trial(browser("h2s", r, 0), (DOC,))
    store.close()
    repro = section_html(write_report(tmp_path).read_text(), "repro")
    assert f'<h3>{TITLE}</h3><p class="note">{escape(NONE_FAILED)}</p><details>' in repro
    assert repro.count(TITLE) == 1


def test_h2load_only_store_shows_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path)
    for r in range(2):
        store.add_trial(trial("h1s", r, 100.0), (DOC,))
        store.add_trial(trial("h2s", r, 90.0), (DOC,))
    store.close()
    repro = section_html(write_report(tmp_path).read_text(), "repro")
    assert TITLE not in repro
    assert escape(NONE_FAILED) not in repro


class _Counting:
    """A store whose ``resources`` records which trials it was asked for."""

    def __init__(self, rows: dict[int, list[dict[str, Any]]]) -> None:
        self.rows = rows
        self.asked: list[int] = []

    def resources(self, trial_id: int) -> list[dict[str, Any]]:
        self.asked.append(trial_id)
        return self.rows.get(trial_id, [])


def test_only_the_trials_with_a_failed_request_have_their_resources_read() -> None:
    records = [
        dataclasses.replace(browser("h2s", 0, 0), id=1),
        dataclasses.replace(browser("h2s", 1, 1), id=2),
        dataclasses.replace(trial("h1s", 0, 80.0), id=3),
    ]
    store = _Counting({2: [{"url": "https://o2/a.js", "error": ORB}]})
    html = failed_part(store, records)  # type: ignore[arg-type]
    assert store.asked == [2]
    assert tables(html)[1] == [("https://o2/a.js", ORB, "1")]
