"""A journey's steps in Chromium (issue #57): after the first step, measured as any page load
(:func:`~h2lab.clients.browser.chromium.tab.measure`), the others in the same tab, each timed
and written to the trial's ``steps.json``.

Input is trusted, as a user's: a click is ``Input.dispatchMouseEvent`` at the element's centre
(scrolled into view), typing ``Input.insertText`` into the focused element, a form submitted by
a click on its submit button. A script's ``element.click()`` would be untrusted, and the Event
Timing API, which measures an interaction's latency to the next paint as INP does, has no entry
for it. Before each step an observer of Event Timing entries (all of 16 ms and more; the
buffered ones are only those of 104 ms and more) is put in the page; after it, the longest
entry with an ``interactionId`` is the step's ``interaction_ms``.

Per step: its duration (the action to the end of its wait), the requests it began, the
connections first used during it per origin (none where the steps reuse the first's), the
document's URL after it, and for a step that loaded a document its timing (TTFB, FCP, LCP and
the load event, ms from its navigation's start).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from h2lab.clients.browser import log as browser_log
from h2lab.clients.browser.chromium.cdp import DevTools
from h2lab.clients.browser.chromium.tab import Tab, after_load, evaluate
from h2lab.clients.browser.load import time_left, wait_network_idle
from h2lab.errors import TrialFailed
from h2lab.results import LoadResult, StepTiming
from h2lab.spec.journey import QUIET_MS, Journey, Step

STEPS_FILE = "steps.json"
SHOWN_CHARS = 300
"""How much of a document's text a step's result keeps: what the page showed (the account
page's "Signed in as alice"), not the page."""
CSS_POLL_S = 0.05

_CENTRE_JS = """(sel) => {
  const e = document.querySelector(sel);
  if (!e) return null;
  e.scrollIntoView({block: 'center', inline: 'center'});
  const r = e.getBoundingClientRect();
  return [r.left + r.width / 2, r.top + r.height / 2];
}"""
_SUBMITTER_JS = """(sel) => {
  const f = document.querySelector(sel);
  if (!f) return null;
  const b = f.querySelector('[type=submit], button:not([type])');
  if (!b) { f.requestSubmit(); return 'submitted'; }
  b.scrollIntoView({block: 'center', inline: 'center'});
  const r = b.getBoundingClientRect();
  return [r.left + r.width / 2, r.top + r.height / 2];
}"""
_FOCUS_JS = """(sel) => {
  const e = document.querySelector(sel);
  if (!e) return false;
  e.focus();
  return true;
}"""
_SCROLL_JS = """(to) => {
  if (to === 'top') { window.scrollTo(0, 0); return true; }
  if (to === 'bottom') { window.scrollTo(0, document.documentElement.scrollHeight); return true; }
  if (to.endsWith('px') && /^[0-9]+px$/.test(to)) { window.scrollTo(0, parseInt(to)); return true; }
  const e = document.querySelector(to);
  if (!e) return false;
  e.scrollIntoView();
  return true;
}"""
_WATCH_EVENTS_JS = """(() => {
  if (window.__h2labEvents) { window.__h2labEvents.length = 0; return; }
  window.__h2labEvents = [];
  new PerformanceObserver(list => {
    for (const e of list.getEntries()) if (e.interactionId) window.__h2labEvents.push(e.duration);
  }).observe({type: 'event', durationThreshold: 16});
})()"""
_SHOWN_JS = (
    f"[location.href, (document.body ? document.body.innerText : '').slice(0, {SHOWN_CHARS})]"
)
_READ_EVENTS_JS = """new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() =>
  setTimeout(() => done(window.__h2labEvents ? window.__h2labEvents.slice() : []), 50))))"""


@dataclass(frozen=True)
class StepResult:
    """What one step did and took."""

    index: int
    name: str
    kind: str
    duration_ms: float
    requests: int
    """requests the step began"""
    new_connections: dict[str, int]
    """origin -> connections first used during the step"""
    url: str
    """the document's URL once the step ended"""
    shown: str
    """the start of the document's text once the step ended (:data:`SHOWN_CHARS`)"""
    timing: dict[str, float | None] | None = None
    """for a step that loaded a document: ttfb_ms, fcp_ms, lcp_ms, load_ms (from its start)"""
    interaction_ms: float | None = None
    """the longest Event Timing duration of an interaction during the step"""

    def row(self) -> StepTiming:
        """The step as the store keeps it (``steps``)."""
        t = self.timing or {}
        return StepTiming(
            self.index, self.name, self.kind, self.duration_ms, self.requests,
            sum(self.new_connections.values()), json.dumps(self.new_connections, sort_keys=True),
            self.url[:2000], t.get("ttfb_ms"), t.get("fcp_ms"), t.get("lcp_ms"), t.get("load_ms"),
            self.interaction_ms,
        )  # fmt: skip


def step_url(target: str, entry_url: str) -> str:
    """A navigate step's target as the trial's URL: a path on the entry's origin, or a URL on
    one of the page's origins with the entry's scheme and port (the trial's protocol's)."""
    if target.startswith("/"):
        return urljoin(entry_url, target)
    parts, entry = urlsplit(target), urlsplit(entry_url)
    netloc = (parts.hostname or "") + (f":{entry.port}" if entry.port else "")
    return parts._replace(scheme=entry.scheme, netloc=netloc).geturl()


class Steps:
    """Runs a journey's steps after its first in ``tab`` (the first step's load done)."""

    def __init__(self, tab: Tab, cdp: DevTools, entry_url: str, timeout_s: float) -> None:
        self.tab, self.cdp, self.entry_url = tab, cdp, entry_url
        self.left = time_left(timeout_s)
        self.seen = self._connections(set())

    def run(self, journey: Journey) -> list[StepResult]:
        out = []
        for i, step in enumerate(journey.steps[1:], start=1):
            try:
                out.append(self._step(i, step))
            except TrialFailed as exc:
                raise TrialFailed(f"journey step {i} ({step.name}): {exc}") from None
        return out

    def _call(self, js: str, arg: object, doing: str) -> Any:
        return evaluate(self.cdp, self.tab.session, f"({js})({json.dumps(arg)})", doing)

    def _step(self, i: int, step: Step) -> StepResult:
        before = set(self.tab.log.requests)
        evaluate(self.cdp, self.tab.session, _WATCH_EVENTS_JS, "watching interactions")
        navigates = step.wait == "load"
        if navigates:
            self.tab.loaded = False
            self.tab.navigating()
        t0 = time.monotonic()
        self._act(step)
        self._wait(step)
        duration_ms = (time.monotonic() - t0) * 1000
        timing = timing_of(after_load(self.cdp, self.tab.session)) if navigates else None
        events = [] if navigates else self._events()
        url, shown = evaluate(self.cdp, self.tab.session, _SHOWN_JS, "reading the document")
        new = [r for k, r in self.tab.log.requests.items() if k not in before]
        return StepResult(
            i, step.name, step.kind, round(duration_ms, 1), len(new),
            self._new_connections(new), str(url), str(shown), timing,
            round(max(events), 1) if events else None,
        )  # fmt: skip

    def _act(self, step: Step) -> None:
        kind, target = step.kind, step.target
        if kind == "navigate":
            self.cdp.call("Page.navigate", {"url": step_url(target, self.entry_url)},
                          self.tab.session, timeout_s=self.left())  # fmt: skip
        elif kind == "click":
            self._click(self._call(_CENTRE_JS, target, "finding the element"), target)
        elif kind == "submit":
            found = self._call(_SUBMITTER_JS, target, "finding the form")
            if found != "submitted":
                self._click(found, target)
        elif kind == "type":
            if not self._call(_FOCUS_JS, target, "finding the field"):
                raise TrialFailed(f"{target!r} matches nothing")
            self.cdp.call("Input.insertText", {"text": step.text}, self.tab.session)
        elif kind == "scroll" and not self._call(_SCROLL_JS, target, "scrolling"):
            raise TrialFailed(f"{target!r} matches nothing")

    def _click(self, centre: object, target: str) -> None:
        if not isinstance(centre, list) or len(centre) != 2:
            raise TrialFailed(f"{target!r} matches nothing")
        x, y = (float(c) for c in centre)
        s = self.tab.session
        self.cdp.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y}, s)
        for kind in ("mousePressed", "mouseReleased"):
            press = {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}
            self.cdp.call("Input.dispatchMouseEvent", press, s)

    def _wait(self, step: Step) -> None:
        wait, tab = step.wait, self.tab
        if wait == "load":
            while not tab.loaded:
                if tab.crashed or tab.closed:
                    raise TrialFailed("the page's renderer is gone")
                if not tab.signal.wait(self.left()) and not tab.loaded:
                    raise TrialFailed("no load event before the trial's timeout")
                tab.signal.clear()
        elif wait == "quiet":
            wait_network_idle(tab, QUIET_MS, self.left)
        elif wait.startswith("css:"):
            self._until(lambda: bool(self._call("(s) => !!document.querySelector(s)",
                                                wait[4:], "waiting")), wait)  # fmt: skip
        elif step.wait_ms is not None:
            time.sleep(min(step.wait_ms / 1000, self.left()))

    def _until(self, done: Callable[[], bool], what: str) -> None:
        while not done():
            if self.left() <= 0:
                raise TrialFailed(f"{what}: not before the trial's timeout")
            time.sleep(CSS_POLL_S)

    def _events(self) -> list[float]:
        value = evaluate(self.cdp, self.tab.session, _READ_EVENTS_JS, "reading interactions")
        return [float(v) for v in value] if isinstance(value, list) else []

    def _connections(self, ids: set[str]) -> set[tuple[str, str]]:
        return {
            (browser_log.host_of(r.url), r.connection)
            for k, r in self.tab.log.requests.items()
            if (not ids or k in ids) and r.connection and not r.from_cache
        }

    def _new_connections(self, new: list[browser_log.Request]) -> dict[str, int]:
        counts: dict[str, int] = {}
        for r in new:
            key = (browser_log.host_of(r.url), r.connection or "")
            if not key[1] or r.from_cache or key in self.seen:
                continue
            self.seen.add(key)
            counts[key[0]] = counts.get(key[0], 0) + 1
        return counts


def timing_of(t: dict[str, Any]) -> dict[str, float | None]:
    def ms(name: str) -> float | None:
        v = t.get(name)
        return round(float(v), 1) if isinstance(v, int | float) and v > 0 else None

    return {
        "ttfb_ms": ms("responseStart"),
        "fcp_ms": ms("fcp"),
        "lcp_ms": ms("lcp"),
        "load_ms": ms("loadEventEnd"),
    }


def with_steps(result: LoadResult, steps: list[StepResult]) -> LoadResult:
    """The first step's load with the other steps' rows, and the journey's time: the first
    step's page load time and every other step's duration (None when the first has none)."""
    total = None
    if result.plt_ms is not None:
        total = round(result.plt_ms + sum(s.duration_ms for s in steps), 1)
    return replace(result, steps=tuple(s.row() for s in steps), journey_ms=total)


def write_steps(first: dict[str, Any], steps: list[StepResult], folder: Path) -> Path:
    """``steps.json`` in the trial's folder: the first step's summary, then every other."""
    path = folder / STEPS_FILE
    path.write_text(json.dumps({"steps": [first, *(asdict(s) for s in steps)]}, indent=1))
    return path
