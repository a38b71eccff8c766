"""Chromium (Debian's ``/usr/lib/chromium/chromium``) loading a page, driven over the DevTools
protocol on its own pipe (``--remote-debugging-pipe``), with no Playwright in between.

This module keeps the browsers and runs the trials; the rest is in its neighbours: the options
and launch flags in :mod:`~h2lab.clients.browser.chromium.options`, the DevTools pipe in
:mod:`~h2lab.clients.browser.chromium.cdp`, a trial's tab and its measured load in
:mod:`~h2lab.clients.browser.chromium.tab`, the metrics in
:mod:`~h2lab.clients.browser.chromium.analysis`, and in the engines' shared part
(:mod:`h2lab.clients.browser`) the requests (resources, HAR, what failed) in
:mod:`~h2lab.clients.browser.log`.

Where the browser runs. h2lab starts a small wrapper script that enters the client namespace
(``ip netns exec``) and runs Chromium there, so every packet of the page load crosses the
emulated link; the DevTools pipe (fds 3 and 4) passes through it unchanged. The wrapper stays
Chromium's parent and writes its exit status (how a crashed trial names the signal that killed
it). The browser is kept between trials while the client namespace stays the same (the runner
reuses a link only when it holds no state, see ``runner.session.link_is_stateless``) and started
again when the namespace is a new one. One browser per launch-flag set: ``h1s`` needs
``--disable-http2``, a browser-wide switch. The switches Playwright 1.65 used to pass are kept
(:data:`~h2lab.clients.browser.chromium.options.PLAYWRIGHT_FLAGS`), so the browser behaves as it did
when Playwright drove it.

One trial, in order: a tab made ready after an earlier trial is taken (a new browser context
and a blank page, attached by a flat DevTools session with Network and Page events on);
tracing starts; ``Page.navigate``; the load event; two animation frames and
:data:`~h2lab.clients.browser.chromium.tab.SCREENSHOT_SETTLE_MS` (the page's timing read
meanwhile); the trace is read back as one stream. Then, off the page load, the analysis (trace,
SpeedIndex, HAR) runs on one thread while the tab is put away: frozen and kept while other
made tabs are ready; when none is, the kept contexts are closed and :data:`TABS_AHEAD` new
ones made at once, and ``load`` returns when Chromium is quiet again
(:func:`~h2lab.clients.browser.chromium.tab.wait_quiet`: a new context's window goes on working
after its tab answers, and a load begun meanwhile is slower). Only DevTools calls cross
threads; the connection (:class:`~h2lab.clients.browser.chromium.cdp.CdpPipe`) is safe for that.

Clean state per trial. Each trial gets a new browser context (Chromium's off-the-record
profile): its own HTTP cache, cookies, socket pools and HTTP/2 sessions, all dropped when the
context closes. Names never reach a resolver: ``--host-resolver-rules`` maps each lab origin
to its address and every other name to "not found", so no DNS cache exists to carry over. In a
cell whose discovery reads DNS (``https-rr``) the lab names are Chromium's own resolver's
(:mod:`~h2lab.clients.browser.names`), whose cache is per network context: each trial's new
context looks them up again.
The lab CA is trusted by its SPKI pin (``--ignore-certificate-errors-spki-list``), not by
ignoring certificate errors.

Artifacts of a trial: its requests as HAR (:data:`~h2lab.artifacts.PAGE_HAR`, a failed load's
too), its visual progress, with option ``filmstrip`` its screenshots, and with ``netlog`` or
``keylog`` the browser's logs in the last trial it loaded (:mod:`h2lab.artifacts`). A trial
with a packet capture gets the keys of its own connections
(:class:`~h2lab.clients.browser.keylog.KeylogSlices`): its browser logs them whatever
``keylog`` says.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shlex
import shutil
import subprocess
from collections import deque
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from h2lab import procs, programs
from h2lab.artifacts import (
    KEYLOG,
    NETLOG,
)
from h2lab.clients import LoadContext, LoadResult, register
from h2lab.clients.browser import names
from h2lab.clients.browser.chromium.analysis import RawLoad, analyse
from h2lab.clients.browser.chromium.cdp import CdpError, CdpPipe, DevTools, PipeClosed, Reply
from h2lab.clients.browser.chromium.journey import CdpSteps
from h2lab.clients.browser.chromium.options import (
    PROTOCOLS,
    Options,
    browser_args,
    launch_flags,
)
from h2lab.clients.browser.chromium.repeat import forget_connections
from h2lab.clients.browser.chromium.tab import (
    TAB_TIMEOUT_S,
    Tab,
    dispose,
    freeze,
    measure,
    new_tab,
    wait_quiet,
)
from h2lab.clients.browser.client import BrowserClient
from h2lab.clients.browser.journey import step_url, take, with_steps
from h2lab.clients.browser.keylog import KeylogSlices
from h2lab.clients.browser.load import page_url
from h2lab.clients.browser.options import DEVICES
from h2lab.clients.browser.pool import Running, stop_process
from h2lab.clients.browser.result import keep_failed_log, write_artifacts
from h2lab.errors import TrialFailed, telling_line
from h2lab.net import userns
from h2lab.pages import Page
from h2lab.spec.factors import DISCOVERIES

CHROMIUM = Path(programs.CHROMIUM.executable)
"""Debian's binary, without the /usr/bin/chromium shell wrapper (and its /etc/chromium.d)."""

LAUNCH_TIMEOUT_S = 30.0
"""Longest wait for a browser to answer its first DevTools command (Playwright's default)."""

TABS_AHEAD = 5
"""Tabs a browser makes at once, then one quiet wait for all: a tab alone took 0.1 s to make
and 0.15 s more to be quiet after every trial; five at once 0.41 s and one wait of 0.2 s.
More at once are no cheaper per tab (ten: 0.94 s) and leave more idle contexts beside a load
(docs/design-notes.md, "Tabs made five at a time")."""

DEVTOOLS_FAILED = (TimeoutError, PipeClosed, CdpError)
"""How a DevTools call fails: no answer in time, the browser gone, or an error answer."""


@dataclass
class _Browser(Running[CdpPipe]):
    ready: deque[Tab] = field(default_factory=deque)
    """the next trials' tabs, made after an earlier trial's trace, the browser quiet since"""
    disposing: list[Reply] = field(default_factory=list)
    """earlier trials' contexts, being closed"""
    used: list[Tab] = field(default_factory=list)
    """measured tabs, frozen, to be closed with the making of the next tabs"""
    logs: tuple[Path, ...] = ()
    """the browser's NetLog / SSLKEYLOGFILE (options netlog, keylog), complete when it exits"""
    last_artifacts: Path | None = None
    """the artifacts folder of the last trial it loaded: its logs are moved there at exit"""


class Chromium(BrowserClient[_Browser, Options]):
    name = "chromium"
    protocols = PROTOCOLS
    views = frozenset({"first", "repeat"})
    journeys = True
    discoveries: frozenset[str] = frozenset(DISCOVERIES)
    # Learnt h3 in a repeat view: from the second trial of a browser on, a QUIC connection
    # outlives net-internals' flush between the visits (docs/servers.md, "How browsers find h3")
    repeat_discoveries = frozenset({"forced"})
    mixed_origins = True

    def __init__(self, options: Options) -> None:
        super().__init__(options, _stop)
        self._spki: dict[Path, str] = {}
        self._pool: ThreadPoolExecutor | None = None

    def version(self) -> str:
        out = procs.version_text(programs.CHROMIUM.version_argv())
        return programs.CHROMIUM.version_in(out) or out.strip()

    # -- browsers

    def _threads(self) -> ThreadPoolExecutor:
        # two: a trial's analysis and the next trial's tab
        if self._pool is None:
            self._pool = ThreadPoolExecutor(2, thread_name_prefix="chromium")
        return self._pool

    def _browser(self, protocol: str, ctx: LoadContext) -> _Browser:
        spki = None
        if ctx.tls_dir is not None:
            if ctx.tls_dir not in self._spki:
                from h2lab.tls import LocalCA

                self._spki[ctx.tls_dir] = LocalCA(ctx.tls_dir).spki_sha256()
            spki = self._spki[ctx.tls_dir]
        flags = launch_flags(protocol, ctx.hosts, spki, ctx.discovery, ctx.h3_hosts)
        keys = self.options.keylog or ctx.keylog is not None
        return self._browsers.get((flags, keys), ctx, lambda: self._launch(flags, keys, ctx))

    def _launch(self, flags: tuple[str, ...], keys: bool, ctx: LoadContext) -> _Browser:
        # the wrapper closes its own copy of the DevTools pipe, so that the pipe ends when
        # Chromium does
        chromium = shlex.join(userns.unprivileged([str(CHROMIUM)]))  # the user's, rootless
        if names.by_dns(ctx):  # the lab's names from the lab's resolver, not /etc/hosts
            hosts = names.local_hosts(self._browsers.workdir())
            chromium = f"{names.own_hosts()} {shlex.quote(str(hosts))} {chromium}"
        files = self._browsers.launch_files(
            f"ip netns exec {ctx.netns} {chromium}", before_wait="exec 3<&- 4>&-\n"
        )
        work, n = self._browsers.workdir(), files.n
        args = browser_args(flags, DEVICES[self.options.device], files.profile)
        netlog, keylog = work / NETLOG.format(n=n), work / KEYLOG.format(n=n)
        if self.options.netlog:
            args.append(f"--log-net-log={netlog}")
        env = {**os.environ, **self._browsers.runtime_env()}
        if keys:
            env["SSLKEYLOGFILE"] = str(keylog)
        log = files.log
        proc, cdp = spawn_browser([str(files.wrapper), *args], env, log)
        handle = _Browser(
            proc, cdp, ctx.netns, ctx.link_generation, files.status_file, files.pid_file
        )
        handle.keys = KeylogSlices(keylog) if keys else None
        handle.logs = tuple(
            path
            for path, on in ((netlog, self.options.netlog), (keylog, self.options.keylog))
            if on
        )
        try:
            cdp.call("Browser.getVersion", timeout_s=LAUNCH_TIMEOUT_S)
        except DEVTOOLS_FAILED as exc:
            _stop(handle)
            said = telling_line(log.read_text(errors="replace")) if log.exists() else ""
            raise TrialFailed(f"chromium did not start: {said or exc}") from None
        return handle

    def close(self) -> None:
        super().close()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    # -- one page load

    def prime(self, page: Page, protocol: str, ctx: LoadContext) -> None:
        """The repeat view's first visit (:meth:`ClientAdapter.prime`): the page loaded in the
        tab the next :meth:`load` takes (a journey: every step), then
        :func:`forget_connections`. Nothing of it is kept; a failure is the trial's."""
        self.check_protocol(protocol)
        handle = self._browser(protocol, ctx)
        self._browsers.used(protocol, handle)
        tab = self._take_ready(handle)
        url = page_url(page, protocol)
        if ctx.journey is not None:  # the whole journey, as the measured visit takes it
            url = step_url(ctx.journey.steps[0].target, url)
        try:
            measure(
                tab, handle.connection, url, page, timeout_s=ctx.timeout_s,
                idle_ms=self.options.idle_ms, fail_on=ctx.fail_on, tasks=False,
            )  # fmt: skip
            if ctx.journey is not None:
                CdpSteps(tab, handle.connection, url, ctx.timeout_s).run(ctx.journey)
            forget_connections(handle.connection, tab, ctx.netns)
        except DEVTOOLS_FAILED as exc:
            raise self._failure(handle, protocol, exc, isinstance(exc, PipeClosed)) from None
        except TrialFailed:
            if handle.alive():
                with contextlib.suppress(*DEVTOOLS_FAILED):
                    dispose(handle.connection, tab).result(TAB_TIMEOUT_S)
            raise
        handle.ready.appendleft(tab)

    def measured_load(self, page: Page, protocol: str, ctx: LoadContext) -> LoadResult:
        self.check_protocol(protocol)
        handle = self._browser(protocol, ctx)
        self._browsers.used(protocol, handle)
        handle.last_artifacts = ctx.artifacts_dir
        url = page_url(page, protocol)
        if ctx.journey is not None:  # its first step is the measured load
            url = step_url(ctx.journey.steps[0].target, url)
        ctx.artifacts_dir.mkdir(parents=True, exist_ok=True)
        tab: Tab | None = None

        try:
            tab = self._take_ready(handle)
            raw = measure(
                tab, handle.connection, url, page, timeout_s=ctx.timeout_s,
                idle_ms=self.options.idle_ms, fail_on=ctx.fail_on, tasks=self.options.tbt,
                bodies=self.options.har_bodies,
            )  # fmt: skip
            steps = (
                []
                if ctx.journey is None
                else take(CdpSteps(tab, handle.connection, url, ctx.timeout_s), ctx.journey,
                          url, raw.timing, ctx.artifacts_dir)
            )  # fmt: skip
        except TrialFailed:
            if tab is not None:
                keep_failed_log(tab.log, url, ctx.artifacts_dir)
            if tab is not None and handle.alive():
                with contextlib.suppress(*DEVTOOLS_FAILED):
                    dispose(handle.connection, tab).result(TAB_TIMEOUT_S)
            raise
        except DEVTOOLS_FAILED as exc:
            if tab is not None:
                keep_failed_log(tab.log, url, ctx.artifacts_dir)
            handle.take_keys(ctx.keylog)  # before the browser is closed
            # the pipe closes when Chromium dies; the wrapper writes its status right after
            raise self._failure(handle, protocol, exc, isinstance(exc, PipeClosed)) from None
        finally:
            handle.take_keys(ctx.keylog)
        # Off the critical path from here: the analysis runs on a thread while the tab is
        # put away (:meth:`_put_away`). Nothing of it overlaps a measured load: the browser is
        # quiet before this returns (a renderer starting while the trace ran would have joined
        # it and held Tracing.end for 5 s, so no tab is made before the trace is in).
        analysis = self._threads().submit(self._analyse, raw, url, ctx)
        if self.options.restart:
            handle.disposing.append(dispose(handle.connection, tab))
            self._browsers.close_browser(handle)
        else:
            with contextlib.suppress(*DEVTOOLS_FAILED):  # the next trial's to meet
                self._put_away(handle, tab)
        return with_steps(analysis.result(), steps) if steps else analysis.result()

    def _put_away(self, handle: _Browser, tab: Tab) -> None:
        """After a trial: while made tabs are ready, its tab is frozen (no timer, task or
        animation of its page runs again) and kept; when none is, every kept tab's context
        is closed, the next :data:`TABS_AHEAD` tabs are made, and the browser is quiet before
        the next load begins, in this browser or in another (h1s and h2s alternate between
        two). A tab that cannot be frozen is closed at once, and the browser let be quiet."""
        if handle.ready:
            try:
                freeze(handle.connection, tab).result(TAB_TIMEOUT_S)
            except CdpError:
                handle.disposing.append(dispose(handle.connection, tab))
                self._settle(handle)
                return
            handle.used.append(tab)
            return
        handle.used.append(tab)
        handle.ready.extend(self._settle(handle, *self._new_tabs(handle.connection)))

    def _take_ready(self, handle: _Browser) -> Tab:
        """A tab made ready after an earlier trial, or :data:`TABS_AHEAD` made now."""
        if handle.ready:
            return handle.ready.popleft()
        tabs = self._settle(handle, *self._new_tabs(handle.connection))
        handle.ready.extend(tabs[1:])
        return tabs[0]

    def _settle(self, handle: _Browser, *tabs: Tab) -> list[Tab]:
        """``tabs`` once the kept and closing contexts are gone and the browser is quiet: a load
        never shares the browser with a renderer starting or going, or the CPU with one."""
        handle.disposing += [dispose(handle.connection, t) for t in handle.used]
        handle.used = []
        disposing, handle.disposing = handle.disposing, []
        for reply in disposing:
            with contextlib.suppress(*DEVTOOLS_FAILED):
                reply.result(TAB_TIMEOUT_S)
        wait_quiet(handle.connection)
        return list(tabs)

    def _new_tabs(self, cdp: DevTools) -> list[Tab]:
        """:data:`TABS_AHEAD` new tabs, made at once (one when the browser goes after a trial:
        option ``restart``)."""
        device, slowdown = DEVICES[self.options.device], self.options.cpu_slowdown
        count = 1 if self.options.restart else TABS_AHEAD
        with ThreadPoolExecutor(count, thread_name_prefix="chromium-tab") as pool:
            made = [pool.submit(new_tab, cdp, device, slowdown) for _ in range(count)]
            return [m.result(LAUNCH_TIMEOUT_S) for m in made]

    def _analyse(self, raw: RawLoad, url: str, ctx: LoadContext) -> LoadResult:
        """The load's result, its artifacts written."""
        options = self.options
        analysis = analyse(
            raw, url, mode=options.speed_index, idle=options.idle_ms > 0, tbt=options.tbt
        )
        write_artifacts(analysis, ctx.artifacts_dir, filmstrip=self.options.filmstrip)
        return analysis.result


def _stop(handle: _Browser) -> None:
    """Close a browser: ``Browser.close``, then its exit (killed if it does not go). A NetLog
    is complete only once the browser has exited: it goes with the last trial this browser
    loaded (it covers every trial since the browser started)."""
    handle.ready.clear()
    with contextlib.suppress(Exception):
        handle.connection.call("Browser.close", timeout_s=2)
    handle.connection.close()
    stop_process(handle)
    for log in handle.logs:
        if log.exists() and handle.last_artifacts is not None:
            handle.last_artifacts.mkdir(parents=True, exist_ok=True)
            shutil.move(log, handle.last_artifacts / log.name)


def spawn_browser(
    argv: list[str], env: Mapping[str, str], log: Path
) -> tuple[subprocess.Popen[bytes], CdpPipe]:
    """Start the browser (``argv``: the wrapper and its switches), its output in ``log``, and
    connect to its DevTools pipe."""
    # fd 3 of the browser reads our commands, fd 4 writes its answers; the copies sit
    # above 10 so that placing them at 3 and 4 in the child cannot overwrite each other.
    cmd_read, cmd_write = os.pipe()
    out_read, out_write = os.pipe()
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (cmd_read, out_write)]
    os.close(cmd_read)
    os.close(out_write)

    def child() -> None:
        os.dup2(high[0], 3)
        os.dup2(high[1], 4)

    try:
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                pass_fds=(3, 4),
                start_new_session=True,  # Ctrl-C reaches h2lab only; it closes the pipe
                preexec_fn=child,
            )
    except OSError as exc:
        for fd in (*high, cmd_write, out_read):
            os.close(fd)
        raise TrialFailed(f"chromium did not start: {exc}") from None
    for fd in high:
        os.close(fd)
    return proc, CdpPipe(cmd_write, out_read)


register("chromium", Chromium, Options)
