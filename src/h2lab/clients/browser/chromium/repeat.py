"""The repeat view in Chromium (the ``view`` factor, ``repeat``): after a first visit, the HTTP
cache is emptied (``Network.clearBrowserCache``) and every connection closes, while what a
browser keeps between visits stays: TLS session tickets (Chromium's SSL and QUIC session
caches) and Alt-Svc; then the tab waits on a blank page for the measured visit.

Chromium has no DevTools command that closes connections, and a memory-pressure signal closes
idle TCP and HTTP/2 connections but not QUIC sessions (measured: the QUIC connection was still
open 5 s later), while a critical one would also flush the session caches. What closes them all
and keeps the caches is net-internals' "Flush socket pools" (``NetworkContext::
CloseAllConnections``), opened in the trial's own tab, so in its browser context. Whether
anything is left open is then looked for where it cannot hide: the client namespace's UDP
sockets connected to a server's port 443 (:func:`quic_sockets`); a repeat view that cannot
close them fails rather than measure a reused connection. The runner's ``ss -K`` resets any TCP
connection still open (:meth:`h2lab.net.lab.Lab.reset_client_connections`).
"""

from __future__ import annotations

import time

from h2lab.clients.browser.chromium.cdp import DevTools
from h2lab.clients.browser.chromium.tab import TAB_TIMEOUT_S, Tab, evaluate
from h2lab.errors import TrialFailed
from h2lab.net import netns

QUIC_PORT_HEX = "01BB"
"""443, as ``/proc/net/udp`` writes a remote port"""
CLOSE_TIMEOUT_S = 5.0
NET_INTERNALS = "chrome://net-internals/#sockets"
FLUSH = "typeof chrome.send === 'function' ? (chrome.send('flushSocketPools'), 'sent') : 'none'"
"""net-internals' "Flush socket pools": the tab's network context closes every connection,
QUIC sessions too (``NetworkContext::CloseAllConnections``); its session caches stay"""
READY = "location.href + '|' + document.readyState"
POLL_S = 0.05


def quic_sockets(proc_net_udp: str) -> int:
    """UDP sockets connected to port 443 (a QUIC connection's) in ``/proc/net/udp``'s text."""
    n = 0
    for line in proc_net_udp.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 2 and fields[2].endswith(":" + QUIC_PORT_HEX):
            n += 1
    return n


def _open(cdp: DevTools, session: str, url: str) -> None:
    """Navigate the tab to ``url`` and wait until it has loaded (so that no load event of it
    is left to be taken for the next page's)."""
    cdp.call("Page.navigate", {"url": url}, session, timeout_s=TAB_TIMEOUT_S)
    deadline = time.monotonic() + TAB_TIMEOUT_S
    while evaluate(cdp, session, READY, "repeat view: waiting for a page") != f"{url}|complete":
        if time.monotonic() > deadline:
            raise TrialFailed(f"repeat view: {url} did not load within {TAB_TIMEOUT_S:g} s")
        time.sleep(POLL_S)


def forget_connections(cdp: DevTools, tab: Tab, client_ns: str) -> None:
    """Between the visits: a blank page, the HTTP cache emptied, idle connections closed (see
    the module); raises :class:`TrialFailed` when a QUIC connection is still open after
    :data:`CLOSE_TIMEOUT_S`."""
    s = tab.session
    cdp.call("Network.clearBrowserCache", {}, s, timeout_s=TAB_TIMEOUT_S)
    _open(cdp, s, NET_INTERNALS)
    if evaluate(cdp, s, FLUSH, "repeat view: closing the connections") != "sent":
        raise TrialFailed("repeat view: chrome://net-internals could not close the connections")
    _open(cdp, s, "about:blank")
    deadline = time.monotonic() + CLOSE_TIMEOUT_S
    while (n := quic_sockets(netns.read_proc_net(client_ns, "udp"))) > 0:
        if time.monotonic() > deadline:
            raise TrialFailed(
                f"repeat view: chromium kept {n} QUIC connection(s) open {CLOSE_TIMEOUT_S:g} s "
                "after its first visit"
            )
        time.sleep(POLL_S)
    tab.again()
