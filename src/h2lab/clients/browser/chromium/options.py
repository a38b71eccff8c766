"""What a Chromium client is told: its options (``chromium:device=mobile,cpu=4``), parsed once
into :class:`Options`, and the command-line switches of the browser
that runs each protocol. Pure: nothing here starts or reads anything.

Protocols. ``h1c``: http:// (HTTPS upgrades off); ``h1s``: https with HTTP/2 disabled, so ALPN
picks http/1.1; ``h2s``: https, ALPN h2; ``h3``: QUIC forced on for every lab origin. QUIC is
off for the other three. ``h1p`` and ``h2c`` are not possible in Chromium (no pipelining, no
cleartext HTTP/2) and are rejected.

Options: ``device`` desktop (1366x768) or mobile (412x823, DPR 1.75, touch; Lighthouse's
phone), ``cpu`` CPU slowdown factor (DevTools CPU throttling), ``netlog`` and ``keylog`` (1: a
NetLog / SSLKEYLOGFILE per browser, moved into the folder of the last trial that browser loaded
when it exits; it covers every trial since it started), ``idle`` (a duration: after the load
event, also wait for that much network silence), ``filmstrip`` (1: keep the frames as JPEG
files in the trial folder), ``restart`` (1: a new browser for every trial, as browsertime does;
``bench/overhead.py`` compares the two), ``har_bodies`` (1: every response's body in the
trial's HAR, ``content.text``, base64 for a binary one, read from the browser after the
measured load; ``h2lab pages import`` of that HAR gives the page back), ``speed_index``
(``h2lab``, the default, or ``wpt``: SpeedIndex and the visual milestones computed as
WebPageTest's visualmetrics does, :mod:`h2lab.metrics.visual`), ``tbt`` (0: no trace of the
main thread's tasks, so no ``tbt_ms``; tracing them costs a load about 1%).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from h2lab.clients.browser.options import (
    Device,
    cores_option,
    device_option,
    filmstrip_option,
    idle_option,
    speed_index_option,
)
from h2lab.net import userns
from h2lab.spec.factors import BY_DNS
from h2lab.spec.options import FLAG, number, option
from h2lab.spec.protocols import H1C, H1S, H2S, H3, PORTS

DISABLED_FEATURES = (
    # no HTTPS upgrade of http:// navigations (h1c would silently become h2s)
    "HttpsUpgrades",
    "HttpsFirstBalancedModeAutoEnable",
    "MediaRouter",
    # Every new browser context (one per trial) opens a window, and its omnibox preloads its
    # popup, a WebUI page (chrome://omnibox-popup.top-chrome/: some 50 JS modules, custom
    # elements, CSS) in a renderer of its own. That, not the tab's renderer, was the "renderer
    # start" of a new tab: measured per process (/proc, 6 tabs, medians) it cost 0.58 s of
    # renderer and 0.17 s of browser CPU of the 0.93 s a context + about:blank tab took, and
    # the browser was quiet again after 0.72 s; without it, 0.16 s of CPU and 0.41 s. The lab
    # never shows an omnibox.
    "WebUIOmniboxPopup",
    "WebUIOmniboxAimPopup",
    "WebUIOmniboxFullPopup",
)
"""Chromium features switched off (one ``--disable-features``: a second one would override
it)."""
# The brief's flags for a browser that must not reach the internet, plus no QUIC and
# DISABLED_FEATURES; and no sandbox when the browser runs as root (sandbox_flags).
BASE_FLAGS = (
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
    f"--disable-features={','.join(DISABLED_FEATURES)}",
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
    # No animations of the browser's own (views) UI: a new context's window animated its tab
    # strip for about 0.25 s (the browser compositing and the GPU process drawing 15 frames,
    # ~13% of a core), which held off the quiet wait (browser_pool.QUIET_CPU_SHARE): a new
    # context + tab was quiet after 0.22 s instead of 0.41 s. Pages' CSS and Web animations
    # run in the renderer and are not scaled (the switch scales gfx::LinearAnimation only).
    "--animation-duration-scale=0",
    "--blink-settings=primaryHoverType=2,availableHoverTypes=2,primaryPointerType=4,"
    "availablePointerTypes=4",
)

PROTOCOL_FLAGS: Mapping[str, tuple[str, ...]] = {
    H1C: (),
    H1S: ("--disable-http2",),
    H2S: (),
    H3: ("--enable-quic",),  # and --origin-to-force-quic-on for every lab origin
}
PROTOCOLS = frozenset(PROTOCOL_FLAGS)
"""The protocols Chromium can load a page over."""


@dataclass(frozen=True)
class Options:
    device: str = device_option()
    """a name in :data:`DEVICES`"""
    idle_ms: float = idle_option()
    """after the load event, also wait until the network has been idle this long (WebPageTest's
    "fully loaded": 2000 ms), so requests made by scripts after load are made and served"""
    speed_index: str = speed_index_option()
    """how SpeedIndex is computed: ``h2lab`` or ``wpt`` (:data:`h2lab.metrics.visual.MODES`)"""
    filmstrip: bool = filmstrip_option()
    cores: float | None = cores_option()
    """the whole browser in a CPU quota of this many cores (:mod:`h2lab.clients.cpu`)"""
    cpu_slowdown: float = option(
        number(1, 20),
        1.0,
        "DevTools CPU throttling: the renderer's main thread this many times slower (cores= "
        "slows the whole browser)",
        "cpu=4",
        key="cpu",
    )
    netlog: bool = option(FLAG, False, "a NetLog per browser in the trial's folder", "netlog=1")
    keylog: bool = option(
        FLAG, False, "an SSLKEYLOGFILE per browser (the trial's own TLS keys)", "keylog=1"
    )
    restart: bool = option(
        FLAG, False, "a new browser for every trial (browsertime's way)", "restart=1"
    )
    """start a new browser for every trial (browsertime's way; for bench/overhead)"""
    har_bodies: bool = option(
        FLAG,
        False,
        "every response's body in the trial's page.har, read after the measured load",
        "har_bodies=1",
    )
    """keep every response's body in the HAR (``content.text``), read after the load"""
    tbt: bool = option(
        FLAG,
        True,
        "trace the main thread's tasks for tbt_ms (default 1; 0: tbt_ms NULL, about 1% less "
        "load time)",
        "tbt=0",
    )
    """the trace category costs the load about 1% (docs/design-notes.md)"""


def sandbox_flags() -> tuple[str, ...]:
    """``--no-sandbox`` when Chromium runs as root (root mode: Chromium refuses root with its
    sandbox); none when it runs as the user (rootless mode, :func:`h2lab.net.userns.unprivileged`,
    or h2lab run by a user outside the lab): then it keeps its own sandbox."""
    as_root = os.geteuid() == 0 and not userns.active()
    return ("--no-sandbox",) if as_root else ()


UNKNOWN_ROOTS_PORT = 9
"""A port no lab server listens on (discard): with it, ``--origin-to-force-quic-on`` forces no
origin a page asks, but lets Chromium accept the lab CA over QUIC for the hosts it names."""


def launch_flags(
    protocol: str, hosts: Mapping[str, str], spki: str | None, discovery: str = "forced",
    h3_hosts: Collection[str] | None = None,
) -> tuple[str, ...]:  # fmt: skip
    """The command-line switches of the browser that runs ``protocol``: ``hosts`` (lab origin
    -> address) are all the names it can resolve, ``spki`` pins the lab CA; over h3,
    ``discovery`` ``forced`` makes the lab origins of ``h3_hosts`` (None: every one) speak QUIC
    from their first request, and ``alt-svc`` leaves Chromium to learn it from the servers'
    ``Alt-Svc`` headers. Where the discovery reads DNS (``https-rr``, whatever the protocol)
    the lab's names are left to Chromium's own resolver, which asks the lab's DNS server for
    A and HTTPS records (:mod:`h2lab.clients.browser.names`); every other name is "not found"
    at once either way."""
    if discovery in BY_DNS:
        rules = ["MAP * ~NOTFOUND", *(f"EXCLUDE {host}" for host in sorted(hosts))]
    else:
        rules = [f"MAP {host} {ip}" for host, ip in sorted(hosts.items())] + ["MAP * ~NOTFOUND"]
    base = [f for f in BASE_FLAGS if not (protocol == H3 and f == "--disable-quic")]
    base = [*sandbox_flags(), *base]
    flags = [*base, *PROTOCOL_FLAGS[protocol], f"--host-resolver-rules={', '.join(rules)}"]
    if protocol == H3:
        # forced: QUIC from the first request, no TCP race, every lab origin is known to speak
        # h3. Otherwise a port nothing listens on: Chromium takes QUIC's certificate from a
        # root it does not ship (the lab CA) only for the hosts of this list
        # (ERR_QUIC_CERT_ROOT_NOT_KNOWN), and a host on another port is not forced.
        # (h3_origins: a host that speaks no h3 is on that port too, reached over TCP)
        forced = [h for h in sorted(hosts) if h3_hosts is None or h in h3_hosts]
        forced = forced if discovery == "forced" else []
        quic_on = ",".join(
            f"{host}:{PORTS[H3] if host in forced else UNKNOWN_ROOTS_PORT}"
            for host in sorted(hosts)
        )
        flags.append(f"--origin-to-force-quic-on={quic_on}")
    if spki:
        flags.append(f"--ignore-certificate-errors-spki-list={spki}")
    return tuple(flags)


def browser_args(flags: Sequence[str], device: Device, profile: Path) -> list[str]:
    """Chromium's switches, after its binary: Playwright's, ``flags`` (:func:`launch_flags`),
    the headless ones, a window the size of ``device``, the ``profile`` folder and the DevTools
    pipe (:class:`~h2lab.clients.browser.chromium.cdp.CdpPipe`), no window of its own."""
    return [
        *PLAYWRIGHT_FLAGS,
        *flags,
        *HEADLESS_FLAGS,
        f"--window-size={device.width},{device.height}",
        f"--user-data-dir={profile}",
        "--remote-debugging-pipe",
        "--no-startup-window",
    ]
