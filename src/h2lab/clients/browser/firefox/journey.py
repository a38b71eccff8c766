"""A journey's steps in Firefox (issue #57; what every engine shares:
:mod:`h2lab.clients.browser.journey`): over WebDriver BiDi, a click is ``input.performActions``
with a mouse (moved to the point, pressed, released) and typing one key press per character,
both trusted; scripts run by ``script.evaluate``, their value carried as JSON text (BiDi's own
serialisation of objects is verbose). BiDi names no connection, so the connections a step first
uses are read from the document's Resource Timing (:data:`~h2lab.clients.browser.journey.
CONNECTIONS_JS`)."""

from __future__ import annotations

from typing import Any

from h2lab.clients.browser import log as browser_log
from h2lab.clients.browser.firefox.bidi import Bidi, BidiError, Reply
from h2lab.clients.browser.firefox.tab import NAV_POLL_S, Tab, after_load, evaluate_json
from h2lab.clients.browser.journey import CONNECTIONS_JS, JourneySteps
from h2lab.errors import TrialFailed


class BidiSteps(JourneySteps):
    def __init__(self, tab: Tab, bidi: Bidi, entry_url: str, timeout_s: float) -> None:
        super().__init__(tab, tab.log, entry_url, timeout_s)
        self.bidi, self.firefox_tab = bidi, tab
        self.nav: Reply | None = None

    def evaluate(self, expression: str, doing: str) -> Any:
        wrapped = f"(async () => JSON.stringify(await ({expression})))()"
        context = self.firefox_tab.context
        return evaluate_json(self.bidi, context, wrapped, doing, max(self.left(), 1))

    def _actions(self, source: dict[str, Any]) -> None:
        params = {"context": self.firefox_tab.context, "actions": [source]}
        try:
            self.bidi.call("input.performActions", params, timeout_s=max(self.left(), 1))
        except BidiError as exc:
            raise TrialFailed(f"firefox: input failed: {exc.message or exc.error}") from None

    def click_at(self, x: float, y: float) -> None:
        moves = [
            {"type": "pointerMove", "x": round(x), "y": round(y), "origin": "viewport"},
            {"type": "pointerDown", "button": 0},
            {"type": "pointerUp", "button": 0},
        ]
        self._actions({"type": "pointer", "id": "h2lab-mouse",
                       "parameters": {"pointerType": "mouse"}, "actions": moves})  # fmt: skip

    def insert_text(self, text: str) -> None:
        keys = [{"type": t, "value": c} for c in text for t in ("keyDown", "keyUp")]
        self._actions({"type": "key", "id": "h2lab-keyboard", "actions": keys})

    def navigate(self, url: str) -> None:
        self.nav = self.bidi.send(
            "browsingContext.navigate",
            {"context": self.firefox_tab.context, "url": url, "wait": "none"},
        )

    def expect_load(self) -> None:
        tab = self.firefox_tab
        tab.signal.clear()
        tab.loaded = tab.navigation_failed = False
        tab.navigating = True

    def wait_load(self) -> None:
        tab = self.firefox_tab
        while not tab.loaded:
            if tab.closed:
                raise TrialFailed("the BiDi connection closed")
            if tab.navigation_failed:
                raise TrialFailed("the navigation failed")
            if self.nav is not None and self.nav.done():
                try:
                    self.nav.result(0)
                except BidiError as exc:
                    raise TrialFailed(f"navigation: {exc.message or exc.error}") from None
            if self.left() <= 0:
                raise TrialFailed("no load event before the trial's timeout")
            if tab.signal.wait(min(self.left(), NAV_POLL_S)):
                tab.signal.clear()
        self.nav = None

    def page_timing(self) -> dict[str, Any]:
        return after_load(self.bidi, self.firefox_tab.context, self.left())

    def new_connections(self, new: list[browser_log.Request], since_ms: float) -> dict[str, int]:
        counts = self.call(CONNECTIONS_JS, since_ms, "reading the connections")
        if not isinstance(counts, dict):
            return {}
        return {str(k): int(v) for k, v in counts.items() if isinstance(v, int | float) and v}
