"""Firefox (Debian's ``firefox-esr``) loading a page, headless, driven over WebDriver BiDi,
which Firefox speaks itself (``--remote-debugging-port``): no geckodriver, no Playwright.

This module keeps the browsers and runs the trials; the rest is in its neighbours: the options
and preferences in :mod:`~h2lab.clients.browser.firefox.options`, the BiDi connection in
:mod:`~h2lab.clients.browser.firefox.bidi` (over
:mod:`~h2lab.clients.browser.firefox.websocket`), a trial's tab and its measured load in
:mod:`~h2lab.clients.browser.firefox.tab`, the events, metrics and HAR in
:mod:`~h2lab.clients.browser.firefox.events` and :mod:`~h2lab.clients.browser.log`.

Where the browser runs. A small wrapper script enters the client namespace (``ip netns
exec``), a UTS namespace of its own whose host name is ``localhost`` (Firefox resolves its
host name at start-up: the machine's name is in no lab ``/etc/hosts`` and the lookup waited
20 s for DNS), and runs Firefox there; it stays Firefox's parent and writes its exit status
(how a crashed trial names the signal that killed it). BiDi listens on the namespace's
loopback at a port Firefox picks and prints; h2lab connects to it from a thread that entered
the namespace (:func:`h2lab.net.netns.run_in_netns`). The browser is kept between trials
while the client namespace stays the same, and started again when it is a new one. One
browser per preference set: ``h1s`` turns HTTP/2 off and ``h3`` HTTP/3 on, browser-wide.
An ``h3`` browser loads one page from its own BiDi server (loopback) as it starts: Firefox's
Alt-Svc store, which holds the lab origins' ``h3=:443`` mapping, exists only after a first
request (:func:`_prime_alt_svc`); then every request of every trial goes over QUIC.

Clean state per trial: a new BiDi user context (see :mod:`~h2lab.clients.browser.firefox.tab`: the
cache, cookies, connections, TLS sessions and Alt-Svc entries of Firefox are keyed by it),
removed after the trial; the disk cache is off. The lab CA is trusted in the browser's own
profile only (its ``cert9.db``, made with ``certutil``), not system-wide.

Offline: the profile's preferences (:data:`~h2lab.clients.browser.firefox.options.OFFLINE_PREFS`),
and ``MOZ_DISABLE_NONLOCAL_CONNECTIONS=1`` in its environment: Firefox then refuses, by
crashing, any connection to an address that is not loopback or private (RFC 1918, where the
lab's origins are), and lets the remote-settings server be the dummy one (release builds
ignore that preference otherwise). Checked: a browser loading a page for 35 s in a namespace
whose default route and DNS server were visible sent no packet off loopback.

A trial with a packet capture gets the TLS keys of its own connections: its browser logs
them (NSS honours ``SSLKEYLOGFILE``) and each trial takes its slice
(:class:`~h2lab.clients.browser.keylog.KeylogSlices`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from h2lab import procs, programs
from h2lab.clients import LoadContext, LoadResult, register
from h2lab.clients.browser import names
from h2lab.clients.browser import pool as browser_pool
from h2lab.clients.browser.client import BrowserClient
from h2lab.clients.browser.firefox import frames
from h2lab.clients.browser.firefox.bidi import BidiConnection, BidiError, ConnectionClosed
from h2lab.clients.browser.firefox.events import RawLoad, analyse
from h2lab.clients.browser.firefox.journey import BidiSteps
from h2lab.clients.browser.firefox.options import (
    ALT_SVC_MAPPING,
    PROTOCOLS,
    Options,
    profile_prefs,
    user_js,
)
from h2lab.clients.browser.firefox.tab import (
    EVENTS,
    NETWORK_EVENTS,
    TAB_TIMEOUT_S,
    Tab,
    dispose,
    measure,
    new_tab,
)
from h2lab.clients.browser.firefox.websocket import WebSocket, WebSocketClosed
from h2lab.clients.browser.journey import step_url, take, with_steps
from h2lab.clients.browser.keylog import KeylogSlices
from h2lab.clients.browser.load import page_url
from h2lab.clients.browser.options import DEVICES
from h2lab.clients.browser.pool import Running, stop_process
from h2lab.clients.browser.result import keep_failed_log, write_artifacts
from h2lab.errors import H2LabError, ProcessFailed, TrialFailed, telling_line
from h2lab.metrics.qlog import take_written_since
from h2lab.net import netns, userns
from h2lab.pages import Page
from h2lab.spec.factors import DISCOVERIES

FIREFOX = Path(programs.FIREFOX.executable)
"""Debian's binary, without the /usr/bin/firefox-esr link."""

LAUNCH_TIMEOUT_S = 30.0
"""Longest wait for a browser to print its BiDi address and answer ``session.new`` (it took
0.4-1 s here)."""

LISTENING = re.compile(rb"WebDriver BiDi listening on ws://127\.0\.0\.1:(\d+)")
"""The line Firefox prints once its BiDi server listens."""

BIDI_FAILED = (TimeoutError, ConnectionClosed, BidiError)
"""How a BiDi call fails: no answer in time, the browser gone, or an error answer."""

ENVIRONMENT = {
    "MOZ_CRASHREPORTER_DISABLE": "1",
    "MOZ_DISABLE_NONLOCAL_CONNECTIONS": "1",
}
"""Added to Firefox's environment (see the module's text)."""

CA_NICKNAME = "h2lab local CA"


QLOG_PREF = "network.http.http3.enable_qlog"
"""neqo then writes a qlog file per HTTP/3 connection into ``$TMPDIR/qlog_<pid>/`` (the socket
process's), named ``<host>_<uuid>.qlog.sqlog``: measured on firefox-esr 153."""


@dataclass
class _Browser(Running[BidiConnection]):
    chrome: str
    """the browser window's chrome context (where the frames are recorded)"""
    qlog_root: Path | None = None
    """its ``TMPDIR``, where neqo writes its qlog files, when it was started to write them"""
    tabs: list[Tab] = field(default_factory=list)
    """the trial's tab (the events' listener routes to the last one)"""


class Firefox(BrowserClient[_Browser, Options]):
    name = "firefox"
    protocols = PROTOCOLS
    discoveries: frozenset[str] = frozenset(DISCOVERIES)
    mixed_origins = True
    qlog = True
    journeys = True

    def __init__(self, options: Options) -> None:
        super().__init__(options, _stop)
        self._version: str | None = None

    def version(self) -> str:
        if self._version is None:
            out = procs.version_text(programs.FIREFOX.version_argv())
            self._version = programs.FIREFOX.version_in(out) or out.strip()
        return self._version

    # -- browsers

    def _browser(self, protocol: str, ctx: LoadContext) -> _Browser:
        prefs = profile_prefs(protocol, ctx.hosts, ctx.discovery, ctx.h3_hosts)
        if ctx.qlog_dir is not None:
            prefs[QLOG_PREF] = True
        keys = ctx.keylog is not None
        key = json.dumps([prefs, str(ctx.tls_dir), keys], sort_keys=True)
        prime = ALT_SVC_MAPPING in prefs
        qlog = ctx.qlog_dir is not None
        return self._browsers.get(
            key, ctx, lambda: self._launch(user_js(prefs), ctx, prime, keys, qlog)
        )

    def _launch(
        self, prefs_js: str, ctx: LoadContext, prime_alt_svc: bool, keys: bool, qlog: bool
    ) -> _Browser:
        # in a UTS namespace of its own named localhost (see the module's text)
        inner = 'hostname localhost && exec "$@"'
        firefox = shlex.join(userns.unprivileged([str(FIREFOX)]))  # the user's, rootless
        command = f"ip netns exec {ctx.netns} unshare --uts sh -c '{inner}' sh {firefox}"
        if names.by_dns(ctx):  # the lab's names from the lab's resolver, not /etc/hosts
            hosts = shlex.quote(str(names.local_hosts(self._browsers.workdir())))
            own = names.own_hosts(hostname="localhost")
            command = f"ip netns exec {ctx.netns} {own} {hosts} {firefox}"
        files = self._browsers.launch_files(command)
        _make_profile(files.profile, prefs_js, ctx.tls_dir)
        args = ["--headless", "--no-remote", "--profile", str(files.profile)]
        # system access: the composition recorder is a privileged API (firefox.frames)
        args += ["--remote-debugging-port=0", "--remote-allow-system-access", "about:blank"]
        env = {**os.environ, **ENVIRONMENT, **self._browsers.runtime_env()}
        env["HOME"] = str(self._browsers.workdir())
        keylog = self._browsers.workdir() / f"keylog-{files.n}.txt"
        if keys:
            env["SSLKEYLOGFILE"] = str(keylog)
        qlog_root = self._browsers.workdir() / f"tmp-{files.n}" if qlog else None
        if qlog_root is not None:
            qlog_root.mkdir(parents=True, exist_ok=True)
            env["TMPDIR"] = str(qlog_root)
        with open(files.log, "wb") as out:
            proc = subprocess.Popen(
                [str(files.wrapper), *args],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        bidi: BidiConnection | None = None
        try:
            events = (*EVENTS, *(NETWORK_EVENTS if self.options.network else ()))
            bidi, port = _connect(ctx.netns, files.log, proc, events)
            chrome = frames.chrome_context(bidi, TAB_TIMEOUT_S)
            size = DEVICES[self.options.device]
            frames.fit_window(bidi, chrome, size.width, size.height)
            if prime_alt_svc:
                _prime_alt_svc(bidi, port)
        except (H2LabError, OSError, WebSocketClosed, *BIDI_FAILED) as exc:
            if bidi is not None:
                bidi.close()
            procs.stop(proc, grace_s=2)
            log = files.log
            said = telling_line(log.read_text(errors="replace")) if log.exists() else ""
            raise TrialFailed(f"firefox did not start: {said or exc}") from None
        handle = _Browser(
            proc, bidi, ctx.netns, ctx.link_generation, files.status_file, files.pid_file, chrome,
            qlog_root=qlog_root,
        )  # fmt: skip
        handle.keys = KeylogSlices(keylog) if keys else None
        bidi.listen(lambda method, params: _route(handle, method, params))
        return handle

    # -- one page load

    def prepare(self, protocol: str, ctx: LoadContext) -> None:
        """Start (or keep) the browser for ``protocol`` before the runner reads the trial's
        counters: its BiDi WebSocket is a TCP connection in the client namespace."""
        if protocol in PROTOCOLS:
            self._browser(protocol, ctx)

    def measured_load(self, page: Page, protocol: str, ctx: LoadContext) -> LoadResult:
        self.check_protocol(protocol)
        since_s = time.time()
        handle = self._browser(protocol, ctx)
        self._browsers.used(protocol, handle)
        _wait_quiet(handle.proc.pid)
        url = page_url(page, protocol)
        if ctx.journey is not None:  # its first step is the measured load
            url = step_url(ctx.journey.steps[0].target, url)
        ctx.artifacts_dir.mkdir(parents=True, exist_ok=True)
        tab: Tab | None = None
        try:
            tab = new_tab(handle.connection, DEVICES[self.options.device], self.version())
            handle.tabs = [tab]
            raw = self._measure(handle, tab, url, page, ctx)
            steps = (
                []
                if ctx.journey is None
                else take(BidiSteps(tab, handle.connection, url, ctx.timeout_s), ctx.journey,
                          url, raw.timing, ctx.artifacts_dir)
            )  # fmt: skip
        except TrialFailed:
            if tab is not None:
                keep_failed_log(tab.log, url, ctx.artifacts_dir)
                if handle.alive():
                    with contextlib.suppress(TrialFailed, *BIDI_FAILED):
                        frames.discard(handle.connection, handle.chrome)
                    dispose(handle.connection, tab)
            raise
        except BIDI_FAILED as exc:
            if tab is not None:
                keep_failed_log(tab.log, url, ctx.artifacts_dir)
            # the connection closes when Firefox dies; the wrapper writes its status after
            raise self._failure(handle, protocol, exc, isinstance(exc, ConnectionClosed)) from None
        finally:
            handle.tabs = []
            handle.take_keys(ctx.keylog)
        dispose(handle.connection, tab)
        if handle.qlog_root is not None and ctx.qlog_dir is not None:
            take_written_since(handle.qlog_root, since_s, ctx.qlog_dir, "qlog_*/*.sqlog")
        o = self.options
        analysis = analyse(raw, url, network=o.network, mode=o.speed_index, idle=o.idle_ms > 0)
        write_artifacts(analysis, ctx.artifacts_dir, filmstrip=self.options.filmstrip)
        return with_steps(analysis.result, steps) if steps else analysis.result

    def _measure(
        self, handle: _Browser, tab: Tab, url: str, page: Page, ctx: LoadContext
    ) -> RawLoad:
        """The load, with the compositor's frames recorded around it (option ``visual``)."""
        visual = self.options.visual
        if visual:
            frames.start(handle.connection, handle.chrome)
        raw = measure(
            tab, handle.connection, url, page, timeout_s=ctx.timeout_s,
            idle_ms=self.options.idle_ms, fail_on=ctx.fail_on,
        )  # fmt: skip
        if visual:
            origin = raw.timing.get("timeOrigin")
            at = float(origin) if isinstance(origin, int | float) else None
            decoded = frames.stop(handle.connection, handle.chrome, at)
            if decoded is not None:
                raw.frames = decoded
        return raw


def _stop(handle: _Browser) -> None:
    """Close a browser: ``browser.close``, then its exit (killed if it does not go)."""
    with contextlib.suppress(*BIDI_FAILED):
        handle.connection.call("browser.close", timeout_s=2)
    handle.connection.close()
    stop_process(handle)


def session_cpu_s(session: int, stats: Mapping[int, str], ticks_per_s: float) -> float:
    """CPU seconds (user + system) of the processes of ``session`` among ``stats`` (pid ->
    the text of its ``/proc/<pid>/stat``)."""
    total = 0
    for text in stats.values():
        fields = text.rsplit(")", 1)[-1].split()
        # after the command: state ppid pgrp session ... utime (12th) stime (13th)
        if len(fields) > 12 and int(fields[3]) == session:
            total += int(fields[11]) + int(fields[12])
    return total / ticks_per_s


def _proc_stats() -> dict[int, str]:
    stats = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stats[int(entry.name)] = (entry / "stat").read_text()
    return stats


def _wait_quiet(session: int) -> None:
    """Until Firefox's processes (its wrapper's session) are quiet
    (:func:`browser_pool.wait_quiet`). A trial begun right after the browser started (still
    busy on this 2-core machine) opened a second TCP connection for its one h2 origin
    (Firefox's backup connection, after 250 ms without an answer to the first SYN) and
    measured plt 605 vs 536 ms."""
    ticks = float(os.sysconf("SC_CLK_TCK"))
    browser_pool.wait_quiet(lambda: session_cpu_s(session, _proc_stats(), ticks))


def _route(handle: _Browser, method: str, params: dict[str, object]) -> None:
    """One event of the browser's session, to the trial's tab (none between trials)."""
    for tab in handle.tabs:
        tab.on(method, params)


def _make_profile(profile: Path, prefs_js: str, tls_dir: Path | None) -> None:
    """A new profile: its preferences, and the lab CA trusted in its own NSS database."""
    profile.mkdir(parents=True)
    (profile / "user.js").write_text(prefs_js)
    if tls_dir is None:
        return
    from h2lab.tls import LocalCA

    ca = LocalCA(tls_dir).cert_path
    db = f"sql:{profile}"
    try:
        procs.run(["certutil", "-N", "-d", db, "--empty-password"])
        procs.run(["certutil", "-A", "-d", db, "-n", CA_NICKNAME, "-t", "C,,", "-i", str(ca)])
    except ProcessFailed as exc:
        raise TrialFailed(f"firefox: trusting the lab CA in its profile failed: {exc}") from None


def _connect(
    netns_name: str, log: Path, proc: subprocess.Popen[bytes], events: Sequence[str]
) -> tuple[BidiConnection, int]:
    """The browser's BiDi session, once it prints its address: connected from inside
    ``netns_name`` (its loopback), a session made and ``events`` on."""
    port: list[int] = []

    def listening() -> bool:
        if proc.poll() is not None:
            raise TrialFailed(f"firefox exited with status {proc.returncode} before it listened")
        found = LISTENING.search(log.read_bytes()) if log.exists() else None
        if found:
            port.append(int(found.group(1)))
        return bool(found)

    procs.wait_until("firefox's BiDi address", listening, timeout_s=LAUNCH_TIMEOUT_S)
    address = ("127.0.0.1", port[0])
    sock = netns.run_in_netns(netns_name, lambda: socket.create_connection(address, timeout=5))
    try:
        ws = WebSocket.open(sock, f"127.0.0.1:{port[0]}", "/session")
    except (OSError, WebSocketClosed):
        sock.close()
        raise
    sock.settimeout(None)
    bidi = BidiConnection(ws)
    try:
        bidi.call("session.new", {"capabilities": {}}, timeout_s=LAUNCH_TIMEOUT_S)
        bidi.call("session.subscribe", {"events": list(events)}, timeout_s=TAB_TIMEOUT_S)
    except BIDI_FAILED:
        bidi.close()
        raise
    return bidi, port[0]


def _prime_alt_svc(bidi: BidiConnection, port: int) -> None:
    """One page load by a new ``h3`` browser, before its first trial, from its own BiDi server
    (``http://127.0.0.1:<port>/``, the client namespace's loopback: nothing crosses the link),
    then back to ``about:blank``. Firefox opens its Alt-Svc store on the first request that looks
    a mapping up, after that request has read the test mapping
    (``network.http.http3.alt-svc-mapping-for-testing``) into the store that did not exist yet:
    without this, the first trial's HTML went over TCP and h2 ("AltSvcCache::LookupMapping
    MISS", "Using default connection info") and the objects after it over h2 or h3."""
    tree = bidi.call("browsingContext.getTree", {}, timeout_s=TAB_TIMEOUT_S)
    context = tree["contexts"][0]["context"]
    for url in (f"http://127.0.0.1:{port}/", "about:blank"):
        bidi.call(
            "browsingContext.navigate",
            {"context": context, "url": url, "wait": "complete"},
            timeout_s=TAB_TIMEOUT_S,
        )


register("firefox", Firefox, Options)
