"""Chromium loading a live page for ``h2lab record``: every response it fetched, with its body,
into a :class:`~h2lab.record.log.RecordLog`.

The browser is started as the Chromium client starts its own
(:mod:`h2lab.clients.browser.chromium.client`): the same switches (no background networking,
component updates, sync or first-run requests;
:data:`~h2lab.clients.browser.chromium.options.BASE_FLAGS`, Playwright's and the headless ones,
:func:`~h2lab.clients.browser.chromium.options.browser_args`), over its DevTools pipe, with a
fresh profile in a temporary folder removed afterwards. By default it runs in this machine's
own network namespace with its resolver ("outside the lab"). Given a namespace it runs there
(``ip netns exec``); given a host map, those are the only names it can resolve
(``--host-resolver-rules``, every other name "not found", as in a trial), and an SPKI pin makes
it trust the lab CA: how tests record pages the lab serves, never leaving it.

The load: one tab with ``Network`` and ``Page`` events on, auto-attached to the page's own
targets (cross-site iframes, dedicated workers:
:data:`~h2lab.clients.browser.chromium.tab.AUTO_ATTACH`, paused until their ``Network`` events
are on, as a trial's tab does); ``Page.navigate``; the load event; then network idle: no
request in flight for :data:`IDLE_S` (WebPageTest's "fully loaded" rule), all within the
timeout. Each response's body is asked for (``Network.getResponseBody``) the moment Chromium
reports it complete, on the session that reported it, before a navigation or the renderer's
buffer limit can drop it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from h2lab.clients.browser import log as browser_log
from h2lab.clients.browser.chromium.cdp import PIPE_CLOSED, CdpError, CdpPipe, PipeClosed, Reply
from h2lab.clients.browser.chromium.client import (
    CHROMIUM,
    DEVTOOLS_FAILED,
    LAUNCH_TIMEOUT_S,
    spawn_browser,
)
from h2lab.clients.browser.chromium.journey import DevToolsSteps
from h2lab.clients.browser.chromium.options import (
    BASE_FLAGS,
    browser_args,
    launch_flags,
    sandbox_flags,
)
from h2lab.clients.browser.chromium.tab import AUTO_ATTACH, TAB_TIMEOUT_S
from h2lab.clients.browser.options import DEVICES
from h2lab.errors import H2LabError, SpecError, TrialFailed, telling_line
from h2lab.net import netns as netns_mod
from h2lab.net import userns
from h2lab.pages.importers.common import MAX_PAGE_BYTES
from h2lab.record.log import (
    RecordLog,
    describe_in_flight,
    navigation_failure,
    refuse,
)
from h2lab.spec.journey import Journey
from h2lab.spec.protocols import H2S

IDLE_S = 2.0
"""Network idle after the load event: this long with no request in flight (WebPageTest's
"fully loaded": 2 s of network silence)."""

BODY_TIMEOUT_S = 10.0
"""Longest wait, past the recording's timeout, for the bodies asked for (they come from the
browser's memory: milliseconds each here)."""

NETWORK_ENABLE = {
    "maxTotalBufferSize": MAX_PAGE_BYTES,
    "maxResourceBufferSize": MAX_PAGE_BYTES // 5,
}
"""``Network.enable``: how much body the renderer keeps for ``getResponseBody``. Chromium's
defaults (100 MB in all, 10 MB per response) could drop a large page's bodies; these are the
importers' page limit, and a fifth of it per response."""


class RecordFailed(H2LabError):
    """The browser could not record (it did not start, crashed or stopped answering)."""


def record_live(
    url: str,
    *,
    timeout_s: float,
    idle_s: float = IDLE_S,
    netns: str | None = None,
    hosts: Mapping[str, str] | None = None,
    spki: str | None = None,
    journey: Journey | None = None,
) -> tuple[RecordLog, tuple[str, ...]]:
    """Load ``url`` in a new headless Chromium and return its log, every body fetched, and
    notes on the load. ``netns``: the namespace to run in (None: this one); ``hosts``: the only
    names it resolves, to these addresses (None: the machine's resolver); ``spki``: a CA's
    SPKI hash to trust; ``journey``: its steps after the first, taken once the page is loaded
    and the network idle (then idle again). The URL not loading (no such host, refused, no
    load event within ``timeout_s``) is a SpecError naming it; a browser that fails is
    :class:`RecordFailed`."""
    work = Path(tempfile.mkdtemp(prefix="h2lab-record-"))
    try:
        argv = _argv(work, netns, hosts, spki)
        proc, cdp = _launch(argv, work / "chromium.log")
        try:
            return _Recorder(cdp, url, journey).run(timeout_s, idle_s)
        finally:
            _stop(proc, cdp)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _argv(
    work: Path, netns: str | None, hosts: Mapping[str, str] | None, spki: str | None
) -> list[str]:
    """The browser's command line: Chromium's switches as a trial's, in ``netns`` if given."""
    if hosts is not None:
        flags = list(launch_flags(H2S, hosts, spki))
    else:
        pin = [f"--ignore-certificate-errors-spki-list={spki}"] if spki else []
        flags = [*sandbox_flags(), *BASE_FLAGS, *pin]
    cmd = [str(CHROMIUM), *browser_args(flags, DEVICES["desktop"], work / "profile")]
    return netns_mod.exec_argv(netns, userns.unprivileged(cmd)) if netns else cmd


def _launch(argv: list[str], log: Path) -> tuple[subprocess.Popen[bytes], CdpPipe]:
    proc, cdp = spawn_browser(argv, dict(os.environ), log)
    try:
        cdp.call("Browser.getVersion", timeout_s=LAUNCH_TIMEOUT_S)
    except DEVTOOLS_FAILED as exc:
        _stop(proc, cdp)
        said = telling_line(log.read_text(errors="replace")) if log.exists() else ""
        raise RecordFailed(f"chromium did not start: {said or exc}") from None
    return proc, cdp


def _stop(proc: subprocess.Popen[bytes], cdp: CdpPipe) -> None:
    """Close the browser: asked, then its pipe closed, then its process group killed."""
    if not cdp.closed.is_set():
        with contextlib.suppress(*DEVTOOLS_FAILED):
            cdp.call("Browser.close", timeout_s=2)
    cdp.close()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # its own group: start_new_session
        proc.wait(timeout=5)


class _Recorder:
    """One tab's load of ``url``: its DevTools events (on the pipe's reader thread) go to the
    log under a lock; :meth:`run` waits on :attr:`changed` for the load and the idle network."""

    def __init__(self, cdp: CdpPipe, url: str, journey: Journey | None = None) -> None:
        self.cdp = cdp
        self.url = url
        self.journey = journey
        self.last_network_s = time.monotonic()
        """host monotonic time of the last Network event (a journey's ``quiet`` wait)"""
        self.log = RecordLog()
        self.lock = threading.Lock()
        self.changed = threading.Event()
        self.session = ""
        self.navigating = False
        self.loaded = False
        self.crashed = False
        self.bodies: dict[str, Reply] = {}
        """request id -> its getResponseBody, asked when the response completed"""
        self.idle_since: float | None = None
        """host monotonic time since when no request is in flight (None: some are)"""

    # -- events (reader thread)

    def listener(self, session: str) -> Callable[[str, dict[str, Any]], None]:
        def on(method: str, params: dict[str, Any]) -> None:
            self.on(session, method, params)

        return on

    def on(self, session: str, method: str, params: dict[str, Any]) -> None:
        if method.startswith("Network."):
            self._network(session, method, params)
        elif method == "Target.attachedToTarget":
            self._attach(params["sessionId"])
        elif method == "Page.loadEventFired" and session == self.session and self.navigating:
            self.loaded = True
        elif method == "Inspector.targetCrashed" and session == self.session:
            self.crashed = True
        elif method != PIPE_CLOSED:
            return
        self.changed.set()

    def _network(self, session: str, method: str, params: dict[str, Any]) -> None:
        self.last_network_s = time.monotonic()
        with self.lock:
            rid = self.log.add(session, method, params)
            if rid is not None:
                self.bodies[rid] = self.cdp.send(
                    "Network.getResponseBody", {"requestId": rid}, session
                )
            busy = bool(self.log.in_flight())
            if busy:
                self.idle_since = None
            elif self.idle_since is None:
                self.idle_since = time.monotonic()

    def _attach(self, child: str) -> None:
        """A target of the page (cross-site iframe, worker) started, paused: its Network
        events on, its own targets attached too, then it runs. Nothing here waits for an
        answer (this is the reader thread)."""
        self.cdp.listen(child, self.listener(child))
        self.cdp.send("Network.enable", NETWORK_ENABLE, child)
        self.cdp.send("Target.setAutoAttach", AUTO_ATTACH, child)
        self.cdp.send("Runtime.runIfWaitingForDebugger", {}, child)

    # -- the load (caller's thread)

    def run(self, timeout_s: float, idle_s: float) -> tuple[RecordLog, tuple[str, ...]]:
        deadline = time.monotonic() + timeout_s

        def left() -> float:
            return max(0.0, deadline - time.monotonic())

        try:
            self._open_tab()
            self._navigate(left, timeout_s)
            notes = self._wait_idle(idle_s, left)
            if self.journey is not None:
                self._journey(self.journey, left)
                notes += self._wait_idle(idle_s, left)
            self._collect_bodies(left() + BODY_TIMEOUT_S)
        except DEVTOOLS_FAILED as exc:
            raise RecordFailed(f"chromium failed while recording {self.url}: {exc}") from None
        fault = getattr(self.cdp, "fault", None)  # fakes in tests have none
        if fault is not None:  # a capture is messy, not bad: recorded with a note
            notes = (*notes, f"chromium sent a message h2lab could not read: {fault}")
        return self.log, notes

    def _journey(self, journey: Journey, left: Callable[[], float]) -> None:
        """The journey's steps after its first (the page's load): a step that fails stops the
        recording, naming it (:class:`RecordFailed`)."""
        try:
            RecorderSteps(self, self.url, left()).run(journey)
        except TrialFailed as exc:
            raise RecordFailed(f"recording {self.url}: {exc}") from None

    def _open_tab(self) -> None:
        cdp = self.cdp
        target = cdp.call("Target.createTarget", {"url": "about:blank"}, timeout_s=TAB_TIMEOUT_S)[
            "targetId"
        ]
        self.session = cdp.call(
            "Target.attachToTarget",
            {"targetId": target, "flatten": True},
            timeout_s=TAB_TIMEOUT_S,
        )["sessionId"]
        cdp.listen(self.session, self.listener(self.session))
        commands: tuple[tuple[str, Mapping[str, Any]], ...] = (
            ("Network.enable", NETWORK_ENABLE),
            ("Page.enable", {}),
            ("Network.setBypassServiceWorker", {"bypass": True}),
            ("Target.setAutoAttach", AUTO_ATTACH),
        )
        for reply in [cdp.send(m, p, self.session) for m, p in commands]:
            reply.result(TAB_TIMEOUT_S)

    def _navigate(self, left: Callable[[], float], timeout_s: float) -> None:
        """Navigate and wait for the load event (SpecError: the URL did not load)."""
        self.navigating = True
        try:
            nav = self.cdp.send("Page.navigate", {"url": self.url}, self.session).result(left())
        except TimeoutError:
            raise self._no_load(timeout_s) from None
        with self.lock:
            self.log.document_id = str(nav.get("loaderId", ""))
        failure = navigation_failure(self.url, str(nav.get("errorText", "")))
        if failure is not None:
            raise failure
        while not self.loaded:
            self.check()
            if not self.changed.wait(left()):
                raise self._no_load(timeout_s)
            self.changed.clear()
        self.check()

    def check(self) -> None:
        if self.cdp.closed.is_set():
            raise RecordFailed(f"chromium exited while recording {self.url}")
        if self.crashed:
            raise RecordFailed(f"chromium's renderer crashed while recording {self.url}")

    def _no_load(self, timeout_s: float) -> SpecError:
        with self.lock:
            waiting = describe_in_flight(self.log)
        return refuse(
            self.url, f"no load event within {timeout_s:g} s" + (f"; {waiting}" if waiting else "")
        )

    def _wait_idle(self, idle_s: float, left: Callable[[], float]) -> tuple[str, ...]:
        """Until no request has been in flight for ``idle_s``, or the deadline (then a note
        on what was still in flight: it is not recorded)."""
        while True:
            self.check()
            with self.lock:
                since = self.idle_since
            quiet = 0.0 if since is None else time.monotonic() - since
            if since is not None and quiet >= idle_s:
                return ()
            wait = min(left(), idle_s - quiet)
            if left() <= 0:
                with self.lock:
                    waiting = describe_in_flight(self.log)
                return (f"the network was not idle when the timeout came: {waiting}",)
            self.changed.clear()
            self.changed.wait(wait)

    def _collect_bodies(self, timeout_s: float) -> None:
        """Every body asked for, into the log; one Chromium could not give on the session that
        completed it is asked on the others that saw the request."""
        deadline = time.monotonic() + timeout_s
        with self.lock:
            pending = dict(self.bodies)
        for rid, reply in pending.items():
            answer, error = self._body(reply, deadline)
            if answer is None:
                with self.lock:
                    others = self.log.sessions_of(rid)[1:]
                for session in others:
                    retry = self.cdp.send("Network.getResponseBody", {"requestId": rid}, session)
                    answer, _ = self._body(retry, deadline)
                    if answer is not None:
                        break
            with self.lock:
                if answer is not None:
                    self.log.set_body(rid, answer)
                else:
                    self.log.set_body_error(rid, error)

    def _body(self, reply: Reply, deadline: float) -> tuple[dict[str, Any] | None, str]:
        try:
            return reply.result(max(0.0, deadline - time.monotonic())), ""
        except CdpError as exc:
            return None, str(exc).removeprefix("Network.getResponseBody: ")
        except TimeoutError:
            return None, "no answer in time"
        except PipeClosed:
            raise RecordFailed(f"chromium exited while recording {self.url}") from None


class RecorderSteps(DevToolsSteps):
    """A journey's steps in the recorder's tab (issue #57): the same steps as a trial's
    (:mod:`h2lab.clients.browser.journey`), over its DevTools session, with trusted input;
    nothing of them is measured, every response is recorded."""

    def __init__(self, recorder: _Recorder, entry_url: str, timeout_s: float) -> None:
        super().__init__(recorder, browser_log.NetworkLog(), entry_url, timeout_s)
        self.recorder, self.cdp = recorder, recorder.cdp

    @property
    def session(self) -> str:
        return self.recorder.session

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
