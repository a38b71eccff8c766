"""Which origins of a trial's page speak h3 (the ``h3_origins`` factor, resolved against the
page): what the browser is told (:func:`h3_hosts`, :attr:`LoadContext.h3_hosts`) and which
origins send ``Alt-Svc`` (:func:`advertised`, :attr:`ServeContext.alt_svc`) or have an HTTPS
DNS record (:func:`published`)."""

from __future__ import annotations

from h2lab.errors import TrialFailed
from h2lab.pages import Page
from h2lab.pages.sites import ALL, h3_hosts_of
from h2lab.spec.factors import BY_ALT_SVC, BY_DNS, TrialFactors
from h2lab.spec.protocols import QUIC


def h3_hosts(page: Page, f: TrialFactors) -> frozenset[str]:
    """The page's origins that speak h3 at ``f.h3_origins``; :class:`TrialFailed` when a list
    names none of them (the trial would be h2 throughout)."""
    hosts = h3_hosts_of(f.h3_origins, page.entry.origin, page.origins)
    if not hosts:
        raise TrialFailed(
            f"h3_origins {f.h3_origins[:200]} names none of the page's origins "
            f"({', '.join(page.origins[:5])}{'...' if len(page.origins) > 5 else ''})"
        )
    return hosts


def told(page: Page, f: TrialFactors, protocol: str) -> frozenset[str] | None:
    """:attr:`LoadContext.h3_hosts`: None (every origin) but in an h3 trial whose
    ``h3_origins`` is not ``all``."""
    if protocol not in QUIC or f.h3_origins == ALL:
        return None
    return h3_hosts(page, f)


def advertised(page: Page, f: TrialFactors) -> frozenset[str]:
    """:attr:`ServeContext.alt_svc`: the h3 origins where the discovery reads ``Alt-Svc``,
    none otherwise (a list naming none of the page's: none, and the trial fails in
    :func:`told`)."""
    if f.discovery not in BY_ALT_SVC:
        return frozenset()
    return h3_hosts_of(f.h3_origins, page.entry.origin, page.origins)


def published(page: Page, f: TrialFactors) -> frozenset[str]:
    """The origins the lab's resolver publishes an HTTPS record for: the h3 origins where the
    discovery reads DNS (both trials of the pair: as the servers' ``Alt-Svc``, the record is
    the site's, and an h2s browser has h3 off), none otherwise."""
    if f.discovery not in BY_DNS:
        return frozenset()
    return h3_hosts_of(f.h3_origins, page.entry.origin, page.origins)
