"""A journey's steps after its first, whatever the engine (issue #57): the first step is the
trial's measured load (each engine's ``measure``); the others run in the same tab, each timed
and written to the trial's ``steps.json`` and to the store's ``steps``.

Input is trusted, as a user's: a click is the engine's own pointer input at the element's
centre (scrolled into view), typing its own text or key input into the focused element, a form
submitted by a click on its submit button. A script's ``element.click()`` would be untrusted,
and the Event Timing API, which measures an interaction's latency to the next paint as INP
does, has no entry for it. Before each step an observer of Event Timing entries (all of 16 ms
and more; the buffered ones are only those of 104 ms and more) is put in the page; after it,
the longest entry with an ``interactionId`` is the step's ``interaction_ms``.

Per step: its duration (the action to the end of its wait), the requests it began, the
connections first used during it per origin (none where the steps reuse the first's), the
document's URL and the start of its text after it, and for a step that loaded a document its
timing (TTFB, FCP, LCP and the load event, ms from its navigation's start). Each engine says
how it acts (:class:`JourneySteps`'s abstract methods): Chromium over DevTools, Firefox over
WebDriver BiDi.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from h2lab.clients.browser import log as browser_log
from h2lab.clients.browser.load import Watched, time_left, wait_network_idle
from h2lab.errors import TrialFailed
from h2lab.results import LoadResult, StepTiming
from h2lab.spec.journey import QUIET_MS, Journey, Step

STEPS_FILE = "steps.json"
SHOWN_CHARS = 300
"""How much of a document's text a step's result keeps: what the page showed (the account
page's "Signed in as alice"), not the page."""
CSS_POLL_S = 0.05

CENTRE_JS = """((sel) => {
  const e = document.querySelector(sel);
  if (!e) return null;
  e.scrollIntoView({block: 'center', inline: 'center'});
  const r = e.getBoundingClientRect();
  return [r.left + r.width / 2, r.top + r.height / 2];
})"""
SUBMITTER_JS = """((sel) => {
  const f = document.querySelector(sel);
  if (!f) return null;
  const b = f.querySelector('[type=submit], button:not([type])');
  if (!b) { f.requestSubmit(); return 'submitted'; }
  b.scrollIntoView({block: 'center', inline: 'center'});
  const r = b.getBoundingClientRect();
  return [r.left + r.width / 2, r.top + r.height / 2];
})"""
FOCUS_JS = """((sel) => {
  const e = document.querySelector(sel);
  if (!e) return false;
  e.focus();
  return true;
})"""
SCROLL_JS = """((to) => {
  if (to === 'top') { window.scrollTo(0, 0); return true; }
  if (to === 'bottom') { window.scrollTo(0, document.documentElement.scrollHeight); return true; }
  if (/^[0-9]+px$/.test(to)) { window.scrollTo(0, parseInt(to)); return true; }
  const e = document.querySelector(to);
  if (!e) return false;
  e.scrollIntoView();
  return true;
})"""
WATCH_EVENTS_JS = """(() => {
  if (window.__h2labEvents) { window.__h2labEvents.length = 0; return performance.now(); }
  window.__h2labEvents = [];
  new PerformanceObserver(list => {
    for (const e of list.getEntries()) if (e.interactionId) window.__h2labEvents.push(e.duration);
  }).observe({type: 'event', durationThreshold: 16});
  return performance.now();
})()"""
READ_EVENTS_JS = """new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() =>
  setTimeout(() => done(window.__h2labEvents ? window.__h2labEvents.slice() : []), 50))))"""
SHOWN_JS = (
    f"[location.href, (document.body ? document.body.innerText : '').slice(0, {SHOWN_CHARS})]"
)
CONNECTIONS_JS = """((since) => {
  const counts = {};
  const entries = [...performance.getEntriesByType('navigation'),
                   ...performance.getEntriesByType('resource')];
  for (const e of entries) {
    if (e.startTime < since || !(e.connectEnd > e.connectStart)) continue;
    const host = new URL(e.name).hostname;
    counts[host] = (counts[host] || 0) + 1;
  }
  return counts;
})"""
"""Connections set up for the document's requests since ``since`` (its Resource Timing: a
request that set one up has its connectEnd after its connectStart), per host: where the engine
names no connection (Firefox's BiDi). A cross-origin response without Timing-Allow-Origin
shows none."""


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


def timing_of(t: dict[str, Any]) -> dict[str, float | None]:
    """A document's timing as a step keeps it, from the page's own (after its load)."""

    def ms(name: str) -> float | None:
        v = t.get(name)
        return round(float(v), 1) if isinstance(v, int | float) and v > 0 else None

    return {
        "ttfb_ms": ms("responseStart"),
        "fcp_ms": ms("fcp"),
        "lcp_ms": ms("lcp"),
        "load_ms": ms("loadEventEnd"),
    }


class JourneySteps(ABC):
    """Runs a journey's steps after its first in a tab whose first step's load is done."""

    def __init__(
        self, tab: Watched, log: browser_log.NetworkLog, entry_url: str, timeout_s: float
    ) -> None:
        self.tab, self.log, self.entry_url = tab, log, entry_url
        self.left = time_left(timeout_s)

    # ------------------------------------------------------------ what each engine says

    @abstractmethod
    def evaluate(self, expression: str, doing: str) -> Any:
        """The JSON value of a script ``expression`` in the page (a promise awaited); an
        exception in it is a :class:`TrialFailed` saying what it was ``doing``."""

    @abstractmethod
    def click_at(self, x: float, y: float) -> None:
        """A trusted left click at viewport point (x, y)."""

    @abstractmethod
    def insert_text(self, text: str) -> None:
        """Trusted text input into the focused element."""

    @abstractmethod
    def navigate(self, url: str) -> None:
        """Start a navigation of the tab to ``url`` (its load waited by :meth:`wait_load`)."""

    @abstractmethod
    def expect_load(self) -> None:
        """Before an action that loads a document: its load event is the next one seen."""

    @abstractmethod
    def wait_load(self) -> None:
        """Until the load event :meth:`expect_load` awaits (TrialFailed at the timeout)."""

    @abstractmethod
    def page_timing(self) -> dict[str, Any]:
        """The loaded document's timing, once it painted (``responseStart``, ``fcp``...)."""

    @abstractmethod
    def new_connections(self, new: list[browser_log.Request], since_ms: float) -> dict[str, int]:
        """Connections first used by the step's requests ``new`` (the document's since
        ``since_ms`` on its own clock), per origin."""

    # ------------------------------------------------------------------- the steps

    def run(self, journey: Journey) -> list[StepResult]:
        self._mark(0)  # the measured load's requests
        out = []
        for i, step in enumerate(journey.steps[1:], start=1):
            try:
                out.append(self._step(i, step))
            except TrialFailed as exc:
                raise TrialFailed(f"journey step {i} ({step.name}): {exc}") from None
        return out

    def call(self, js: str, arg: object, doing: str) -> Any:
        return self.evaluate(f"{js}({json.dumps(arg)})", doing)

    def _mark(self, step: int) -> list[browser_log.Request]:
        """Give every request no step has claimed yet to ``step``: those begun since the last
        step ended, the gap between two steps included (so every resource row names its
        step and the report can draw a waterfall per step)."""
        new = [r for r in self.log.snapshot() if r.step is None]
        for r in new:
            r.step = step
        return new

    def _step(self, i: int, step: Step) -> StepResult:
        since = self.evaluate(WATCH_EVENTS_JS, "watching interactions")
        navigates = step.wait == "load"
        if navigates:
            self.expect_load()
        t0 = time.monotonic()
        self._act(step)
        self._wait(step)
        duration_ms = (time.monotonic() - t0) * 1000
        timing = timing_of(self.page_timing()) if navigates else None
        events = [] if navigates else self._events()
        url, shown = self.evaluate(SHOWN_JS, "reading the document")
        new = self._mark(i)
        since_ms = 0.0 if navigates or not isinstance(since, int | float) else float(since)
        return StepResult(
            i, step.name, step.kind, round(duration_ms, 1), len(new),
            self.new_connections(new, since_ms), str(url), str(shown), timing,
            round(max(events), 1) if events else None,
        )  # fmt: skip

    def _act(self, step: Step) -> None:
        kind, target = step.kind, step.target
        if kind == "navigate":
            self.navigate(step_url(target, self.entry_url))
        elif kind == "click":
            self._click(self.call(CENTRE_JS, target, "finding the element"), target)
        elif kind == "submit":
            found = self.call(SUBMITTER_JS, target, "finding the form")
            if found != "submitted":
                self._click(found, target)
        elif kind == "type":
            if not self.call(FOCUS_JS, target, "finding the field"):
                raise TrialFailed(f"{target!r} matches nothing")
            self.insert_text(step.text)
        elif kind == "scroll" and not self.call(SCROLL_JS, target, "scrolling"):
            raise TrialFailed(f"{target!r} matches nothing")

    def _click(self, centre: object, target: str) -> None:
        if not isinstance(centre, list) or len(centre) != 2:
            raise TrialFailed(f"{target!r} matches nothing")
        x, y = (float(c) for c in centre)
        self.click_at(x, y)

    def _wait(self, step: Step) -> None:
        wait = step.wait
        if wait == "load":
            self.wait_load()
        elif wait == "quiet":
            wait_network_idle(self.tab, QUIET_MS, self.left)
        elif wait.startswith("css:"):
            self._until(lambda: bool(self.call("((s) => !!document.querySelector(s))",
                                               wait[4:], "waiting")), wait)  # fmt: skip
        elif step.wait_ms is not None:
            time.sleep(min(step.wait_ms / 1000, self.left()))

    def _until(self, done: Callable[[], bool], what: str) -> None:
        while not done():
            if self.left() <= 0:
                raise TrialFailed(f"{what}: not before the trial's timeout")
            time.sleep(CSS_POLL_S)

    def _events(self) -> list[float]:
        value = self.evaluate(READ_EVENTS_JS, "reading interactions")
        return [float(v) for v in value] if isinstance(value, list) else []


def take(
    steps: JourneySteps, journey: Journey, url: str, timing: dict[str, Any], folder: Path
) -> list[StepResult]:
    """``journey``'s steps after its first (whose load at ``url`` read the page's ``timing``),
    taken by the engine's ``steps`` and written to ``folder/steps.json``."""
    taken = steps.run(journey)
    first = {"index": 0, "name": journey.steps[0].name, "kind": "navigate", "url": url,
             "timing": timing_of(timing)}  # fmt: skip
    write_steps(first, taken, folder)
    return taken


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
