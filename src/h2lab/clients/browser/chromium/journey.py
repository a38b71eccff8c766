"""A journey's steps in Chromium (issue #57; what every engine shares:
:mod:`h2lab.clients.browser.journey`): over DevTools, a click is ``Input.dispatchMouseEvent``
(moved, pressed, released) and typing ``Input.insertText``, in a trial's tab and in the
recorder's alike (:class:`DevToolsSteps`); the connections a step first uses are the network
log's (Chromium names each request's connection)."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from h2lab.clients.browser import log as browser_log
from h2lab.clients.browser.chromium.cdp import DevTools
from h2lab.clients.browser.chromium.tab import Tab, after_load, evaluate
from h2lab.clients.browser.journey import JourneySteps
from h2lab.errors import TrialFailed


class DevToolsSteps(JourneySteps):
    """Trusted input, navigation and evaluation over a DevTools session (its :attr:`cdp` and
    :attr:`session`), each call bounded by the time the journey has left."""

    cdp: DevTools

    @property
    @abstractmethod
    def session(self) -> str:
        """The page's DevTools session now."""

    def _call(self, method: str, params: dict[str, Any]) -> Any:
        return self.cdp.call(method, params, self.session, timeout_s=max(1.0, self.left()))

    def evaluate(self, expression: str, doing: str) -> Any:
        return evaluate(self.cdp, self.session, expression, doing, max(1.0, self.left()))

    def click_at(self, x: float, y: float) -> None:
        self._call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
        for kind in ("mousePressed", "mouseReleased"):
            press = {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}
            self._call("Input.dispatchMouseEvent", press)

    def insert_text(self, text: str) -> None:
        self._call("Input.insertText", {"text": text})

    def navigate(self, url: str) -> None:
        self._call("Page.navigate", {"url": url})


class CdpSteps(DevToolsSteps):
    def __init__(self, tab: Tab, cdp: DevTools, entry_url: str, timeout_s: float) -> None:
        super().__init__(tab, tab.log, entry_url, timeout_s)
        self.cdp, self.chromium_tab = cdp, tab
        self.seen = {
            (browser_log.host_of(r.url), r.connection)
            for r in tab.log.requests.values()
            if r.connection and not r.from_cache
        }

    @property
    def session(self) -> str:
        return self.chromium_tab.session

    def expect_load(self) -> None:
        self.chromium_tab.loaded = False
        self.chromium_tab.navigating()

    def wait_load(self) -> None:
        tab = self.chromium_tab
        while not tab.loaded:
            if tab.crashed or tab.closed:
                raise TrialFailed("the page's renderer is gone")
            if not tab.signal.wait(self.left()) and not tab.loaded:
                raise TrialFailed("no load event before the trial's timeout")
            tab.signal.clear()

    def page_timing(self) -> dict[str, Any]:
        return after_load(self.cdp, self.chromium_tab.session)

    def new_connections(self, new: list[browser_log.Request], since_ms: float) -> dict[str, int]:
        counts: dict[str, int] = {}
        for r in new:
            key = (browser_log.host_of(r.url), r.connection or "")
            if not key[1] or r.from_cache or key in self.seen:
                continue
            self.seen.add(key)
            counts[key[0]] = counts.get(key[0], 0) + 1
        return counts
