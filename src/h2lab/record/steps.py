"""A journey's steps in ``h2lab record``'s browser (issue #57): the same steps as a trial's
(:mod:`h2lab.clients.browser.journey`), over the recorder's DevTools session, with trusted input;
nothing of them is measured, every response is recorded."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from h2lab.clients.browser import log as browser_log
from h2lab.clients.browser.journey import JourneySteps
from h2lab.errors import TrialFailed

if TYPE_CHECKING:
    from h2lab.record.chromium import _Recorder

STEP_TIMEOUT_S = 30.0
"""Longest wait for one DevTools answer of a step."""


class RecorderSteps(JourneySteps):
    def __init__(self, recorder: _Recorder, entry_url: str, timeout_s: float) -> None:
        super().__init__(recorder, browser_log.NetworkLog(), entry_url, timeout_s)
        self.recorder = recorder

    def _cdp(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        r = self.recorder
        return r.cdp.call(method, params, r.session, timeout_s=max(1.0, self.left()))

    def evaluate(self, expression: str, doing: str) -> Any:
        answer = self._cdp(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
        )
        if "exceptionDetails" in answer:
            text = answer["exceptionDetails"].get("text", "exception")
            raise TrialFailed(f"{doing} failed: {text}")
        return answer.get("result", {}).get("value")

    def click_at(self, x: float, y: float) -> None:
        self._cdp("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
        for kind in ("mousePressed", "mouseReleased"):
            press = {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}
            self._cdp("Input.dispatchMouseEvent", press)

    def insert_text(self, text: str) -> None:
        self._cdp("Input.insertText", {"text": text})

    def navigate(self, url: str) -> None:
        self._cdp("Page.navigate", {"url": url})

    def expect_load(self) -> None:
        self.recorder.loaded = False
        self.recorder.navigating = True
        self.recorder.changed.clear()

    def wait_load(self) -> None:
        r = self.recorder
        while not r.loaded:
            r.check()
            if not r.changed.wait(self.left()) and not r.loaded:
                raise TrialFailed("no load event before the recording's timeout")
            r.changed.clear()

    def page_timing(self) -> dict[str, Any]:
        return {}

    def new_connections(self, new: list[browser_log.Request], since_ms: float) -> dict[str, int]:
        return {}
