"""What a client measures in one trial, as typed values (pure: no I/O). The store, the
analysis and the report consume these types; clients produce them."""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class ResourceTiming:
    url: str
    origin: str
    start_ms: float
    """request start, from the trial's first request"""
    ttfb_ms: float | None
    end_ms: float
    bytes: int
    """body bytes"""
    protocol: str
    connection: str
    """connection id, unique within the trial"""
    priority: str | None = None
    """the client's priority for the request, as it reports it (Chromium: VeryHigh..VeryLow)"""
    status: int | None = None
    """HTTP status of the response, where the client reports it"""
    pushed: bool = False
    """the server pushed it (HTTP/2 server push) instead of the client requesting it"""


@dataclass(frozen=True, kw_only=True)
class PageMetrics:
    """Page-level metrics: from navigation start for a browser, from the first request for a
    load client (h2load); NULL in the store where a client does not report one."""

    connect_ms: float | None = None
    """the first connection's TCP (and TLS) handshake done, from the first request's start
    (h2load's ``time for connect``; browsers: navigation timing's connectEnd)"""
    ttfb_ms: float | None = None
    dcl_ms: float | None = None
    """domContentLoadedEventStart"""
    fp_ms: float | None = None
    fcp_ms: float | None = None
    lcp_ms: float | None = None
    speed_index_ms: float | None = None
    visual_complete_ms: float | None = None


PAGE_METRICS = tuple(f.name for f in fields(PageMetrics))


@dataclass(frozen=True)
class LoadResult(PageMetrics):
    pdt_ms: float
    """first request sent -> last byte of the last response (seed 002)"""
    body_bytes: int
    request_header_bytes: int | None
    response_header_bytes: int | None
    resources: tuple[ResourceTiming, ...]
    plt_ms: float | None = None
    """loadEventEnd, from navigation start (browsers only)"""
