"""What a Firefox client is told: its options (``firefox:idle=2s``), parsed once into
:class:`Options`, and the preferences (``user.js``) of the profile that runs each protocol.
Pure: nothing here starts or reads anything.

Options: ``device`` (desktop, or mobile: see :func:`h2lab.clients.browser.firefox.tab.new_tab` for
what Firefox emulates of a phone), ``idle`` (a duration: after the load event, also wait for
that much network silence), ``filmstrip`` (1: keep the frames as JPEG files in the trial
folder), ``visual`` (0: record no frames, so no SpeedIndex; for long loads with animations,
whose every distinct frame is held in the browser until the load ends), ``network`` (0: no
BiDi network events, which slow Firefox's loads; the resources come from the page's Resource
Timing: no headers, no failed requests, and cross-origin ones without ``Timing-Allow-Origin``
have no size, protocol or first byte), ``speed_index`` (``h2lab`` or ``wpt``, as Chromium's).
``cpu`` is refused: Firefox has no CPU throttling.

Protocols. ``h1c``: http:// (HTTPS-First off); ``h1s``: https with HTTP/2 disabled
(``network.http.http2.enabled``), so ALPN offers http/1.1 only; ``h2s``: https, ALPN h2;
``h3``: HTTP/3 on and every lab origin mapped to ``h3=:443`` from its first request
(``network.http.http3.alt-svc-mapping-for-testing``: Firefox treats it as a known Alt-Svc),
the lab CA accepted for QUIC and no TCP fallback raced against it: every request of the page
goes over QUIC and the trial opens no TCP connection (see :data:`PROTOCOL_PREFS`). HTTP/3 and
Alt-Svc are off for the other three, so a server's ``Alt-Svc`` header cannot move an h2s trial
to QUIC. ``h1p`` and ``h2c`` are not possible in Firefox (pipelining was removed
in Firefox 54; no cleartext HTTP/2) and are rejected.

Offline. :data:`OFFLINE_PREFS` switch off everything that Firefox would fetch on its own
(telemetry, updates, remote settings, Normandy, Safe Browsing lists, captive-portal and
connectivity checks, push, DoH, speculative connections, new-tab content, GMP downloads,
OCSP): the browser's only traffic is the page's. Names reach no resolver but the client
namespace's ``/etc/hosts`` (h2lab writes it; ``ip netns exec`` mounts it) and the lab's own
(for names the lab lacks, and every name of an ``https-rr`` cell: :data:`BY_DNS_PREFS`), DoH
is off by choice (``network.trr.mode`` 5) and there is no proxy.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import ClassVar

from h2lab.clients.browser.options import (
    cores_option,
    device_option,
    filmstrip_option,
    idle_option,
    speed_index_option,
)
from h2lab.spec.factors import BY_ALT_SVC, BY_DNS
from h2lab.spec.options import FLAG, option
from h2lab.spec.protocols import H1C, H1S, H2S, H3, PORTS

PrefValue = bool | int | str

OFFLINE_PREFS: Mapping[str, PrefValue] = {
    # telemetry, studies, experiments
    "toolkit.telemetry.enabled": False,
    "toolkit.telemetry.unified": False,
    "toolkit.telemetry.archive.enabled": False,
    "toolkit.telemetry.server": "data:,",
    "toolkit.telemetry.reportingpolicy.firstRun": False,
    "datareporting.healthreport.uploadEnabled": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "datareporting.usage.uploadEnabled": False,
    "app.normandy.enabled": False,
    "app.normandy.api_url": "",
    "app.shield.optoutstudies.enabled": False,
    "messaging-system.rsexperimentloader.enabled": False,
    "browser.ping-centre.telemetry": False,
    "browser.crashReports.unsubmittedCheck.enabled": False,
    # updates of the browser, add-ons, search engines, GMP plug-ins, remote settings
    "app.update.disabledForTesting": True,
    "app.update.auto": False,
    "extensions.update.enabled": False,
    "extensions.getAddons.cache.enabled": False,
    "extensions.systemAddon.update.enabled": False,
    "extensions.blocklist.enabled": False,
    "browser.search.update": False,
    "browser.region.network.url": "",
    "browser.region.update.enabled": False,
    "media.gmp-manager.url": "",
    "media.gmp-manager.updateEnabled": False,
    "media.gmp-gmpopenh264.enabled": False,
    "media.gmp-widevinecdm.enabled": False,
    "services.settings.server": "data:,#remote-settings-dummy/v1",
    "security.remote_settings.crlite_filters.enabled": False,
    "security.remote_settings.intermediates.enabled": False,
    # Safe Browsing and tracking-protection lists
    "browser.safebrowsing.malware.enabled": False,
    "browser.safebrowsing.phishing.enabled": False,
    "browser.safebrowsing.downloads.enabled": False,
    "browser.safebrowsing.downloads.remote.enabled": False,
    "browser.safebrowsing.blockedURIs.enabled": False,
    "browser.safebrowsing.provider.google4.updateURL": "",
    "browser.safebrowsing.provider.google4.gethashURL": "",
    "browser.safebrowsing.provider.mozilla.updateURL": "",
    "browser.safebrowsing.provider.mozilla.gethashURL": "",
    "privacy.trackingprotection.enabled": False,
    # captive portal, connectivity, push, time, location, accounts
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
    "captivedetect.canonicalURL": "",
    "dom.push.enabled": False,
    "dom.push.connection.enabled": False,
    "dom.push.serverURL": "",
    "network.sntp.pools": "",
    "geo.enabled": False,
    "geo.provider.network.url": "",
    "identity.fxaccounts.enabled": False,
    # certificate status over the network (the lab's leaves name no responder anyway)
    "security.OCSP.enabled": 0,
    # names: the namespace's /etc/hosts only, no DoH, no proxy, no IPv6, no prefetching
    "network.trr.mode": 5,
    "doh-rollout.enabled": False,
    "network.proxy.type": 0,
    "network.proxy.enable_wpad_over_dhcp": False,
    "network.dns.disableIPv6": True,
    "network.dns.disablePrefetch": True,
    "network.dns.native_https_query": False,
    "network.predictor.enabled": False,
    "network.prefetch-next": False,
    "network.http.speculative-parallel-limit": 0,
    "browser.urlbar.speculativeConnect.enabled": False,
    "browser.places.speculativeConnect.enabled": False,
    # start-up and new-tab content
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.page": 0,
    "browser.startup.homepage": "about:blank",
    "browser.startup.homepage_override.mstone": "ignore",
    "startup.homepage_welcome_url": "about:blank",
    "startup.homepage_welcome_url.additional": "",
    "datareporting.policy.firstRunURL": "",
    "browser.aboutwelcome.enabled": False,
    "browser.newtabpage.enabled": False,
    "browser.newtabpage.activity-stream.feeds.topsites": False,
    "browser.newtabpage.activity-stream.feeds.section.topstories": False,
    "browser.newtabpage.activity-stream.feeds.system.topstories": False,
    "browser.newtabpage.activity-stream.feeds.telemetry": False,
    "browser.newtabpage.activity-stream.telemetry": False,
    "browser.topsites.contile.enabled": False,
    "browser.urlbar.quicksuggest.enabled": False,
    "browser.urlbar.suggest.searches": False,
    "browser.discovery.enabled": False,
    "browser.uitour.enabled": False,
    "extensions.pocket.enabled": False,
    "browser.translations.enable": False,
    "browser.ml.enable": False,
    "browser.sessionstore.resume_from_crash": False,
    "toolkit.startup.max_resumed_crashes": -1,
}
"""Everything Firefox would otherwise fetch from the internet, off (see the module's text)."""

MEASUREMENT_PREFS: Mapping[str, PrefValue] = {
    # memory cache only, as Chromium's off-the-record contexts: nothing of a trial is on disk
    "browser.cache.disk.enable": False,
    "browser.cache.offline.enable": False,
    # http:// stays http:// (h1c would silently become h1s/h2s)
    "dom.security.https_first": False,
    "dom.security.https_first_schemeless": False,
    "dom.security.https_only_mode": False,
    # microsecond timers and Largest Contentful Paint (off by default in Firefox ESR)
    "privacy.reduceTimerPrecision": False,
    "privacy.resistFingerprinting": False,
    "dom.enable_largest_contentful_paint": True,
    # no favicon request of the browser's own (Chromium headless makes none either)
    "browser.chrome.site_icons": False,
    # a page is never refused for having loaded too often or too fast
    "dom.navigation.navigationRateLimit.count": 0,
    "dom.disable_open_during_load": False,
    "dom.max_script_run_time": 0,
}
"""What a measured load needs (see the comments)."""

HTTP3_OFF: Mapping[str, PrefValue] = {
    "network.http.http3.enable": False,
    "network.http.altsvc.enabled": False,
}

PROTOCOL_PREFS: Mapping[str, Mapping[str, PrefValue]] = {
    H1C: HTTP3_OFF,
    H1S: {**HTTP3_OFF, "network.http.http2.enabled": False},
    H2S: HTTP3_OFF,
    H3: {
        "network.http.http3.enable": True,
        # the lab CA is not one of Firefox's built-in roots: without this Firefox completes the
        # QUIC handshake, then closes the connection and excludes the origin from HTTP/3
        # (nsHttp log: "Http3Session::Authenticated [hasThirdPartyRoots=1]", "ExcludeHttp3");
        # measured, the page loaded over h2 and http/1.1 with 5-6 TCP connections
        "network.http.http3.disable_when_third_party_roots_found": False,
        # no TCP connection raced against QUIC (Chromium's --origin-to-force-quic-on races
        # none either): by default a request still waiting for its QUIC handshake after 100 ms
        # starts a TCP fallback ("OnHttp3BackupTimer", "DoFallbackConnection" at rtt 200 ms).
        # Firefox then skips that connection only because the lab's addresses are private
        # ("skipping speculative connection ... with Local IP address [10.2.0.1]"); with this
        # the fallback is never tried
        "network.http.http3.backup_timer_delay": 600_000,
    },  # and the Alt-Svc mapping of every lab origin (h3_mapping), which Firefox applies only
    # once its Alt-Svc store exists: the browser makes one request at launch for that
    # (firefox._prime_alt_svc)
}
PROTOCOLS = frozenset({H1C, H1S, H2S, H3})
"""The protocols Firefox loads a page over in the lab."""

ALT_SVC_MAPPING = "network.http.http3.alt-svc-mapping-for-testing"
"""The preference naming, per host, the Alt-Svc that Firefox takes as known (h3 only)."""


NO_CPU_THROTTLING = (
    "firefox has no DevTools CPU throttling (WebDriver BiDi has no such command, and Firefox "
    "none of its own): use firefox:cores=N, the whole browser in a CPU quota"
)


@dataclass(frozen=True)
class Options:
    refused: ClassVar[Mapping[str, str]] = {"cpu": NO_CPU_THROTTLING}
    """Chromium's options Firefox has no counterpart of, and why"""

    device: str = device_option()
    """a name in :data:`~h2lab.clients.browser.options.DEVICES` (Chromium's devices)"""
    idle_ms: float = idle_option()
    """after the load event, also wait until the network has been idle this long (WebPageTest's
    "fully loaded": 2000 ms), so requests made by scripts after load are made and served"""
    speed_index: str = speed_index_option()
    """how SpeedIndex is computed: ``h2lab`` or ``wpt`` (:data:`h2lab.metrics.visual.MODES`)"""
    filmstrip: bool = filmstrip_option()
    cores: float | None = cores_option()
    """the whole browser in a CPU quota of this many cores (:mod:`h2lab.clients.cpu`)"""
    visual: bool = option(
        FLAG,
        True,
        "record the compositor's frames for SpeedIndex and visual complete (default 1)",
        "visual=0",
    )
    """0: no frames, e.g. for a long load with animations: every distinct frame is held until
    the load ends"""
    network: bool = option(
        FLAG,
        True,
        "follow every request with BiDi's network events (default 1; 0: resources from "
        "Resource Timing, no HAR headers)",
        "network=0",
    )
    """0: take the resources from the page's Resource Timing instead, which the measured load
    does not pay for (:data:`~h2lab.clients.browser.firefox.tab.NETWORK_EVENTS`)"""

    def __post_init__(self) -> None:
        if self.filmstrip and not self.visual:
            raise ValueError("filmstrip=1 needs the frames that visual=0 turns off")
        if self.idle_ms and not self.network:
            raise ValueError("idle waits for network silence, which network=0 cannot see")


def h3_mapping(hosts: Iterable[str]) -> str:
    """``a.test;h3=:443,b.test;h3=:443``: these lab origins speak h3 from their first request."""
    return ",".join(f"{host};h3=:{PORTS[H3]}" for host in sorted(hosts))


H3_BY_ALT_SVC: Mapping[str, PrefValue] = {
    "network.http.http3.enable": True,
    "network.http.altsvc.enabled": True,
    # the lab CA, accepted for QUIC as in the forced h3 profile (PROTOCOL_PREFS)
    "network.http.http3.disable_when_third_party_roots_found": False,
}
"""h3 as Firefox finds it when shipped (``discovery = "alt-svc"``): from the servers'
``Alt-Svc`` headers, no origin mapped in advance, and its own TCP fallback raced against QUIC
(``backup_timer_delay`` left at Firefox's default)."""


BY_DNS_PREFS: Mapping[str, PrefValue] = {
    "network.dns.native_https_query": True,
    # off under WebDriver unless this says so (h2lab drives Firefox over BiDi); a user's
    # Firefox on Linux asks as the first one says (on since Firefox 129)
    "network.dns.native_https_query_in_automation": True,
    "network.dns.use_https_rr_as_altsvc": True,
}
"""Names as Firefox as shipped resolves them (``discovery = "https-rr"``, both trials of the
pair): A and HTTPS records from the system's resolver, the lab's
(:mod:`h2lab.clients.browser.names`); an HTTPS record's ``alpn`` h3 taken as an Alt-Svc."""


def profile_prefs(
    protocol: str, hosts: Mapping[str, str], discovery: str = "forced",
    h3_hosts: Collection[str] | None = None,
) -> dict[str, PrefValue]:  # fmt: skip
    """The preferences of the profile that runs ``protocol`` against ``hosts`` (lab origin ->
    address); over h3, found as ``discovery`` says (``forced``: the origins of ``h3_hosts``,
    None: every one, mapped to h3 from their first request, the others reached over TCP;
    ``alt-svc``: :data:`H3_BY_ALT_SVC`)."""
    prefs = {**OFFLINE_PREFS, **MEASUREMENT_PREFS, **PROTOCOL_PREFS[protocol]}
    if protocol == H3 and discovery in BY_ALT_SVC:
        prefs = {**OFFLINE_PREFS, **MEASUREMENT_PREFS, **H3_BY_ALT_SVC}
    elif protocol == H3:
        prefs[ALT_SVC_MAPPING] = h3_mapping(h for h in hosts if h3_hosts is None or h in h3_hosts)
    if discovery in BY_DNS:
        prefs.update(BY_DNS_PREFS)
    return prefs


def user_js(prefs: Mapping[str, PrefValue]) -> str:
    """A profile's ``user.js``: one ``user_pref(name, value);`` line per preference (values
    as JSON literals, which is what the file's syntax takes for booleans, numbers and
    strings)."""
    return "".join(f"user_pref({json.dumps(k)}, {json.dumps(v)});\n" for k, v in prefs.items())
