"""A hostile page end to end: script and markup in its URLs, title, headers, HAR comments, file
name and experiment name; imported, run in Chromium through the lab, reported, compared. The
report and ``compare.html``, opened in a real browser, run none of it and fetch nothing: each
carries a Content-Security-Policy that allows only its own style, and every text is escaped.
The test's own detector is checked first, on a page that does run the payload."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page

from h2lab.report import write_report
from tests.integration.conftest import run_experiment
from tests.integration.test_report import view_offline

PWN = "window.__pwned=1"
"""What every payload does when it runs; a fetch would show as a request too."""
PAYLOADS = (
    f"<script>{PWN}</script>",
    f'"><svg onload={PWN}>',
    f"'><img src=x onerror={PWN}>",
    "<script src=https://evil.h2lab.test/x.js></script>",
)
NAME = f"hostile <script>{PWN}</script>"


def _entry(
    url: str, content_type: str, body: bytes, headers: list[tuple[str, str]]
) -> dict[str, Any]:
    hs = [{"name": k, "value": v} for k, v in [("content-type", content_type), *headers]]
    return {
        "pageref": "p",
        "comment": PAYLOADS[0],
        "request": {"method": "GET", "url": url, "headers": [], "comment": PAYLOADS[1]},
        "response": {
            "status": 200,
            "headers": hs,
            "content": {
                "mimeType": content_type,
                "encoding": "base64",
                "text": base64.b64encode(body).decode(),
            },
        },
    }


def hostile_har(folder: Path) -> Path:
    """A HAR whose page, URLs, headers and comments carry :data:`PAYLOADS`."""
    q = "?q=" + PAYLOADS[0]  # raw: a HAR keeps its URLs as the recorder wrote them
    html = (
        f"<!doctype html><title>{PAYLOADS[0]}</title>"
        f'<img src="/i.png?q={PAYLOADS[2]}"><p>{PAYLOADS[1]}</p>'
    ).encode()
    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAfbLI3wAAAABJRU5ErkJggg=="
    )
    link = f'</i.png?q={PAYLOADS[1]}>; rel=preload; as=image; title="{PAYLOADS[0]}"'
    entries = [
        _entry("https://site.h2lab.test/", "text/html", html, [("link", link)]),
        _entry(
            f"https://site.h2lab.test/i.png?q={PAYLOADS[2]}",
            "image/png",
            png,
            [("content-disposition", f'inline; filename="{PAYLOADS[3]}"')],
        ),
        _entry(f"https://site.h2lab.test/x.css{q}", "text/css", b"p{}", []),
    ]
    har = {
        "log": {
            "version": "1.2",
            "creator": {"name": PAYLOADS[0], "version": "1"},
            "pages": [{"id": "p", "title": PAYLOADS[0], "comment": PAYLOADS[3]}],
            "entries": entries,
            "comment": PAYLOADS[2],
        }
    }
    path = folder / f"{PAYLOADS[1]}.har"
    path.write_text(json.dumps(har))
    return path


def open_offline(path: Path) -> tuple[object, list[str], list[str], int]:
    """Open ``path`` in Chromium: (window.__pwned, other requests, console errors, scripts)."""

    def read(page: Page) -> tuple[object, int]:
        return page.evaluate("window.__pwned"), page.evaluate("document.scripts.length")

    # 300 ms: an onload/onerror payload would have run by then
    (pwned, scripts), requests, errors = view_offline(path, read, settle_ms=300)
    url = path.resolve().as_uri()
    return pwned, [u for u in requests if u != url], errors, scripts


def test_the_detector_sees_a_payload_that_runs(tmp_path: Path) -> None:
    control = tmp_path / "control.html"
    control.write_text(f"<!doctype html><p>{PAYLOADS[2]}</p><script>fetch('data:,x')</script>")
    pwned, requests, _, _ = open_offline(control)
    assert pwned == 1 and requests  # the img onerror ran; the fetch and the img were requests


@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    har = hostile_har(folder)
    out = folder / "a"
    factors = {
        "protocol": ["h2s"],
        "network": ["rtt=10ms"],
        "page": [f"har:{har}"],
        "client": ["chromium"],
    }
    records = run_experiment(out, NAME, factors, seed=3, repetitions=2)
    assert [r.status for r in records] == ["ok", "ok"], [r.error for r in records]
    write_report(out)
    shutil.copytree(out, folder / "b")
    done = subprocess.run(
        [sys.executable, "-m", "h2lab", "compare", str(out), str(folder / "b")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return folder


@pytest.mark.parametrize("page", ["a/report.html", "b/compare.html"])
def test_report_and_compare_run_no_script_and_fetch_nothing(reported: Path, page: str) -> None:
    path = reported / page
    text = path.read_text()
    assert "&lt;script&gt;" in text  # the hostile text did reach the page, escaped
    assert "<script" not in text.lower()
    assert not [p for p in PAYLOADS if p in text]  # none raw: each escaped where it shows
    assert 'http-equiv="Content-Security-Policy"' in text and "default-src 'none'" in text
    pwned, requests, errors, scripts = open_offline(path)
    assert pwned is None
    assert [u for u in requests if not u.startswith("data:")] == []
    assert errors == []  # no CSP violation either: the page's own style is allowed by hash
    assert scripts == 0
