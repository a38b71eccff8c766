"""The Chromium client's tabs between trials (``Chromium._put_away``): made five at a time,
a measured one frozen and kept while others are ready, every kept one closed when the next
five are made, one quiet wait per batch. A fake DevTools connection records the commands."""

from __future__ import annotations

import subprocess
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from h2lab.clients.browser.chromium import client as chromium
from h2lab.clients.browser.chromium.options import Options
from h2lab.clients.browser.chromium.tab import Tab
from tests.unit.test_clients_browser_chromium_tab import FakeDevTools


class CountingContexts(FakeDevTools):
    """Answers the commands of a new tab with a new context and session each time."""

    def __init__(self, failing: tuple[str, ...] = ()) -> None:
        super().__init__(
            {
                "Target.createBrowserContext": lambda p, s: {"browserContextId": self._next("c")},
                "Target.createTarget": lambda p, s: {"targetId": "t"},
                "Browser.getWindowForTarget": lambda p, s: {"windowId": 1},
                "Target.attachToTarget": lambda p, s: {"sessionId": self._next("s")},
            },
            failing,
        )
        self.counts: dict[str, int] = {}

    def _next(self, kind: str) -> str:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        return f"{kind}{self.counts[kind]}"

    def sent_for(self, method: str) -> list[Mapping[str, Any]]:
        return [p for m, p, _ in self.sent if m == method]


@pytest.fixture
def quiet_waits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    waits: list[int] = []
    monkeypatch.setattr(chromium, "wait_quiet", lambda cdp: waits.append(1))
    return waits


def browser(cdp: FakeDevTools, ready: int = 0) -> chromium._Browser:
    proc = subprocess.Popen(["true"])
    proc.wait()
    handle = chromium._Browser(proc, cdp, "ns", 0, Path("/nonexistent"), Path("/nonexistent"))  # type: ignore[arg-type]
    handle.ready = deque(Tab(f"ready{i}", f"rs{i}") for i in range(ready))
    return handle


def test_a_measured_tab_is_frozen_and_kept_while_made_tabs_are_ready(
    quiet_waits: list[int],
) -> None:
    cdp = CountingContexts()
    client = chromium.Chromium(Options())
    handle = browser(cdp, ready=2)
    client._put_away(handle, Tab("used1", "us1"))
    assert [(m, p, s) for m, p, s in cdp.sent] == [
        ("Page.setWebLifecycleState", {"state": "frozen"}, "us1")
    ]
    assert [t.context_id for t in handle.used] == ["used1"]
    assert quiet_waits == []  # nothing started or went: no wait before the next load


def test_with_no_tab_ready_the_kept_ones_close_and_five_are_made_with_one_wait(
    quiet_waits: list[int],
) -> None:
    cdp = CountingContexts()
    client = chromium.Chromium(Options())
    handle = browser(cdp)
    handle.used = [Tab("used1", "us1"), Tab("used2", "us2")]
    client._put_away(handle, Tab("used3", "us3"))
    closed = [p["browserContextId"] for p in cdp.sent_for("Target.disposeBrowserContext")]
    assert closed == ["used1", "used2", "used3"]
    assert len(cdp.sent_for("Target.createBrowserContext")) == chromium.TABS_AHEAD == 5
    assert sorted(t.context_id for t in handle.ready) == [f"c{i}" for i in range(1, 6)]
    assert handle.used == [] and quiet_waits == [1]
    assert cdp.sent_for("Page.setWebLifecycleState") == []


def test_a_tab_that_cannot_be_frozen_is_closed_at_once_and_the_browser_let_be_quiet(
    quiet_waits: list[int],
) -> None:
    cdp = CountingContexts(failing=("Page.setWebLifecycleState",))
    client = chromium.Chromium(Options())
    handle = browser(cdp, ready=1)
    client._put_away(handle, Tab("used1", "us1"))
    closed = [p["browserContextId"] for p in cdp.sent_for("Target.disposeBrowserContext")]
    assert closed == ["used1"] and handle.used == [] and quiet_waits == [1]
    assert len(handle.ready) == 1


def test_take_ready_makes_five_and_gives_the_first(quiet_waits: list[int]) -> None:
    cdp = CountingContexts()
    client = chromium.Chromium(Options())
    handle = browser(cdp)
    tab = client._take_ready(handle)
    assert len(handle.ready) == 4 and tab not in handle.ready and quiet_waits == [1]
    assert client._take_ready(handle) is not tab and len(handle.ready) == 3


def test_a_browser_restarted_every_trial_makes_one_tab(quiet_waits: list[int]) -> None:
    cdp = CountingContexts()
    client = chromium.Chromium(Options(restart=True))
    client._take_ready(browser(cdp))
    assert len(cdp.sent_for("Target.createBrowserContext")) == 1
