"""Chromium (Debian's ``/usr/lib/chromium/chromium``) loading a page, driven over the DevTools
protocol on its own pipe (``--remote-debugging-pipe``), with no Playwright in between.

Where the browser runs. h2lab starts a small wrapper script that enters the client namespace
(``ip netns exec``) and runs Chromium there, so every packet of the page load crosses the
emulated link; the DevTools pipe (fds 3 and 4) passes through it unchanged. The wrapper stays
Chromium's parent and writes its exit status (how a crashed trial names the signal that killed
it). The browser is kept between trials while the client namespace stays the same (the runner
reuses a link only when it holds no state, see ``runner.run.link_is_stateless``) and started
again when the namespace is a new one. One browser per launch-flag set: ``h1s`` needs
``--disable-http2``, a browser-wide switch. The switches Playwright 1.65 used to pass are kept
(:data:`PLAYWRIGHT_FLAGS`), so the browser behaves as it did when Playwright drove it.

One trial, in order: the tab made ready after the previous trial is taken (a new browser
context and a blank page, attached by a flat DevTools session with Network and Page events
on); tracing starts; ``Page.navigate``; the load event; two animation frames and
:data:`SCREENSHOT_SETTLE_MS` (the page's timing read meanwhile); the trace is read back as one
stream. Then, off the page load: the context is closed without waiting, the analysis (trace,
SpeedIndex, HAR) runs on one thread while the next trial's context and page are made on
another (mostly Chromium starting a renderer); ``load`` returns when the analysis is done, the
old context is gone and Chromium is quiet again (:data:`QUIET_CPU_SHARE`: a renderer goes on
starting for about a second after it answers, and a load begun meanwhile is slower). Only
DevTools calls cross threads; the connection (:class:`_Cdp`) is safe for that.

Clean state per trial. Each trial gets a new browser context (Chromium's off-the-record
profile): its own HTTP cache, cookies, socket pools and HTTP/2 sessions, all dropped when the
context closes. Names never reach a resolver: ``--host-resolver-rules`` maps each lab origin
to its address and every other name to "not found", so no DNS cache exists to carry over.
The lab CA is trusted by its SPKI pin (``--ignore-certificate-errors-spki-list``), not by
ignoring certificate errors.

Protocols. ``h1c``: http:// (HTTPS upgrades off); ``h1s``: https with HTTP/2 disabled, so ALPN
picks http/1.1; ``h2s``: https, ALPN h2. QUIC is off for all three; ``h3`` will add its own
flag set (``--origin-to-force-quic-on``) when a QUIC server exists. ``h1p`` and ``h2c`` are not
possible in Chromium (no pipelining, no cleartext HTTP/2) and are rejected.

Metrics. Navigation and paint timing from the page (``ttfb_ms`` = responseStart, ``dcl_ms`` =
domContentLoadedEventStart, ``plt_ms`` = loadEventEnd, ``fp_ms``, ``fcp_ms``, ``lcp_ms``, all
from navigation start); resources from DevTools Network events (start, first byte, end, body
bytes, protocol, connection id, priority); SpeedIndex and visual complete from the
screenshots of a Chrome trace (``disabled-by-default-devtools.screenshot``: one JPEG per
compositor frame that changed, so every visual change is seen, up to the display rate of
60 per second), computed by :mod:`h2lab.metrics.visual`. The load ends at the load event plus
two animation frames and 100 ms (so the paint that follows it is in the trace).

Options (``chromium:device=mobile,cpu=4``): ``device`` desktop (1366x768) or mobile (412x823,
DPR 1.75, touch; Lighthouse's phone), ``cpu`` CPU slowdown factor (DevTools CPU throttling),
``netlog`` and ``keylog`` (1: a NetLog / SSLKEYLOGFILE per browser, moved into the folder of
the last trial that browser loaded when it exits; it covers every trial since it started),
``idle`` (a duration: after the load event, also wait for that much network silence),
``filmstrip`` (1: keep the frames as JPEG files in the trial folder), ``restart`` (1: a new
browser for every trial, as browsertime does; ``bench/overhead.py`` compares the two).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from h2lab import procs
from h2lab.clients import LoadContext, LoadResult, ResourceTiming, register
from h2lab.errors import H2LabError, TrialFailed, UnitError, WaitTimeout, telling_line
from h2lab.metrics.visual import Frame, visual_metrics
from h2lab.pages import Page
from h2lab.servers import PORTS, url_for
from h2lab.units import parse_duration_ms

CHROMIUM = Path("/usr/lib/chromium/chromium")
"""Debian's binary, without the /usr/bin/chromium shell wrapper (and its /etc/chromium.d)."""

PROTOCOLS = frozenset({"h1c", "h1s", "h2s", "h3"})

# The brief's flags for a browser that must not reach the internet, plus no HTTPS upgrade of
# http:// navigations (h1c would silently become h2s) and no QUIC.
BASE_FLAGS = (
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
    "--disable-features=HttpsUpgrades,HttpsFirstBalancedModeAutoEnable,MediaRouter",
    "--no-default-browser-check",
)
# What Playwright 1.65 passed to Chromium (its ``chromiumSwitches`` and headless switches),
# which drove the browser of h2lab before it spoke DevTools itself: kept so that the browser
# behaves as it did (no timer throttling or backgrounding, sRGB, no extensions). Its own
# ``--disable-features`` list is left out: a second one overrode it (BASE_FLAGS) then too.
PLAYWRIGHT_FLAGS = (
    "--disable-field-trial-config",
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-back-forward-cache",
    "--disable-breakpad",
    "--disable-component-extensions-with-background-pages",
    "--disable-default-apps",
    "--disable-dev-shm-usage",
    "--disable-extensions",
    "--allow-pre-commit-input",
    "--disable-hang-monitor",
    "--disable-ipc-flooding-protection",
    "--disable-popup-blocking",
    "--disable-prompt-on-repost",
    "--disable-renderer-backgrounding",
    "--force-color-profile=srgb",
    "--metrics-recording-only",
    "--password-store=basic",
    "--use-mock-keychain",
    "--no-service-autorun",
    "--disable-search-engine-choice-screen",
    "--enable-unsafe-swiftshader",
)
HEADLESS_FLAGS = (
    "--headless",
    "--hide-scrollbars",
    "--mute-audio",
    "--blink-settings=primaryHoverType=2,availableHoverTypes=2,primaryPointerType=4,"
    "availablePointerTypes=4",
)

LAUNCH_TIMEOUT_S = 30.0
"""Longest wait for a browser to answer its first DevTools command (Playwright's default)."""
TAB_TIMEOUT_S = 10.0
"""Longest wait for one step of making or closing a tab (they take 0.01-0.3 s here)."""

QUIET_CPU_SHARE = 0.1
"""Chromium is quiet when all its processes together used less than this share of one core
over :data:`QUIET_POLL_S`, twice in a row. A new tab's renderer answers DevTools after
~0.25 s but goes on starting for ~1 s more (0.8-1.0 s of CPU on this 2-core machine);
a load begun meanwhile measured (20 trials of the demo page, h2s, cable, three runs each)
plt 852-871 vs 796-803 ms, fcp 228-266 vs 200-206 ms and SpeedIndex 621-640 vs 558-564 ms
against a load begun 1.5 s later."""
QUIET_POLL_S = 0.05
QUIET_TIMEOUT_S = 5.0
"""Longest wait for quiet; a browser still busy then is used anyway (a slow machine must not
stop the run)."""

PROTOCOL_FLAGS: Mapping[str, tuple[str, ...]] = {
    "h1c": (),
    "h1s": ("--disable-http2",),
    "h2s": (),
    "h3": ("--enable-quic",),  # and --origin-to-force-quic-on for every lab origin
}


@dataclass(frozen=True)
class Device:
    width: int
    height: int
    scale: float
    mobile: bool


DEVICES: Mapping[str, Device] = {
    "desktop": Device(1366, 768, 1.0, False),
    "mobile": Device(412, 823, 1.75, True),  # Lighthouse's emulated phone (Moto G Power)
}

# Only what the metrics need: navigationStart (blink.user_timing) and the screenshots. More
# categories (devtools.timeline) multiply the trace's size and its transfer time.
TRACE_CATEGORIES = (
    "blink.user_timing",
    "disabled-by-default-devtools.screenshot",
)

SCREENSHOT_SETTLE_MS = 100
"""After the load event and two animation frames, the time given to the compositor's last
screenshot to reach the trace (it is captured and encoded after the frame is drawn; without
this wait the final frame was sometimes missing and SpeedIndex stopped at the one before)."""

# After the load event: two animation frames, so the paint the load triggers is traced.
_AFTER_LOAD_JS = """
(settleMs) => new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(() =>
  setTimeout(() => {
  const nav = performance.getEntriesByType('navigation')[0] || {};
  const paints = {};
  for (const p of performance.getEntriesByType('paint')) paints[p.name] = p.startTime;
  let lcp = null;
  try {
    const po = new PerformanceObserver(() => {});
    po.observe({type: 'largest-contentful-paint', buffered: true});
    const entries = po.takeRecords();
    if (entries.length) lcp = entries[entries.length - 1].startTime;
    po.disconnect();
  } catch (e) {}
  const elements = {};
  try {
    const po = new PerformanceObserver(() => {});
    po.observe({type: 'element', buffered: true});
    for (const e of po.takeRecords()) elements[e.identifier] = e.renderTime || e.loadTime;
    po.disconnect();
  } catch (e) {}
  resolve({
    elements: elements,
    responseStart: nav.responseStart, dcl: nav.domContentLoadedEventStart,
    loadEventEnd: nav.loadEventEnd, fp: paints['first-paint'],
    fcp: paints['first-contentful-paint'], lcp: lcp,
  });
}, settleMs))))
"""


@dataclass(frozen=True)
class Options:
    device: str = "desktop"
    cpu_slowdown: float = 1.0
    netlog: bool = False
    keylog: bool = False
    filmstrip: bool = False
    restart: bool = False
    """start a new browser for every trial (browsertime's way; for bench/overhead)"""
    idle_ms: float = 0.0
    """after the load event, also wait until the network has been idle this long (WebPageTest's
    "fully loaded": 2000 ms), so requests made by scripts after load are made and served"""


def parse_options(options: Mapping[str, str]) -> Options:
    """Validate ``chromium:key=value,...`` options (ValueError: one line naming the option)."""
    known = {"device", "cpu", "netlog", "keylog", "filmstrip", "restart", "idle"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(
            f"unknown chromium option {unknown[0]!r} (known: {', '.join(sorted(known))})"
        )
    device = options.get("device", "desktop")
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")
    try:
        cpu = float(options.get("cpu", "1"))
    except ValueError:
        raise ValueError(f"cpu must be a slowdown factor like 4, got {options['cpu']!r}") from None
    if not 1 <= cpu <= 20:
        raise ValueError(f"cpu slowdown must be 1..20, got {cpu:g}")
    flags = {}
    for name in ("netlog", "keylog", "filmstrip", "restart"):
        value = options.get(name, "0")
        if value not in ("0", "1"):
            raise ValueError(f"{name} must be 0 or 1, got {value!r}")
        flags[name] = value == "1"
    idle = options.get("idle", "0")
    try:
        idle_ms = float(parse_duration_ms(idle)) if idle != "0" else 0.0
    except UnitError:
        raise ValueError(f"idle must be a duration like 2s, got {idle!r}") from None
    if not 0 <= idle_ms <= 30_000:
        raise ValueError(f"idle must be 0..30s, got {idle!r}")
    return Options(device, cpu, idle_ms=idle_ms, **flags)


def launch_flags(protocol: str, hosts: Mapping[str, str], spki: str | None) -> tuple[str, ...]:
    """Pure: the command-line switches of the browser that runs ``protocol``."""
    rules = [f"MAP {host} {ip}" for host, ip in sorted(hosts.items())] + ["MAP * ~NOTFOUND"]
    base = [f for f in BASE_FLAGS if not (protocol == "h3" and f == "--disable-quic")]
    flags = [*base, *PROTOCOL_FLAGS[protocol], f"--host-resolver-rules={', '.join(rules)}"]
    if protocol == "h3":
        # QUIC from the first request, no TCP race: every lab origin is known to speak h3
        quic_on = ",".join(f"{host}:{PORTS['h3']}" for host in sorted(hosts))
        flags.append(f"--origin-to-force-quic-on={quic_on}")
    if spki:
        flags.append(f"--ignore-certificate-errors-spki-list={spki}")
    return tuple(flags)


def page_url(page: Page, protocol: str) -> str:
    return url_for(page.entry, protocol)


# ------------------------------------------------------------------ DevTools events -> rows


@dataclass
class _Request:
    url: str
    start_s: float
    priority: str | None
    protocol: str | None = None
    connection: str | None = None
    ttfb_s: float | None = None
    end_s: float | None = None
    body_bytes: int = 0
    encoded_bytes: int | None = None
    header_bytes: int | None = None
    status: int | None = None
    from_cache: bool = False
    failed: str | None = None
    remote: str | None = None
    request_headers: dict[str, str] = field(default_factory=dict)
    response_headers: dict[str, str] = field(default_factory=dict)


UNFINISHED_NAMED = 3
"""How many unfinished requests a timeout's line names."""


def describe_unfinished(log: NetworkLog) -> str:
    """``; 2 of 80 requests unfinished: https://a/x.js (12,000 B received), ...``: what a page
    that never fired its load event was still waiting for ('' when nothing was)."""
    waiting = log.unfinished()
    if not waiting:
        return ""
    named = ", ".join(f"{r.url} ({r.body_bytes:,} B received)" for r in waiting[:UNFINISHED_NAMED])
    more = (
        f", and {len(waiting) - UNFINISHED_NAMED} more" if len(waiting) > UNFINISHED_NAMED else ""
    )
    return f"; {len(waiting)} of {len(log.requests)} requests unfinished: {named}{more}"


CANCELLED_BY_PAGE = "net::ERR_ABORTED"
"""Chromium's errorText for a request the page (or a navigation) cancelled itself."""


def failed_page_requests(log: NetworkLog, page: Page) -> list[_Request]:
    """Requests for the page's own resources (what its servers serve) that failed: a network
    error such as a connection timeout on a slow link. The load event still fires, without
    them, so the page's times are those of a smaller page and the trial fails instead. A
    request the page cancelled (:data:`CANCELLED_BY_PAGE`) or one for a URL the page does not
    have (a replayed page asking a host it did not capture) is the page's doing and counts
    for nothing."""
    return sorted(
        (
            r
            for r in log.snapshot()
            if r.failed and r.failed != CANCELLED_BY_PAGE and page.match("GET", r.url)
        ),
        key=lambda r: r.start_s,
    )


def describe_failed(failed: Sequence[_Request], log: NetworkLog) -> str:
    """``3 of 31 requests for the page's resources failed: https://a/1.png (net::ERR_X), ...``"""
    named = ", ".join(f"{r.url} ({r.failed})" for r in failed[:UNFINISHED_NAMED])
    more = f", and {len(failed) - UNFINISHED_NAMED} more" if len(failed) > UNFINISHED_NAMED else ""
    return (
        f"{len(failed)} of {len(log.requests)} requests for the page's resources failed: "
        f"{named}{more}"
    )


class NetworkLog:
    """Collects DevTools ``Network.*`` events of one page load (timestamps in seconds on the
    browser's monotonic clock, the clock of trace events too)."""

    def __init__(self) -> None:
        self.requests: dict[str, _Request] = {}
        self.last_activity_s = time.monotonic()
        """host monotonic time of the last Network event (for the network-idle wait)"""

    def on(self, method: str, p: dict[str, Any]) -> None:
        self.last_activity_s = time.monotonic()
        rid = p.get("requestId", "")
        if method == "Network.requestWillBeSent":
            req = p["request"]
            redirected = self.requests.get(rid)
            if redirected is not None and "redirectResponse" in p:
                # the same request id goes on to the Location: keep the 3xx as its own row
                resp = p["redirectResponse"]
                redirected.status = resp.get("status")
                redirected.protocol = resp.get("protocol")
                redirected.connection = str(resp.get("connectionId", ""))
                redirected.end_s = p["timestamp"]
                self.requests[f"{rid}#{len(self.requests)}"] = redirected
            self.requests[rid] = _Request(
                url=req["url"],
                start_s=p["timestamp"],
                priority=req.get("initialPriority"),
                request_headers=dict(req.get("headers", {})),
            )
            return
        r = self.requests.get(rid)
        if r is None:
            return
        if method == "Network.responseReceived":
            resp = p["response"]
            r.protocol = resp.get("protocol")
            r.connection = str(resp.get("connectionId", ""))
            r.status = resp.get("status")
            r.remote = resp.get("remoteIPAddress")
            r.from_cache = bool(resp.get("fromDiskCache") or resp.get("fromPrefetchCache"))
            r.response_headers = dict(resp.get("headers", {}))
            timing = resp.get("timing") or {}
            if "requestTime" in timing and "receiveHeadersEnd" in timing:
                r.ttfb_s = timing["requestTime"] + timing["receiveHeadersEnd"] / 1000
        elif method == "Network.responseReceivedExtraInfo":
            text = p.get("headersText")
            if text:
                r.header_bytes = len(text.encode())
        elif method == "Network.requestServedFromCache":
            r.from_cache = True
        elif method == "Network.dataReceived":
            r.body_bytes += int(p.get("dataLength", 0))
        elif method == "Network.loadingFinished":
            r.end_s = p["timestamp"]
            r.encoded_bytes = int(p.get("encodedDataLength", 0))
        elif method == "Network.loadingFailed":
            r.end_s = p["timestamp"]
            r.failed = p.get("errorText", "failed")

    def snapshot(self) -> list[_Request]:
        """The requests so far. The CDP reader thread adds requests while a load is measured:
        iterating ``requests`` itself then raised "dictionary changed size during iteration"
        (yahoo, in the failed-request check); ``list()`` copies it under the GIL."""
        return list(self.requests.values())

    def unfinished(self) -> list[_Request]:
        """Requests with neither their end nor a failure yet, oldest first."""
        return sorted(
            (r for r in self.snapshot() if r.end_s is None and not r.failed),
            key=lambda r: r.start_s,
        )

    def finished(self) -> list[_Request]:
        return sorted(
            (r for r in self.snapshot() if r.end_s is not None and not r.failed),
            key=lambda r: r.start_s,
        )

    def resources(self, t0_s: float) -> tuple[ResourceTiming, ...]:
        def ms(t: float | None) -> float | None:
            return None if t is None else round((t - t0_s) * 1000, 3)

        rows = []
        for r in self.finished():
            rows.append(
                ResourceTiming(
                    url=r.url,
                    origin=urlsplit(r.url).hostname or "",
                    start_ms=ms(r.start_s) or 0.0,
                    ttfb_ms=ms(r.ttfb_s),
                    end_ms=ms(r.end_s) or 0.0,
                    bytes=r.body_bytes,
                    protocol=r.protocol or "",
                    connection=r.connection or "",
                    priority=r.priority,
                    status=r.status,
                )
            )
        return tuple(rows)

    def har(
        self,
        page_url: str,
        t0_s: float,
        metrics: Mapping[str, float | None],
        *,
        every: bool = False,
    ) -> dict[str, Any]:
        """A HAR 1.2 log: one page, one entry per finished request, with Chromium's protocol,
        connection id, priority and header sizes. With ``every``, the failed and unfinished
        requests too (a failed load's log), each with ``_error``: Chromium's errorText, or
        ``unfinished`` for one still waiting when the load ended."""
        chosen = sorted(self.snapshot(), key=lambda r: r.start_s) if every else self.finished()
        entries = []
        for r in chosen:
            start_ms = (r.start_s - t0_s) * 1000
            wait = ((r.ttfb_s or r.start_s) - r.start_s) * 1000
            receive = ((r.end_s or r.start_s) - (r.ttfb_s or r.start_s)) * 1000
            error = r.failed or ("unfinished" if r.end_s is None else None)
            entries.append(
                {
                    "pageref": "page_1",
                    "startedDateTime": f"+{start_ms:.3f}ms",
                    "time": round(wait + receive, 3),
                    "request": {
                        "method": "GET",
                        "url": r.url,
                        "httpVersion": r.protocol or "",
                        "headers": [{"name": k, "value": v} for k, v in r.request_headers.items()],
                        "headersSize": -1,
                        "bodySize": 0,
                    },
                    "response": {
                        "status": r.status or 0,
                        "httpVersion": r.protocol or "",
                        "headers": [{"name": k, "value": v} for k, v in r.response_headers.items()],
                        "headersSize": r.header_bytes if r.header_bytes is not None else -1,
                        "bodySize": r.body_bytes,
                        "_transferSize": r.encoded_bytes,
                        "content": {"size": r.body_bytes},
                    },
                    "timings": {
                        "blocked": -1,
                        "dns": -1,
                        "connect": -1,
                        "send": 0,
                        "wait": round(wait, 3),
                        "receive": round(receive, 3),
                    },
                    "connection": r.connection or "",
                    "serverIPAddress": r.remote or "",
                    "_priority": r.priority,
                    "_fromCache": r.from_cache,
                    **({"_error": error} if every and error else {}),
                }
            )
        return {
            "log": {
                "version": "1.2",
                "creator": {"name": "h2lab", "version": "0"},
                "pages": [
                    {
                        "id": "page_1",
                        "title": page_url,
                        "startedDateTime": "+0ms",
                        "pageTimings": {
                            "onContentLoad": metrics.get("dcl_ms"),
                            "onLoad": metrics.get("plt_ms"),
                            **{f"_{k}": v for k, v in metrics.items()},
                        },
                    }
                ],
                "entries": entries,
            }
        }


HAR_FILE = "page.har"
"""A load's requests as HAR, in its attempt's artifacts (a failed load's too)."""


def _keep_failed_log(log: NetworkLog, url: str, folder: Path) -> None:
    """Write a failed load's every request (failed and unfinished ones with ``_error``) as a
    HAR, times from the first request: what an incomplete or timed-out load was waiting for."""
    if not log.requests:
        return
    t0_s = min(r.start_s for r in log.snapshot())
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / HAR_FILE).write_text(json.dumps(log.har(url, t0_s, {}, every=True)))


def trace_frames(trace: Mapping[str, Any]) -> tuple[float | None, list[Frame]]:
    """Pure: the navigation start (seconds, monotonic) of the main frame's last navigation and
    the screenshots after it, from a Chrome trace."""
    events = trace.get("traceEvents", [])
    nav_us = None
    for e in events:
        if e.get("name") == "navigationStart":
            data = e.get("args", {}).get("data", {})
            if data.get("isLoadingMainFrame") and data.get("documentLoaderURL", "").startswith(
                ("http://", "https://")
            ):
                nav_us = max(nav_us or 0, e["ts"])
    frames = []
    if nav_us is not None:
        for e in events:
            if e.get("name") == "Screenshot" and e.get("ts", 0) >= nav_us:
                snap = e.get("args", {}).get("snapshot")
                if snap:
                    frames.append(Frame((e["ts"] - nav_us) / 1000, base64.b64decode(snap)))
    return (None if nav_us is None else nav_us / 1e6), frames


# --------------------------------------------------------------------- DevTools over the pipe


class _PipeClosed(Exception):
    """The browser's end of the DevTools pipe is gone (it exited or crashed)."""


class _CdpError(Exception):
    """The browser answered a DevTools command with an error."""


_CLOSED = "h2lab.pipeClosed"
"""The event every session listener gets once when the pipe closes."""

_AUTO_ATTACH = {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True}
_CHILD_COMMANDS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("Network.enable", {}),
    ("Target.setAutoAttach", _AUTO_ATTACH),
    ("Runtime.runIfWaitingForDebugger", {}),
)
"""What a page's child target (cross-site iframe, worker) gets when it attaches."""

Listener = Callable[[str, dict[str, Any]], None]


class _Reply:
    """The answer to one DevTools command, filled in by the reader thread."""

    def __init__(self, method: str) -> None:
        self.method = method
        self._done = threading.Event()
        self._message: dict[str, Any] | None = None

    def set(self, message: dict[str, Any] | None) -> None:
        self._message = message
        self._done.set()

    def result(self, timeout_s: float) -> dict[str, Any]:
        if not self._done.wait(timeout_s):
            raise TimeoutError(f"no answer to {self.method} within {timeout_s:g} s")
        if self._message is None:
            raise _PipeClosed(f"browser closed the DevTools pipe during {self.method}")
        if "error" in self._message:
            raise _CdpError(f"{self.method}: {self._message['error'].get('message', '?')}")
        result: dict[str, Any] = self._message.get("result", {})
        return result


class _Cdp:
    """The DevTools protocol over Chromium's ``--remote-debugging-pipe`` (fd 3: commands in, fd
    4: answers and events out; JSON messages ended by NUL). A reader thread hands each answer
    to its command's :class:`_Reply` and each event to the listener of its session (flat
    sessions: ``sessionId`` on the message). Any thread may send."""

    def __init__(self, to_browser: int, from_browser: int) -> None:
        self._out = to_browser
        self._in = from_browser
        self._lock = threading.Lock()
        self._next_id = 0
        self._waiting: dict[int, _Reply] = {}
        self._listeners: dict[str, Listener] = {}
        self.closed = threading.Event()
        threading.Thread(target=self._read, name="chromium-devtools", daemon=True).start()

    def send(
        self, method: str, params: Mapping[str, Any] | None = None, session: str = ""
    ) -> _Reply:
        reply = _Reply(method)
        with self._lock:
            if self.closed.is_set():
                reply.set(None)
                return reply
            self._next_id += 1
            message: dict[str, Any] = {"id": self._next_id, "method": method}
            if params:
                message["params"] = params
            if session:
                message["sessionId"] = session
            self._waiting[self._next_id] = reply
            data = json.dumps(message).encode() + b"\0"
            try:
                while data:
                    data = data[os.write(self._out, data) :]
            except OSError:
                self._waiting.pop(self._next_id, None)
                reply.set(None)
        return reply

    def call(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        session: str = "",
        timeout_s: float = 30.0,
    ) -> dict[str, Any]:
        return self.send(method, params, session).result(timeout_s)

    def listen(self, session: str, listener: Listener | None) -> None:
        with self._lock:
            if listener is None:
                self._listeners.pop(session, None)
            else:
                self._listeners[session] = listener

    def close(self) -> None:
        """Close our end of the pipe (the browser exits when it reads EOF)."""
        with self._lock, contextlib.suppress(OSError):
            os.close(self._out)

    def _read(self) -> None:
        buffer = b""
        try:
            while chunk := os.read(self._in, 1 << 20):
                *messages, buffer = (buffer + chunk).split(b"\0")
                for raw in messages:
                    self._dispatch(json.loads(raw))
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                os.close(self._in)
            with self._lock:
                self.closed.set()
                waiting, self._waiting = self._waiting, {}
                listeners = list(self._listeners.values())
            for reply in waiting.values():
                reply.set(None)
            for listener in listeners:
                listener(_CLOSED, {})

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "id" in message:
            with self._lock:
                reply = self._waiting.pop(message["id"], None)
            if reply is not None:
                reply.set(message)
            return
        listener = self._listeners.get(message.get("sessionId", ""))
        if listener is not None:
            listener(message.get("method", ""), message.get("params", {}))


# ------------------------------------------------------------------------------ the client


class _Tab:
    """One trial's browser context with one blank page, attached by a flat DevTools session.

    Events of the session arrive on the reader thread: Network events go to :attr:`log`, the
    load event, trace completion, a renderer crash and the pipe closing set :attr:`signal`."""

    def __init__(self, context_id: str, session: str, cdp: _Cdp | None = None) -> None:
        self.context_id = context_id
        self.session = session
        self.cdp = cdp
        self.children: list[str] = []
        """sessions of the page's own targets: cross-site iframes (their own renderer under
        site isolation) and workers, attached as they start (``Target.setAutoAttach``)"""
        self.log = NetworkLog()
        self.signal = threading.Event()
        self.loaded = False
        self.request_failed = False
        """a request failed since the load's wait last looked (it may be a cancel)"""
        self.crashed = False
        self.closed = False
        self.trace_stream: str | None = None
        self._navigating = False

    def on(self, method: str, params: dict[str, Any]) -> None:
        if method.startswith("Network."):
            self._network(method, params)
        elif method == "Target.attachedToTarget":
            self._attach(params["sessionId"])
        elif method == "Page.loadEventFired":
            if self._navigating:
                self.loaded = True
                self.signal.set()
        elif method == "Tracing.tracingComplete":
            self.trace_stream = params.get("stream", "")
            self.signal.set()
        elif method == "Inspector.targetCrashed":
            self.crashed = True
            self.signal.set()
        elif method == _CLOSED:
            self.closed = True
            self.signal.set()

    def _network(self, method: str, params: dict[str, Any]) -> None:
        self.log.on(method, params)
        if method == "Network.loadingFailed":
            self.request_failed = True
            self.signal.set()

    def _attach(self, child: str) -> None:
        """A target of the page started, paused: its Network events join the page's log (request
        ids are the browser's, unique across processes; a cross-site frame's document request
        starts on the parent's session and ends on the frame's), its own children attach too,
        then it runs. Called on the reader thread, so nothing here waits for an answer."""
        cdp = self.cdp
        if cdp is None:
            return
        self.children.append(child)

        def on_child(method: str, params: dict[str, Any]) -> None:
            if method.startswith("Network."):
                self._network(method, params)
            elif method == "Target.attachedToTarget":
                self._attach(params["sessionId"])

        cdp.listen(child, on_child)
        for method, params in _CHILD_COMMANDS:
            cdp.send(method, params, child)

    def navigating(self) -> None:
        """From now on a load event is the page's own (not the blank page's)."""
        self.signal.clear()
        self._navigating = True


@dataclass
class _Raw:
    """What a page load leaves for the analysis."""

    trace: bytes
    timing: dict[str, Any]
    log: NetworkLog


@dataclass
class _Browser:
    proc: subprocess.Popen[bytes]
    cdp: _Cdp
    netns: str
    generation: int
    status_file: Path
    pid_file: Path
    ready: _Tab | None = None
    """the next trial's tab, made after the previous trial's trace, the browser quiet since"""
    disposing: _Reply | None = None
    """the previous trial's context, being closed"""
    logs: tuple[Path, ...] = ()
    """the browser's NetLog / SSLKEYLOGFILE (options netlog, keylog), complete when it exits"""
    last_artifacts: Path | None = None
    """the artifacts folder of the last trial it loaded: its logs are moved there at exit"""

    def alive(self) -> bool:
        return not self.cdp.closed.is_set()


class Chromium:
    name = "chromium"
    protocols = PROTOCOLS
    protocol_note = (
        "Chromium has no HTTP/1.1 pipelining and no cleartext HTTP/2: use h1c, h1s, h2s, h3"
    )

    def __init__(self, options: Options) -> None:
        self.options = options
        self._browsers: dict[tuple[str, ...], _Browser] = {}
        self._last: dict[str, _Browser] = {}
        self._spki: dict[Path, str] = {}
        self._dir: Path | None = None
        self._pool: ThreadPoolExecutor | None = None

    def version(self) -> str:
        out = procs.version_text([str(CHROMIUM), "--version"])
        parts = out.split()
        return parts[1] if len(parts) > 1 else out.strip()

    # -- browsers

    def _workdir(self) -> Path:
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="h2lab-chromium-"))
        return self._dir

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
        flags = launch_flags(protocol, ctx.hosts, spki)
        current = self._browsers.get(flags)
        if current is not None:
            if (
                current.netns == ctx.netns
                and current.generation == ctx.link_generation
                and current.alive()
            ):
                return current
            self._close_browser(flags)
        handle = self._launch(flags, ctx)
        self._browsers[flags] = handle
        return handle

    def _launch(self, flags: tuple[str, ...], ctx: LoadContext) -> _Browser:
        work = self._workdir()
        n = len(list(work.glob("browser-*.sh")))
        pid_file, status_file = work / f"browser-{n}.pid", work / f"browser-{n}.status"
        wrapper = work / f"browser-{n}.sh"
        # The wrapper stays Chromium's parent to learn how it ended (a crash's signal); it
        # closes its own copy of the DevTools pipe so that the pipe ends when Chromium does.
        wrapper.write_text(
            "#!/bin/sh\n"
            f'ip netns exec {ctx.netns} {CHROMIUM} "$@" &\n'
            f"echo $! > {pid_file}\n"
            "exec 3<&- 4>&-\n"
            "wait $!\n"
            "status=$?\n"
            f"echo $status > {status_file}\n"
            "exit $status\n"
        )
        wrapper.chmod(0o755)
        device = DEVICES[self.options.device]
        args = [
            *PLAYWRIGHT_FLAGS,
            *flags,
            *HEADLESS_FLAGS,
            f"--window-size={device.width},{device.height}",
            f"--user-data-dir={work / f'profile-{n}'}",
            "--remote-debugging-pipe",
            "--no-startup-window",
        ]
        if self.options.netlog:
            args.append(f"--log-net-log={work / f'netlog-{n}.json'}")
        env = dict(os.environ)
        if self.options.keylog:
            env["SSLKEYLOGFILE"] = str(work / f"keylog-{n}.txt")
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

        log = work / f"browser-{n}.log"
        try:
            with open(log, "wb") as out:
                proc = subprocess.Popen(
                    [str(wrapper), *args],
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
        cdp = _Cdp(cmd_write, out_read)
        handle = _Browser(proc, cdp, ctx.netns, ctx.link_generation, status_file, pid_file)
        handle.logs = tuple(
            work / name
            for name, on in ((f"netlog-{n}.json", self.options.netlog),
                             (f"keylog-{n}.txt", self.options.keylog))
            if on
        )  # fmt: skip
        try:
            cdp.call("Browser.getVersion", timeout_s=LAUNCH_TIMEOUT_S)
        except (TimeoutError, _PipeClosed, _CdpError) as exc:
            self._stop(handle)
            said = telling_line(log.read_text(errors="replace")) if log.exists() else ""
            raise TrialFailed(f"chromium did not start: {said or exc}") from None
        return handle

    def _stop(self, handle: _Browser) -> None:
        handle.ready = None
        with contextlib.suppress(Exception):
            handle.cdp.call("Browser.close", timeout_s=2)
        handle.cdp.close()
        try:
            handle.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pid = procs.read_int_file(handle.pid_file)
            if pid and procs.pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
            procs.stop(handle.proc, grace_s=2)
        # A NetLog is complete only once the browser has exited: it goes with the last trial
        # this browser loaded (it covers every trial since the browser started).
        for log in handle.logs:
            if log.exists() and handle.last_artifacts is not None:
                handle.last_artifacts.mkdir(parents=True, exist_ok=True)
                shutil.move(log, handle.last_artifacts / log.name)

    def _close_browser(self, flags: tuple[str, ...]) -> None:
        handle = self._browsers.pop(flags, None)
        if handle is not None:
            self._stop(handle)

    def _close_handle(self, handle: _Browser) -> None:
        for flags, h in list(self._browsers.items()):
            if h is handle:
                self._close_browser(flags)

    def close(self) -> None:
        for flags in list(self._browsers):
            self._close_browser(flags)
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def browser_pid(self, protocol: str) -> int | None:
        """The Chromium main process that ran ``protocol`` last (tests kill it)."""
        handle = self._last.get(protocol)
        return None if handle is None else procs.read_int_file(handle.pid_file)

    # -- one page load

    def load(self, page: Page, protocol: str, ctx: LoadContext) -> LoadResult:
        if protocol not in PROTOCOLS:
            raise TrialFailed(f"chromium cannot run {protocol} ({self.protocol_note})")
        handle = self._browser(protocol, ctx)
        self._last[protocol] = handle
        handle.last_artifacts = ctx.artifacts_dir
        url = page_url(page, protocol)
        ctx.artifacts_dir.mkdir(parents=True, exist_ok=True)
        tab: _Tab | None = None

        try:
            tab = self._take_ready(handle)
            raw = self._measure(tab, handle.cdp, url, page, ctx)
        except TrialFailed:
            if tab is not None:
                _keep_failed_log(tab.log, url, ctx.artifacts_dir)
            if tab is not None and handle.alive():
                with contextlib.suppress(TimeoutError, _PipeClosed, _CdpError):
                    self._dispose(handle.cdp, tab).result(TAB_TIMEOUT_S)
            raise
        except (TimeoutError, _PipeClosed, _CdpError) as exc:
            if tab is not None:
                _keep_failed_log(tab.log, url, ctx.artifacts_dir)
            raise self._failure(handle, protocol, exc) from None
        # Off the critical path from here: the context goes (Chromium does that while we go
        # on), the analysis runs on one thread while the next trial's tab is made on another
        # (Chromium's work, mostly a renderer starting). The tab may still be in the making
        # when this returns; the next load waits for it. Neither overlaps a measured load.
        # (It cannot start earlier: a renderer starting while the trace runs joins the trace
        # and holds Tracing.end for 5 s.)
        handle.disposing = self._dispose(handle.cdp, tab)
        analysis = self._threads().submit(self._analyse, raw, url, ctx)
        if self.options.restart:
            self._close_handle(handle)
            return analysis.result()
        spare = self._threads().submit(self._new_tab, handle.cdp)
        result = analysis.result()
        # Nothing of this browser may still be starting when the next load begins, in this
        # browser or in another (h1s and h2s alternate between two): the next tab is made and
        # the browser quiet before this returns. A failure here is the next trial's to meet.
        with contextlib.suppress(TimeoutError, _PipeClosed, _CdpError):
            handle.ready = self._settle(handle, spare.result(timeout=LAUNCH_TIMEOUT_S))
        return result

    def _take_ready(self, handle: _Browser) -> _Tab:
        """The tab made ready after the last trial, or a new one made ready now."""
        ready, handle.ready = handle.ready, None
        if ready is not None:
            return ready
        return self._settle(handle, self._new_tab(handle.cdp))

    def _settle(self, handle: _Browser, tab: _Tab) -> _Tab:
        """``tab`` once the last trial's context is gone and the browser is quiet: a load never
        shares the browser with another context's renderer, or the CPU with one starting."""
        disposing, handle.disposing = handle.disposing, None
        if disposing is not None:
            with contextlib.suppress(TimeoutError, _PipeClosed, _CdpError):
                disposing.result(TAB_TIMEOUT_S)
        self._wait_quiet(handle.cdp)
        return tab

    @staticmethod
    def _wait_quiet(cdp: _Cdp) -> None:
        """Until the browser's processes are quiet (:data:`QUIET_CPU_SHARE`): a renderer still
        starting, or a closed context's going, must not share the CPU with the load."""
        last: float | None = None
        quiet_polls = 0
        deadline = time.monotonic() + QUIET_TIMEOUT_S
        while time.monotonic() < deadline:
            t = time.monotonic()
            info = cdp.call("SystemInfo.getProcessInfo", timeout_s=TAB_TIMEOUT_S)
            cpu_s = sum(float(p.get("cpuTime", 0)) for p in info.get("processInfo", ()))
            if last is not None:
                quiet_polls = (
                    quiet_polls + 1 if cpu_s - last < QUIET_CPU_SHARE * QUIET_POLL_S else 0
                )
                if quiet_polls >= 2:
                    return
            last = cpu_s
            time.sleep(max(0.0, QUIET_POLL_S - (time.monotonic() - t)))

    def _dispose(self, cdp: _Cdp, tab: _Tab) -> _Reply:
        """Close the tab's browser context (its cache, cookies, sockets); do not wait."""
        for session in (tab.session, *tab.children):
            cdp.listen(session, None)
        return cdp.send("Target.disposeBrowserContext", {"browserContextId": tab.context_id})

    def _new_tab(self, cdp: _Cdp) -> _Tab:
        """A new browser context with one blank page, its DevTools session listening."""
        device = DEVICES[self.options.device]
        context_id = cdp.call("Target.createBrowserContext", timeout_s=TAB_TIMEOUT_S)[
            "browserContextId"
        ]
        target_id = cdp.call(
            "Target.createTarget",
            {"url": "about:blank", "browserContextId": context_id},
            timeout_s=TAB_TIMEOUT_S,
        )["targetId"]
        window = cdp.send("Browser.getWindowForTarget", {"targetId": target_id})
        session = cdp.call(
            "Target.attachToTarget",
            {"targetId": target_id, "flatten": True},
            timeout_s=TAB_TIMEOUT_S,
        )["sessionId"]
        tab = _Tab(context_id, session, cdp)
        cdp.listen(session, tab.on)
        screen = {"angle": 0, "type": "portraitPrimary" if device.mobile else "landscapePrimary"}
        commands: list[tuple[str, dict[str, Any]]] = [
            ("Network.enable", {}),
            ("Page.enable", {}),
            ("Network.setBypassServiceWorker", {"bypass": True}),
            ("Target.setAutoAttach", _AUTO_ATTACH),
            ("Emulation.setFocusEmulationEnabled", {"enabled": True}),
            (
                "Emulation.setDeviceMetricsOverride",
                {
                    "width": device.width,
                    "height": device.height,
                    "screenWidth": device.width,
                    "screenHeight": device.height,
                    "deviceScaleFactor": device.scale,
                    "mobile": device.mobile,
                    "screenOrientation": screen,
                },
            ),
        ]
        if device.mobile:
            commands.append(("Emulation.setTouchEmulationEnabled", {"enabled": True}))
        if self.options.cpu_slowdown > 1:
            commands.append(("Emulation.setCPUThrottlingRate", {"rate": self.options.cpu_slowdown}))
        replies = [cdp.send(m, p, session) for m, p in commands]
        with contextlib.suppress(_CdpError):  # no window: the metrics override alone
            window_id = window.result(TAB_TIMEOUT_S)["windowId"]
            bounds = {"width": device.width, "height": device.height}
            replies.append(
                cdp.send("Browser.setWindowBounds", {"windowId": window_id, "bounds": bounds})
            )
        for reply in replies:
            reply.result(TAB_TIMEOUT_S)
        return tab

    def _measure(self, tab: _Tab, cdp: _Cdp, url: str, page: Page, ctx: LoadContext) -> _Raw:
        """The page load itself: tracing on, navigate, wait for load, tracing off. A load in
        which a request for the page's own resources fails (:func:`failed_page_requests`) fails
        then, or after the load if it failed later; waiting for the load is no use, as it may
        never come (yahoo's document failing with ``net::ERR_HTTP2_PING_FAILED`` left requests
        waiting until the 900 s timeout)."""
        deadline = time.monotonic() + ctx.timeout_s
        s = tab.session

        def timed_out() -> TrialFailed:
            return TrialFailed(
                f"page did not finish loading within the trial timeout of {ctx.timeout_s:g} s "
                f"(no load event for {url}{describe_unfinished(tab.log)})"
            )

        def left() -> float:
            return max(0.0, deadline - time.monotonic())

        def check() -> None:
            if tab.closed:
                raise _PipeClosed("browser closed the DevTools pipe")
            if tab.crashed:
                raise TrialFailed(f"chromium's renderer crashed while loading {url}")
            if tab.request_failed:
                tab.request_failed = False
                incomplete()

        def incomplete() -> None:
            failed = failed_page_requests(tab.log, page)
            if failed:
                how = "loaded incomplete" if tab.loaded else "failed to load"
                raise TrialFailed(f"{url} {how}: {describe_failed(failed, tab.log)}")

        cdp.call(
            "Tracing.start",
            {"transferMode": "ReturnAsStream", "categories": ",".join(TRACE_CATEGORIES)},
            s,
        )
        tracing = True
        try:
            tab.navigating()
            try:
                nav = cdp.call("Page.navigate", {"url": url}, s, timeout_s=left())
            except TimeoutError:
                raise timed_out() from None
            if nav.get("errorText"):
                raise TrialFailed(f"chromium could not load {url}: {nav['errorText']}")
            while not tab.loaded:
                check()
                if not tab.signal.wait(left()):
                    raise timed_out()
                tab.signal.clear()
            check()
            self._wait_network_idle(tab, left)
            incomplete()
            timing = self._after_load(cdp, s)
            tracing = False
            trace = self._stop_tracing(tab, cdp)
        finally:
            if tracing and not tab.closed:
                with contextlib.suppress(Exception):
                    self._stop_tracing(tab, cdp)
        return _Raw(trace, timing, tab.log)

    def _wait_network_idle(self, tab: _Tab, left: Callable[[], float]) -> None:
        """With option ``idle``: wait until no Network event came for ``idle_ms`` (WebPageTest's
        rule; bounded by the trial's deadline: a page that never goes quiet ends its wait
        there without failing)."""
        idle_s = self.options.idle_ms / 1000
        while idle_s and left() > 0:
            quiet = time.monotonic() - tab.log.last_activity_s
            if quiet >= idle_s:
                return
            time.sleep(min(idle_s - quiet, left()))

    def _after_load(self, cdp: _Cdp, session: str) -> dict[str, Any]:
        value = self._evaluate(cdp, session, f"({_AFTER_LOAD_JS})({SCREENSHOT_SETTLE_MS})")
        return value if isinstance(value, dict) else {}

    @staticmethod
    def _evaluate(cdp: _Cdp, session: str, expression: str) -> Any:
        answer = cdp.call(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
            session,
        )
        if "exceptionDetails" in answer:
            text = answer["exceptionDetails"].get("text", "exception")
            raise TrialFailed(f"chromium: reading the page's timing failed: {text}")
        return answer.get("result", {}).get("value")

    def _stop_tracing(self, tab: _Tab, cdp: _Cdp) -> bytes:
        """End the trace and read it back (one stream, in chunks)."""
        tab.signal.clear()
        cdp.call("Tracing.end", session=tab.session)
        while tab.trace_stream is None:
            if tab.closed:
                raise _PipeClosed("browser closed the DevTools pipe")
            if not tab.signal.wait(TAB_TIMEOUT_S):
                raise TimeoutError(f"no trace within {TAB_TIMEOUT_S:g} s of Tracing.end")
            tab.signal.clear()
        stream, tab.trace_stream = tab.trace_stream, None
        chunks = []
        while True:
            part = cdp.call("IO.read", {"handle": stream, "size": 1 << 22}, tab.session)
            data = part.get("data", "")
            chunks.append(base64.b64decode(data) if part.get("base64Encoded") else data.encode())
            if part.get("eof"):
                break
        cdp.send("IO.close", {"handle": stream}, tab.session)
        return b"".join(chunks)

    def _analyse(self, raw: _Raw, url: str, ctx: LoadContext) -> LoadResult:
        """Pure but for writing the trial's artifacts: metrics, resources and HAR of a load."""
        timing, log = raw.timing, raw.log
        nav_s, frames = trace_frames(json.loads(raw.trace))
        requests = log.finished()
        if not requests:
            raise TrialFailed(f"chromium fetched nothing from {url}")
        t0_s = nav_s if nav_s is not None else requests[0].start_s
        visual = visual_metrics(frames)

        def rel(name: str) -> float | None:
            v = timing.get(name)
            return None if v is None or v <= 0 else round(float(v), 3)

        metrics: dict[str, float | None] = {
            "ttfb_ms": rel("responseStart"),
            "dcl_ms": rel("dcl"),
            "plt_ms": rel("loadEventEnd"),
            "fp_ms": rel("fp"),
            "fcp_ms": rel("fcp"),
            "lcp_ms": rel("lcp"),
            "speed_index_ms": (
                None if visual.speed_index_ms is None else round(visual.speed_index_ms, 3)
            ),
            "visual_complete_ms": visual.visual_complete_ms,
        }
        resources = log.resources(t0_s)
        first = min(r.start_ms for r in resources)
        last = max(r.end_ms for r in resources)
        # Element Timing (``<img elementtiming=...>``): when Chrome painted each marked element
        elements = {str(k): round(float(v), 3) for k, v in (timing.get("elements") or {}).items()}
        har = log.har(url, t0_s, {**metrics, "_frames": float(visual.frames)})
        har["log"]["pages"][0]["_element_timing_ms"] = elements
        (ctx.artifacts_dir / HAR_FILE).write_text(json.dumps(har))
        (ctx.artifacts_dir / "visual-progress.json").write_text(
            json.dumps({"frames": visual.frames, "progress": visual.progress})
        )
        if self.options.filmstrip:
            strip = ctx.artifacts_dir / "filmstrip"
            strip.mkdir(exist_ok=True)
            for f in frames:
                (strip / f"{f.t_ms:09.1f}ms.jpg").write_bytes(f.image)
        header_sizes = [r.header_bytes for r in requests]
        return LoadResult(
            pdt_ms=round(last - first, 3),
            body_bytes=sum(r.body_bytes for r in requests),
            request_header_bytes=None,
            response_header_bytes=(
                sum(h for h in header_sizes if h is not None)
                if all(h is not None for h in header_sizes)
                else None
            ),
            resources=resources,
            **metrics,
        )

    def _failure(self, handle: _Browser, protocol: str, exc: BaseException) -> H2LabError:
        """Why a load failed: a crashed browser (with its exit signal) or the protocol's line."""
        if isinstance(exc, _PipeClosed) or not handle.alive():
            # the pipe closes when Chromium dies; the wrapper writes its status right after
            # (the shell creates the file before it writes the number: wait for the number)
            with contextlib.suppress(WaitTimeout):
                procs.wait_until(
                    "chromium's exit status",
                    lambda: procs.read_int_file(handle.status_file) is not None,
                    timeout_s=2,
                    poll_s=0.02,
                )
        status = procs.read_int_file(handle.status_file)
        self._close_handle(handle)
        if status is not None:
            how = (
                f"killed by {signal.Signals(status - 128).name}"
                if status > 128 and status - 128 in signal.valid_signals()
                else f"exit status {status}"
            )
            return TrialFailed(f"chromium ({protocol}) crashed: {how}")
        return TrialFailed(f"chromium ({protocol}) failed: {_first_line(exc)}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _make(options: Mapping[str, str]) -> Chromium:
    return Chromium(parse_options(options))


register("chromium", _make)
