"""The report of a real (tiny) experiment, h2load and Chromium: it opens in headless Chromium
with no console error and no request outside the file, and has every section."""

from __future__ import annotations

import csv
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
from playwright.sync_api import ConsoleMessage, Page, Request, sync_playwright

from h2lab.clients.browser.chromium.client import CHROMIUM
from h2lab.report import write_report
from h2lab.report.html import SECTIONS
from tests.integration.conftest import run_experiment

FACTORS = {
    "protocol": ["h1s", "h2s"],
    "network": ["rtt=10ms"],
    "page": ["synthetic:n=4,size=10KB,origins=1"],
    "client": ["h2load", "chromium:filmstrip=1"],
}
T = TypeVar("T")
VIEWER_FLAGS = [
    "--no-sandbox",  # root
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    records = run_experiment(out, "report-e2e", FACTORS, seed=7, repetitions=2)
    assert len(records) == 8
    assert all(r.status == "ok" for r in records), [r.error for r in records]
    write_report(out)
    return out


def view_offline(
    path: Path, read: Callable[[Page], T], settle_ms: float = 0
) -> tuple[T, list[str], list[str]]:
    """Open ``path`` in Chromium, offline: what ``read`` reads of the loaded page (``settle_ms``
    after the load), every request the page made (its own URL first), and its console errors,
    warnings and page errors."""
    url = path.resolve().as_uri()
    errors: list[str] = []
    requests: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=VIEWER_FLAGS)
        try:
            page = browser.new_page()

            def on_console(m: ConsoleMessage) -> None:
                if m.type in ("error", "warning"):
                    errors.append(f"{m.type}: {m.text}")

            def on_request(r: Request) -> None:
                requests.append(r.url)

            page.on("console", on_console)
            page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
            page.on("request", on_request)
            page.goto(url, wait_until="load")
            if settle_ms:
                page.wait_for_timeout(settle_ms)
            return read(page), requests, errors
        finally:
            browser.close()


def test_report_opens_offline_without_errors_and_has_every_section(report_dir: Path) -> None:
    path = report_dir / "report.html"
    url = path.resolve().as_uri()

    def read(page: Page) -> tuple[list[str], int, bool]:
        natural = "Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)"
        return (
            page.locator("h2").all_inner_texts(),
            page.locator("img").count(),
            page.evaluate(natural),
        )

    (headings, images, natural), requests, errors = view_offline(path, read)
    assert errors == []
    outside = [u for u in requests if u != url and not u.startswith("data:")]
    assert outside == []
    assert url in requests
    assert headings == list(SECTIONS.values())
    # filmstrips of both protocols were recorded (chromium:filmstrip=1) and embedded
    assert images >= 2
    assert natural


def test_report_sections_show_the_experiment(report_dir: Path) -> None:
    text = (report_dir / "report.html").read_text()
    # nothing is fetched from outside the file; the only links out are to the median trials'
    # files in the same results folder (artifacts/...), followed only when clicked
    assert not re.search(r"""src=["'](?!data:)""", text), "a resource out of the file"
    assert not re.search(r"""href=["'](?!data:|#|artifacts/)""", text), "a link out of the folder"
    assert 'href="artifacts/' in text and '/page.har">page.har</a>' in text
    for metric in ("pdt_ms", "plt_ms", "speed_index_ms"):
        assert f"{metric}, clients:" in text
    assert text.count('aria-label="waterfall h') == 2  # h1s and h2s side by side
    assert "data:image/jpeg;base64," in text
    assert "derived from resource timings" in text  # Chromium keeps no frame log
    assert "too few cells to fit a tree" in text  # 2 cells: one per client
    assert "nginx" in text and "h2lab (report)" in text


def test_exports_match_the_store(report_dir: Path) -> None:
    db = sqlite3.connect(report_dir / "results.sqlite")
    try:
        n_trials = db.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
        n_resources = db.execute("SELECT COUNT(*) FROM resources").fetchone()[0]
    finally:
        db.close()
    assert n_resources >= 8 * 5  # index + 4 objects per trial
    for table, n in (("trials", n_trials), ("resources", n_resources)):
        with (report_dir / f"{table}.csv").open(newline="") as f:
            assert len(list(csv.DictReader(f))) == n
        assert pq.read_table(report_dir / f"{table}.parquet").num_rows == n
