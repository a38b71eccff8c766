"""What a browser trial does when the page or the browser fails, the same for Chromium and
Firefox: a page that never loads fails at the trial's timeout and keeps its request log, a
failed request for one of the page's resources fails the load at once (``fail_on = "any"``),
and a browser killed during a load is a failed trial whose reason names the signal, after
which the next trial gets a new browser."""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from h2lab import clients, procs
from h2lab.artifacts import PAGE_HAR
from h2lab.errors import TrialFailed
from h2lab.net.lab import Lab, Link
from h2lab.pages import Page, Resource
from tests.har_schema import assert_valid_har_file
from tests.integration.test_chromium import (
    AT_ONCE,
    BROKEN,
    NEVER,
    SLOW,
    VIS_HOST,
    _ctx,
    _page,
    slow_lab,
)

__all__ = ["slow_lab"]  # the fixture, shared with the Chromium tests


@pytest.fixture(params=["chromium", "firefox"])
def browser(request: pytest.FixtureRequest) -> Iterator[clients.ClientAdapter]:
    client = clients.get(request.param)
    try:
        yield client
    finally:
        client.close()


@pytest.mark.alone
def test_timeout_and_crash_fail_the_trial_and_the_next_one_runs(
    slow_lab: tuple[Lab, Link, Path], browser: clients.ClientAdapter, tmp_path: Path
) -> None:
    lab, link, docroot = slow_lab
    name = browser.name
    never = _page(docroot, "never", NEVER)
    t0 = time.monotonic()
    unfinished = r"; 1 of \d+ requests unfinished: http://\S+/x\.png\?hold=30000 \([\d,]+ B "
    with pytest.raises(TrialFailed, match=r"within the trial timeout of 3 s .*" + unfinished):
        browser.load(never, "h1c", _ctx(lab, link, tmp_path / "never", timeout_s=3))
    # well before the image's 30 s hold ends: the browser's launch (up to 18 s on a loaded CI
    # machine) is in this time, so the bound is not the trial's 3 s
    assert time.monotonic() - t0 < 25
    # the failed load keeps its request log: the held image is there, marked unfinished
    entries = assert_valid_har_file(tmp_path / "never" / PAGE_HAR)["log"]["entries"]
    held = [e for e in entries if "hold=30000" in e["request"]["url"]]
    assert [e.get("_error") for e in held] == ["unfinished"]
    assert any("_error" not in e and e["response"]["status"] == 200 for e in entries)

    # a request for one of the page's resources failed: the load fails then, not at its timeout
    broken = _page(docroot, "broken", BROKEN)
    broken = Page(
        name=broken.name,
        origins=broken.origins,
        resources=(*broken.resources, Resource(VIS_HOST, "/y.png", 100, "image/png")),
        docroot=docroot,
        digest="t",
    )
    t0 = time.monotonic()
    failed = r"failed to load: 1 of \d+ requests .*/y\.png\?drop=1 \("
    strict = dataclasses.replace(_ctx(lab, link, tmp_path / "broken", timeout_s=20), fail_on="any")
    with pytest.raises(TrialFailed, match=failed):
        browser.load(broken, "h1c", strict)
    print(
        f"{name} broken: failed after {time.monotonic() - t0:.1f} s (timeout 20 s, image held 30 s)"
    )
    assert time.monotonic() - t0 < 10

    slow = _page(docroot, "slow", SLOW)
    pid = browser.browser_pid("h1c")  # type: ignore[attr-defined]
    assert pid is not None and procs.pid_alive(pid)
    killer = threading.Timer(1.5, lambda: os.kill(pid, signal.SIGKILL))
    killer.start()
    try:
        with pytest.raises(TrialFailed, match=rf"{name} \(h1c\) crashed: killed by SIGKILL"):
            browser.load(slow, "h1c", _ctx(lab, link, tmp_path / "slow"))
    finally:
        killer.cancel()
    # the next trial gets a new browser
    ok = browser.load(_page(docroot, "ok", AT_ONCE), "h1c", _ctx(lab, link, tmp_path / "ok"))
    assert ok.plt_ms is not None and ok.plt_ms > 0
    assert browser.browser_pid("h1c") != pid  # type: ignore[attr-defined]
