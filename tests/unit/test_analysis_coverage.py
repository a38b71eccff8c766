"""Replay coverage of a trial: each network request answered exact, by path, not recorded or
failed in the browser."""

from __future__ import annotations

from pathlib import Path

from h2lab.analysis.coverage import coverage
from h2lab.pages.manifest import Page, PageWriter


def _page(tmp_path: Path) -> Page:
    with PageWriter("cov", root=tmp_path / "pages") as w:
        w.add("https://a.test/", b"<html>", content_type="text/html")
        w.add("https://a.test/beacon?t=1520301377", b"{}", content_type="application/json")
        w.add("https://a.test/gone.png", None, content_type="text/html", status=404)
        return w.commit("https://a.test/")


def test_each_request_falls_in_one_group(tmp_path: Path) -> None:
    page = _page(tmp_path)
    rows = [
        {"url": "https://a.test/", "status": 200, "error": None},
        {"url": "https://a.test/beacon?t=1795656749", "status": 200, "error": None},
        {"url": "https://a.test/gone.png", "status": 404, "error": None},
        {"url": "https://a.test/never", "status": 404, "error": None},
        {"url": "https://ads.test/x", "status": None, "error": "net::ERR_NAME_NOT_RESOLVED"},
        {"url": "https://a.test/beacon?t=1", "status": None, "error": "net::ERR_BLOCKED_BY_ORB"},
        {"url": "data:image/png;base64,AAAA", "status": 200, "error": None},
    ]
    cov = coverage(page, rows)
    assert (cov.requests, cov.exact, cov.by_path, cov.not_recorded, cov.failed) == (6, 2, 1, 1, 2)
    assert cov.answered == 3
    assert cov.in_recording == 4  # the ORB-blocked beacon is held by path


def test_a_held_request_answered_with_another_status_is_not_counted_answered(
    tmp_path: Path,
) -> None:
    page = _page(tmp_path)
    cov = coverage(page, [{"url": "https://a.test/", "status": 500, "error": None}])
    assert (cov.answered, cov.not_recorded, cov.in_recording) == (0, 1, 1)
