"""What a client measures in one trial, and the record of a trial attempt, as typed values
(pure: no I/O). Clients produce the metrics, the runner the :class:`TrialRecord`; the store
converts a record to and from its row (:mod:`h2lab.store.sqlite`), and the analysis and the
report read records without knowing the row's format."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Final, Literal

from h2lab.spec.factors import Cell
from h2lab.spec.protocols import ProtocolName

Status = Literal["ok", "failed"]
"""How a trial attempt ended (the store's ``status`` column holds no other value)."""
STATUSES: tuple[Status, ...] = ("ok", "failed")
OK: Final = "ok"

ReportedBy = Literal["browser", "load", "client", "lab"]
"""Who measures a metric (:attr:`Metric.reported_by`)."""
REPORTERS: tuple[ReportedBy, ...] = ("browser", "load", "client", "lab")


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
    error: str | None = None
    """why the request failed, as the client reports it (Chromium: ``net::ERR_BLOCKED_BY_ORB``,
    ...); None: it finished"""
    priority_field: str | None = None
    """the RFC 9218 ``priority`` header field the client sent with the request (``u=0, i``;
    None: it sent none, or does not say)"""
    priority_update: str | None = None
    """the priority the client changed the request to after sending it (Chromium's
    ``Network.resourceChangedPriority``: VeryHigh..VeryLow, sent as a PRIORITY_UPDATE frame)"""
    from_cache: bool = False
    """the browser answered it from its own cache (a URL the page asked for twice): nothing
    went over the network, and ``protocol`` is whatever the browser says of the cached entry
    (Firefox: ``http/1.1``)"""
    step: int | None = None
    """the journey step that began it (0: the first, the measured load); None outside a
    journey"""


@dataclass(frozen=True)
class StepTiming:
    """One step of a journey after its first (issue #57): a row of the store's ``steps``."""

    step: int
    """its place in the journey file (the first, the trial's measured load, is 0)"""
    name: str
    kind: str
    """``navigate``, ``click``, ``type``, ``submit``, ``scroll`` or ``wait``"""
    duration_ms: float
    """the action to the end of its wait"""
    requests: int
    """requests the step began"""
    new_connections: int
    """connections first used during the step, every origin"""
    new_connections_json: str = "{}"
    """the same per origin (a JSON object)"""
    url: str | None = None
    """the document's URL once the step ended"""
    ttfb_ms: float | None = None
    """for a step that loaded a document: its responseStart, from its navigation's start"""
    fcp_ms: float | None = None
    lcp_ms: float | None = None
    load_ms: float | None = None
    """its loadEventEnd"""
    interaction_ms: float | None = None
    """the longest Event Timing duration of an interaction during the step (as INP)"""


@dataclass(frozen=True)
class Metric:
    """How one metric is measured and read."""

    name: str
    """its field on :class:`Metrics`, its store column (unit in the name)"""
    unit: str
    """``ms``, ``bytes``, ``requests``, ``connections``, ``segments``, ``packets``, ``score`` (a
    unitless figure, named as the field names it: ``cls``)"""
    title: str
    """what the report calls it"""
    reported_by: ReportedBy
    """who measures it: ``browser`` (Chromium), ``load`` (h2load, nghttp), ``client`` (every
    client), or ``lab`` (the runner, from the namespaces' counters)"""
    lower_is_better: bool = True
    judges: ReportedBy | None = None
    """the cells whose verdicts it gives: ``load`` (non-browser clients), ``browser``, or None"""
    only: str | None = None
    """the one client that reports it, where not every one of :attr:`reported_by` does"""


BROWSER: Final = "browser"
LOAD: Final = "load"
CLIENT: Final = "client"
LAB: Final = "lab"


def _metric(
    unit: str,
    title: str,
    by: ReportedBy,
    judges: ReportedBy | None = None,
    only: str | None = None,
) -> Any:
    meta = {"unit": unit, "title": title, "reported_by": by, "judges": judges, "only": only}
    return field(default=None, metadata={"metric": meta})


@dataclass(frozen=True, kw_only=True)
class Metrics:
    """Every metric of a trial, each in its unit (None: not reported by this client, or the
    trial failed). Page-level times run from navigation start for a browser and from the first
    request for a load client. The fields are the table: :data:`METRICS` derives from them."""

    pdt_ms: float | None = _metric("ms", "page download time (ms)", CLIENT, LOAD)
    """first request sent -> last byte of the last response (seed 002)"""
    plt_ms: float | None = _metric("ms", "page load time (ms)", BROWSER, BROWSER)
    """loadEventEnd, from navigation start"""
    speed_index_ms: float | None = _metric("ms", "SpeedIndex (ms)", BROWSER, BROWSER)
    failed_requests: int | None = _metric("requests", "requests that failed", BROWSER)
    """requests of the load that failed in the browser and that it did not cancel itself
    (blocked by ORB or CSP, mixed content, not recorded, a connection error): each is a
    resources row with its ``error``; the trial fails for them only with ``fail_on = "any"``"""
    connect_ms: float | None = _metric("ms", "first connection set up (ms)", CLIENT)
    """the first connection's TCP (and TLS) handshake done: h2load's ``time for connect``
    (from its connect call); Chromium's navigation timing ``connectEnd`` of the document, from
    navigation start (with TLS False Start, when the client's Finished left)"""
    ttfb_ms: float | None = _metric("ms", "time to first byte (ms)", CLIENT)
    """the first response byte: h2load's ``time to 1st byte`` (from its connect call), a
    browser's responseStart of the document"""
    dcl_ms: float | None = _metric("ms", "DOMContentLoaded (ms)", BROWSER)
    """domContentLoadedEventStart"""
    fp_ms: float | None = _metric("ms", "first paint (ms)", BROWSER)
    fcp_ms: float | None = _metric("ms", "first contentful paint (ms)", BROWSER)
    lcp_ms: float | None = _metric("ms", "largest contentful paint (ms)", BROWSER)
    visual_complete_ms: float | None = _metric("ms", "visually complete (ms)", BROWSER)
    """first frame from which visual progress stays at 100%"""
    first_visual_change_ms: float | None = _metric("ms", "first visual change (ms)", BROWSER)
    """browsertime's FirstVisualChange: the first frame with visual progress (WebPageTest mode:
    the first frame that differs from the first frame)"""
    last_visual_change_ms: float | None = _metric("ms", "last visual change (ms)", BROWSER)
    """browsertime's LastVisualChange: the last frame that differs from the one before"""
    visual_complete_85_ms: float | None = _metric("ms", "visually 85% complete (ms)", BROWSER)
    """browsertime's VisualComplete85: the first frame from which progress stays >= 85%"""
    visual_complete_95_ms: float | None = _metric("ms", "visually 95% complete (ms)", BROWSER)
    visual_complete_99_ms: float | None = _metric("ms", "visually 99% complete (ms)", BROWSER)
    cls: float | None = _metric("score", "cumulative layout shift", BROWSER, only="chromium")
    """CumulativeLayoutShift (unitless): the largest session window's sum of layout-shift
    scores without recent input, as web-vitals defines it (shifts less than 1 s apart, a
    window at most 5 s long); None: the browser reports no layout shifts (Firefox)"""
    tbt_ms: float | None = _metric("ms", "total blocking time (ms)", BROWSER, only="chromium")
    """TotalBlockingTime: over the renderer main thread's top-level tasks, each clipped to
    [FCP, end of the trace], the sum of each one's part beyond 50 ms (Lighthouse's rule;
    Lighthouse ends at TTI, h2lab at the end of the trial's trace); Chromium only"""
    fully_loaded_ms: float | None = _metric("ms", "fully loaded (ms)", BROWSER)
    """WebPageTest's fullyLoaded: the end of the load's last request, or the load event's end
    if later, from navigation start, measured with the browser's ``idle=`` option (None
    without it)"""
    body_bytes: int | None = _metric("bytes", "body bytes", CLIENT)
    request_header_bytes: int | None = _metric("bytes", "request header bytes", CLIENT)
    """header bytes sent (HPACK vs HTTP/1.1); the server's count where the client has none"""
    response_header_bytes: int | None = _metric("bytes", "response header bytes", CLIENT)
    bytes_up: int | None = _metric("bytes", "bytes on the link, up", LAB)
    bytes_down: int | None = _metric("bytes", "bytes on the link, down", LAB)
    tcp_connections: int | None = _metric("connections", "TCP connections opened", LAB)
    dns_lookups: int | None = _metric("lookups", "DNS lookups over the link", LAB)
    """queries the lab's resolver answered during the trial (a name the lab lacks, or one the
    client could not find in its hosts file); None: the lab ran none"""
    dns_nxdomain: int | None = _metric("lookups", "DNS lookups answered NXDOMAIN", LAB)
    """of those, the names the lab lacks (a host the capture does not hold)"""
    retransmits: int | None = _metric("segments", "segments retransmitted", LAB)
    """TCP segments the servers namespace's kernel retransmitted during the trial
    (``RetransSegs``): toward the client, and behind a front server (``haproxy``,
    ``haproxy@3.0``) its connections to its backend too, which count in h3 trials as well"""
    early_data_packets: int | None = _metric("packets", "0-RTT packets sent", LAB)
    """QUIC 0-RTT packets the client sent (long header, type 0-RTT), counted on the client's
    end of the link in a repeat view over HTTP/3: 0 records that no early data was sent; None
    in other trials (not looked for)"""
    udp_dropped_packets: int | None = _metric("packets", "UDP datagrams to port 443 dropped", LAB)
    """with ``discovery = "udp-blocked"``, the datagrams to the h3 port the link dropped (the
    browser's QUIC attempts; 0: it never tried); None in other trials"""
    quic_sent_packets: int | None = _metric("packets", "QUIC packets the server sent", LAB)
    """over HTTP/3, the packets the server's QUIC connections sent during the trial (their
    retransmissions included), as the server counts them (the origin's quic-go; HAProxy 3.0's
    stats socket where every connection the load used is still open when it ends); None where
    the server keeps no count"""
    quic_lost_packets: int | None = _metric("packets", "QUIC packets the server lost", LAB)
    """of those, the packets the server's loss detection declared lost (RFC 9002): QUIC's
    counterpart of TCP's ``retransmits``, from the same servers; None where it keeps no
    count"""
    quic_initial_window_bytes: int | None = _metric(
        "bytes", "QUIC initial congestion window of the server", LAB
    )
    """over HTTP/3, the initial congestion window the server's QUIC stack gave its senders, as
    it reports it (the origin's quic-go: 40,960 bytes unless ``origin:initcwnd=``); None where
    the server tells none"""
    cpu_calibration_ms: float | None = _metric("ms", "CPU calibration under the quota (ms)", CLIENT)
    """with a client's ``cores=`` option, the wall time of a fixed piece of work
    (:data:`h2lab.clients.cpu.CALIBRATION_LOOPS` loops, the mean of four) run under the
    client's CPU quota just before the load: about 50-60 ms on a free core here, some 4.4
    times that at a quarter (the quota's slices start cold: ``cpu_calibration_cores``); None
    without a quota"""
    cpu_calibration_cores: float | None = _metric(
        "cores", "CPU share the calibration got (cores)", CLIENT
    )
    """with ``cores=``, the calibration's CPU time over its wall time: the share of a core the
    quota gave it (0.249 at ``cores=0.25`` here; less: the machine could not give the quota);
    None without a quota"""
    cpu_throttled_ms: float | None = _metric("ms", "time throttled by the CPU quota (ms)", CLIENT)
    """with ``cores=``, how long the client's processes waited for their quota during the load
    (the cgroup's ``cpu.stat``, summed over the cores they were throttled on: it can exceed
    the load's time); None without a quota"""
    journey_ms: float | None = _metric("ms", "journey time (ms)", BROWSER)
    """a journey's (``page = "journey:FILE"``): its first step's page load time and the duration
    of every other step (``steps``), summed; None for a page"""


METRICS: tuple[Metric, ...] = tuple(Metric(f.name, **f.metadata["metric"]) for f in fields(Metrics))
"""Every metric, in column order."""


@dataclass(frozen=True, kw_only=True)
class LoadResult(Metrics):
    """What a client returns from one page load: its metrics (the lab's are filled in by the
    runner) and one row per resource."""

    resources: tuple[ResourceTiming, ...] = ()
    steps: tuple[StepTiming, ...] = ()
    """a journey's steps after its first (none for a page)"""


CPU_SATURATED_PCT = 90.0
"""A trial during which the machine was this busy is flagged (``cpu_saturated``)."""

JsonObject = Mapping[str, Any]
"""A JSON object as :func:`json.loads` gives it (lists, not tuples)."""


@dataclass(frozen=True)
class TrialRecord(Metrics):
    """One trial attempt's outcome with every metric in its unit; ``id`` is set by the store.

    Typed as every reader wants it: flags are booleans and the configuration and versions are
    parsed JSON objects. The store's row keeps its own format (0/1 integers, JSON text), and
    :mod:`h2lab.store.sqlite` converts at its boundary, so a reader never parses a column."""

    trial_key: str
    experiment: str
    block: str
    cell: Cell
    """the trial's factor levels as stored (one column each)"""
    page_digest: str | None
    protocol: ProtocolName
    repetition: int
    seed: int
    attempt: int
    status: Status
    error: str | None
    started_at: str
    duration_s: float | None
    config: JsonObject = field(hash=False)
    """the trial's resolved configuration (the store's ``config_json``)"""
    versions: JsonObject = field(hash=False)
    """the tools' versions and the machine's description (the store's ``versions_json``;
    :mod:`h2lab.machine`)"""
    id: int | None = None
    warmup: bool = False
    """a warm-up trial: stored, never analysed"""
    cpu_busy_pct: float | None = None
    """share of the machine's CPU time that was busy during the trial (all cores)"""
    cpu_saturated: bool | None = None
    """``cpu_busy_pct`` reached :data:`CPU_SATURATED_PCT`: the trial's timings may include
    waiting for a core (None: not recorded)"""
    emulator_drops: int | None = None
    """packets Rattan's sockets dropped during the trial because they were full: lost by the
    emulator, not by the asked loss model (0 on a faithful link; None: not recorded)"""
    server_tcp_cc: str | None = None
    """the TCP congestion control the server's connections ran, read back: from each socket
    it accepted during the trial (TCP_CONGESTION, where the server reports it: the origin;
    several joined by ``+``), else from the servers' namespace's sysctl for a trial over TCP
    (what every accepted socket takes: no h2lab server sets its own); None: not read"""
    server_quic_cc: str | None = None
    """over HTTP/3, the congestion control the server's QUIC stack ran, as it reports it
    (``newreno`` or ``cubic``: the origin's quic-go); None where the server tells none"""
    machine: str | None = None
    """the machine that ran the trial: its host name, with the first 12 hex digits of the Ray
    node beside it for a trial run on a cluster (``host/node``); None: not recorded"""
