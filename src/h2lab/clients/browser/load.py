"""What a browser's measured load is the same in every engine: the URL it navigates to, its
deadline, the line of a load that did not finish, and the network-idle wait of option
``idle``. Each engine's tab (:mod:`~h2lab.clients.browser.chromium.tab`,
:mod:`~h2lab.clients.browser.firefox.tab`) drives its own protocol around these."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from h2lab.clients.browser import log as browser_log
from h2lab.errors import TrialFailed
from h2lab.pages import Page
from h2lab.spec.protocols import url_for


def page_url(page: Page, protocol: str) -> str:
    """The URL the browser navigates to: the page's entry over ``protocol``."""
    return url_for(page.entry, protocol)


def time_left(timeout_s: float) -> Callable[[], float]:
    """Seconds left, each time it is called, of ``timeout_s`` from now (never below 0)."""
    deadline = time.monotonic() + timeout_s

    def left() -> float:
        return max(0.0, deadline - time.monotonic())

    return left


def no_load_event(url: str, timeout_s: float, log: browser_log.NetworkLog) -> TrialFailed:
    """The failure of a load whose load event did not come within the trial's timeout."""
    return TrialFailed(
        f"page did not finish loading within the trial timeout of {timeout_s:g} s "
        f"(no load event for {url}{browser_log.describe_unfinished(log)})"
    )


class Watched(Protocol):
    """A tab whose network events are watched."""

    last_network_s: float
    """host monotonic time of the last network event"""


def wait_network_idle(tab: Watched, idle_ms: float, left: Callable[[], float]) -> None:
    """With option ``idle``: wait until no network event came for ``idle_ms`` (WebPageTest's
    rule; bounded by the trial's deadline: a page that never goes quiet ends its wait there
    without failing)."""
    idle_s = idle_ms / 1000
    while idle_s and left() > 0:
        quiet = time.monotonic() - tab.last_network_s
        if quiet >= idle_s:
            return
        time.sleep(min(idle_s - quiet, left()))
