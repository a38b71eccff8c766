"""Chromium (Debian's ``/usr/lib/chromium/chromium``) loading a page, driven by Playwright.

Where the browser runs. Playwright's driver stays in the host namespace; the browser it
launches is a small wrapper script that enters the client namespace (``ip netns exec``) and
runs Chromium there, so every packet of the page load crosses the emulated link. The browser
is kept between trials while the client namespace stays the same (the runner reuses a link
only when it holds no state, see ``runner.run.link_is_stateless``) and started again when the
namespace is a new one. One browser per launch-flag set: ``h1s`` needs ``--disable-http2``,
a browser-wide switch.

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
``netlog`` and ``keylog`` (1: write a NetLog / SSLKEYLOGFILE per browser to the trial folder),
``filmstrip`` (1: keep the frames as JPEG files in the trial folder), ``restart`` (1: a new
browser for every trial, as browsertime does; ``bench/overhead.py`` compares the two).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from h2lab import procs
from h2lab.clients import LoadContext, LoadResult, ResourceTiming, register
from h2lab.errors import H2LabError, TrialFailed
from h2lab.metrics.visual import Frame, visual_metrics
from h2lab.pages import Page
from h2lab.servers import PORTS

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, CDPSession, Playwright
    from playwright.sync_api import Page as PlaywrightPage

CHROMIUM = Path("/usr/lib/chromium/chromium")
"""Debian's binary, without the /usr/bin/chromium shell wrapper (and its /etc/chromium.d)."""

PROTOCOLS = frozenset({"h1c", "h1s", "h2s"})
_SCHEME = {"h1c": "http", "h1s": "https", "h2s": "https"}

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
PROTOCOL_FLAGS: Mapping[str, tuple[str, ...]] = {
    "h1c": (),
    "h1s": ("--disable-http2",),
    "h2s": (),
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


def parse_options(options: Mapping[str, str]) -> Options:
    """Validate ``chromium:key=value,...`` options (ValueError: one line naming the option)."""
    known = {"device", "cpu", "netlog", "keylog", "filmstrip", "restart"}
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
    return Options(device, cpu, **flags)


def launch_flags(protocol: str, hosts: Mapping[str, str], spki: str | None) -> tuple[str, ...]:
    """Pure: the command-line switches of the browser that runs ``protocol``."""
    rules = [f"MAP {host} {ip}" for host, ip in sorted(hosts.items())] + ["MAP * ~NOTFOUND"]
    flags = [*BASE_FLAGS, *PROTOCOL_FLAGS[protocol], f"--host-resolver-rules={', '.join(rules)}"]
    if spki:
        flags.append(f"--ignore-certificate-errors-spki-list={spki}")
    return tuple(flags)


def page_url(page: Page, protocol: str) -> str:
    port = PORTS[protocol]
    scheme = _SCHEME[protocol]
    default = {"http": 80, "https": 443}[scheme]
    return page.resources[0].url(scheme, None if port == default else port)


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


class NetworkLog:
    """Collects DevTools ``Network.*`` events of one page load (timestamps in seconds on the
    browser's monotonic clock, the clock of trace events too)."""

    def __init__(self) -> None:
        self.requests: dict[str, _Request] = {}

    def on(self, method: str, p: dict[str, Any]) -> None:
        rid = p.get("requestId", "")
        if method == "Network.requestWillBeSent":
            req = p["request"]
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

    def finished(self) -> list[_Request]:
        return sorted(
            (r for r in self.requests.values() if r.end_s is not None and not r.failed),
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
                )
            )
        return tuple(rows)

    def har(
        self, page_url: str, t0_s: float, metrics: Mapping[str, float | None]
    ) -> dict[str, Any]:
        """A HAR 1.2 log: one page, one entry per finished request, with Chromium's protocol,
        connection id, priority and header sizes."""
        entries = []
        for r in self.finished():
            start_ms = (r.start_s - t0_s) * 1000
            wait = ((r.ttfb_s or r.start_s) - r.start_s) * 1000
            receive = ((r.end_s or r.start_s) - (r.ttfb_s or r.start_s)) * 1000
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


# ------------------------------------------------------------------------------ the client


@dataclass
class _Tab:
    context: BrowserContext
    page: PlaywrightPage
    log: NetworkLog


@dataclass
class _Raw:
    """What a page load leaves for the analysis."""

    trace: bytes
    timing: dict[str, Any]
    log: NetworkLog


@dataclass
class _Browser:
    browser: Browser
    netns: str
    generation: int
    status_file: Path
    pid_file: Path
    spare: _Tab | None = None
    """the next trial's context and page, made ready after the previous trial"""


class Chromium:
    name = "chromium"
    protocols = PROTOCOLS
    protocol_note = "Chromium has no HTTP/1.1 pipelining and no cleartext HTTP/2: use h1c, h1s, h2s"

    def __init__(self, options: Options) -> None:
        self.options = options
        self._pw: Playwright | None = None
        self._browsers: dict[tuple[str, ...], _Browser] = {}
        self._last: dict[str, _Browser] = {}
        self._spki: dict[Path, str] = {}
        self._dir: Path | None = None

    def version(self) -> str:
        out = procs.version_text([str(CHROMIUM), "--version"])
        parts = out.split()
        return parts[1] if len(parts) > 1 else out.strip()

    # -- browsers

    def _workdir(self) -> Path:
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="h2lab-chromium-"))
        return self._dir

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
                and current.browser.is_connected()
            ):
                return current
            self._close_browser(flags)
        if self._pw is None:
            from playwright.sync_api import sync_playwright

            self._pw = sync_playwright().start()
        work = self._workdir()
        n = len(list(work.glob("browser-*.sh")))
        pid_file, status_file = work / f"browser-{n}.pid", work / f"browser-{n}.status"
        wrapper = work / f"browser-{n}.sh"
        # The wrapper stays Chromium's parent to learn how it ended (a crash's signal).
        wrapper.write_text(
            "#!/bin/sh\n"
            f'ip netns exec {ctx.netns} {CHROMIUM} "$@" &\n'
            f"echo $! > {pid_file}\n"
            "wait $!\n"
            "status=$?\n"
            f"echo $status > {status_file}\n"
            "exit $status\n"
        )
        wrapper.chmod(0o755)
        extra = []
        if self.options.netlog:
            extra.append(f"--log-net-log={work / f'netlog-{n}.json'}")
        env: dict[str, str | float | bool] = dict(os.environ)
        if self.options.keylog:
            env["SSLKEYLOGFILE"] = str(work / f"keylog-{n}.txt")
        try:
            browser = self._pw.chromium.launch(
                executable_path=str(wrapper),
                headless=True,
                args=[*flags, *extra],
                env=env,
                timeout=30_000,
            )
        except Exception as exc:  # Playwright raises its own Error types
            raise TrialFailed(f"chromium did not start: {_first_line(exc)}") from None
        handle = _Browser(browser, ctx.netns, ctx.link_generation, status_file, pid_file)
        self._browsers[flags] = handle
        return handle

    def _close_browser(self, flags: tuple[str, ...]) -> None:
        handle = self._browsers.pop(flags, None)
        if handle is None:
            return
        with contextlib.suppress(Exception):
            handle.browser.close()
        pid = procs.read_int_file(handle.pid_file)
        if pid and procs.pid_alive(pid):
            os.kill(pid, signal.SIGKILL)

    def _close_handle(self, handle: _Browser) -> None:
        for flags, h in list(self._browsers.items()):
            if h is handle:
                self._close_browser(flags)

    def close(self) -> None:
        for flags in list(self._browsers):
            self._close_browser(flags)
        if self._pw is not None:
            with contextlib.suppress(Exception):
                self._pw.stop()
            self._pw = None
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
        url = page_url(page, protocol)
        ctx.artifacts_dir.mkdir(parents=True, exist_ok=True)
        tab, handle.spare = handle.spare, None
        try:
            if tab is None:
                tab = self._new_tab(handle.browser)
            raw = self._measure(tab, handle.browser, url, ctx)
        except TrialFailed:
            raise
        except Exception as exc:
            raise self._failure(handle, protocol, exc, ctx) from None
        finally:
            if tab is not None:
                with contextlib.suppress(Exception):
                    tab.context.close()
            if self.options.restart:
                self._close_handle(handle)
        # The analysis (trace, SpeedIndex, HAR) runs on a second thread while this one gets
        # the next trial's context and page ready in the same browser: the two use different
        # cores, and neither overlaps a measured page load.
        outcome: list[LoadResult | BaseException] = []

        def analyse() -> None:
            try:
                outcome.append(self._analyse(raw, url, ctx))
            except BaseException as exc:  # handed to the caller below
                outcome.append(exc)

        worker = threading.Thread(target=analyse, name="chromium-analysis")
        worker.start()
        try:
            if not self.options.restart and handle.browser.is_connected():
                with contextlib.suppress(Exception):
                    handle.spare = self._new_tab(handle.browser)
        finally:
            worker.join()
        result = outcome[0]
        if isinstance(result, BaseException):
            raise result
        return result

    def _new_tab(self, browser: Browser) -> _Tab:
        """A new browser context with one blank page and its DevTools session listening."""
        device = DEVICES[self.options.device]
        context = browser.new_context(
            viewport={"width": device.width, "height": device.height},
            device_scale_factor=device.scale,
            is_mobile=device.mobile,
            has_touch=device.mobile,
            service_workers="block",
        )
        page = context.new_page()
        cdp: CDPSession = context.new_cdp_session(page)
        log = NetworkLog()
        for method in (
            "Network.requestWillBeSent",
            "Network.responseReceived",
            "Network.responseReceivedExtraInfo",
            "Network.requestServedFromCache",
            "Network.dataReceived",
            "Network.loadingFinished",
            "Network.loadingFailed",
        ):
            cdp.on(method, lambda p, m=method: log.on(m, p))
        cdp.send("Network.enable")
        if self.options.cpu_slowdown > 1:
            cdp.send("Emulation.setCPUThrottlingRate", {"rate": self.options.cpu_slowdown})
        return _Tab(context, page, log)

    def _measure(self, tab: _Tab, browser: Browser, url: str, ctx: LoadContext) -> _Raw:
        """The page load itself: tracing on, navigate, wait for load, tracing off."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        browser.start_tracing(page=tab.page, screenshots=True, categories=list(TRACE_CATEGORIES))
        tracing = True
        try:
            try:
                tab.page.goto(url, wait_until="load", timeout=ctx.timeout_s * 1000)
            except PlaywrightTimeout:
                raise TrialFailed(
                    f"page did not finish loading within the trial timeout of {ctx.timeout_s:g} s "
                    f"(no load event for {url})"
                ) from None
            timing = tab.page.evaluate(_AFTER_LOAD_JS, SCREENSHOT_SETTLE_MS)
            trace = browser.stop_tracing()
            tracing = False
        finally:
            if tracing:
                with contextlib.suppress(Exception):
                    browser.stop_tracing()
        return _Raw(trace, timing, tab.log)

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
        (ctx.artifacts_dir / "page.har").write_text(json.dumps(har, indent=1))
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

    def _failure(
        self, handle: _Browser, protocol: str, exc: BaseException, ctx: LoadContext
    ) -> H2LabError:
        """Why a load failed: a crashed browser (with its exit signal) or Playwright's line."""
        deadline = time.monotonic() + 2
        while not handle.status_file.exists() and time.monotonic() < deadline:
            if handle.browser.is_connected():
                break
            time.sleep(0.05)
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
