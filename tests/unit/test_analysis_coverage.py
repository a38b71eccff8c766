"""Replay coverage of a trial: each network request answered exact, by path, not recorded or
failed in the browser."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from h2lab.analysis.coverage import coverage, coverage_rows
from h2lab.pages.manifest import Page, PageWriter
from h2lab.report.coverage import render
from h2lab.results import TrialRecord
from tests.unit.test_report_model import trial


def _page(tmp_path: Path) -> Page:
    with PageWriter("cov", root=tmp_path / "pages") as w:
        w.add("https://a.test/", b"<html>", content_type="text/html")
        w.add("https://a.test/beacon?t=1520301377", b"{}", content_type="application/json")
        w.add("https://a.test/gone.png", None, content_type="text/html", status=404)
        w.add("https://a.test/poll?n=1&t=1520301377", b"1", content_type="application/json")
        w.add("https://a.test/poll?n=2&t=1520301377", b"2", content_type="application/json")
        return w.commit("https://a.test/")


def test_each_request_falls_in_one_group(tmp_path: Path) -> None:
    page = _page(tmp_path)
    rows: list[dict[str, object]] = [
        {"url": "https://a.test/", "status": 200, "error": None},
        {"url": "https://a.test/beacon?t=1795656749", "status": 200, "error": None},
        {"url": "https://a.test/gone.png", "status": 404, "error": None},
        {"url": "https://a.test/never", "status": 404, "error": None},
        {"url": "https://ads.test/x", "status": None, "error": "net::ERR_NAME_NOT_RESOLVED"},
        {"url": "https://a.test/beacon?t=1", "status": None, "error": "net::ERR_BLOCKED_BY_ORB"},
        {"url": "data:image/png;base64,AAAA", "status": 200, "error": None},
        {"url": "https://a.test/poll?n=2&t=1795656749", "status": 200, "error": None},
    ]
    cov = coverage(page, rows)
    assert (cov.requests, cov.exact, cov.by_query, cov.by_path) == (7, 2, 1, 1)
    assert (cov.not_recorded, cov.failed) == (1, 2)
    assert cov.answered == 4
    assert cov.in_recording == 5  # the ORB-blocked beacon is held by path
    assert page.match("GET", "https://a.test/poll?n=2&t=1795656749") == page.resources[4]


def test_a_held_request_answered_with_another_status_is_not_counted_answered(
    tmp_path: Path,
) -> None:
    page = _page(tmp_path)
    cov = coverage(page, [{"url": "https://a.test/", "status": 500, "error": None}])
    assert (cov.answered, cov.not_recorded, cov.in_recording) == (0, 1, 1)


def _trial(tid: int, protocol: str, digest: str | None, status: str = "ok") -> TrialRecord:
    t = trial(
        protocol, tid, 90.0, client="chromium", plt=100.0, page="warc:x.warc.gz", status=status
    )
    return dataclasses.replace(t, failed_requests=0, id=tid, page_digest=digest)


def test_rows_sum_the_ok_browser_trials_per_page_and_protocol(tmp_path: Path) -> None:
    page = _page(tmp_path)
    trials = [
        _trial(1, "h1s", page.digest),
        _trial(2, "h1s", page.digest),
        _trial(3, "h2s", page.digest),
        _trial(4, "h2s", "0" * 16),  # a page not on this machine
        _trial(5, "h2s", page.digest, status="failed"),  # not ok: not counted
        dataclasses.replace(trial("h1s", 6, 80.0), id=6),  # h2load: not a browser trial
    ]
    resources = {
        1: [{"url": "https://a.test/", "status": 200, "error": None}],
        2: [{"url": "https://a.test/", "status": 200, "error": None},
            {"url": "https://a.test/never", "status": 404, "error": None}],
        3: [{"url": "https://a.test/beacon?t=2", "status": 200, "error": None}],
    }  # fmt: skip
    rows, missing = coverage_rows(
        trials, {page.digest: page}.get, lambda tid: resources.get(tid, [])
    )
    assert [(r.page, r.protocol, r.client, r.trials) for r in rows] == [
        ("cov", "h1s", "chromium", 2),
        ("cov", "h2s", "chromium", 1),
    ]
    assert (rows[0].total.requests, rows[0].total.exact, rows[0].total.not_recorded) == (3, 2, 1)
    assert (rows[1].total.requests, rows[1].total.by_path) == (1, 1)
    assert missing == ["warc:x.warc.gz"]
    html = render(rows, missing)
    assert "Replay coverage" in html and "66.7" in html and "100.0" in html
    assert "Not on this machine, so not counted: warc:x.warc.gz." in html
    assert render([], []) == ""
