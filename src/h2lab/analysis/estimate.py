"""How long a block will take, from what is known before it runs: the dispatcher's estimate.

A driver that hands blocks out longest first (:func:`h2lab.runner.executor.longest_first`)
cannot know a block's duration before running it, so it ranks blocks by this estimate, built
only from the block's factors and, on a resumed run, from the durations the store already holds.

One trial costs ``overhead + load`` seconds:

- **overhead**: what a trial of a client costs besides loading the page (starting the client,
  a browser's profile and tab, writing the results), per client (:data:`CLIENT_COSTS`).
- **load**: the page over the emulated path. The path is its RTT (plus the jitter of both
  directions), its downlink rate and its loss in either direction; a cellular profile stands
  for its mean RTT, mean rate and the share of time it spends in loss episodes, a Mahimahi
  trace for its mean rate. Loss caps each connection at Padhye et al.'s TCP throughput
  (:func:`loss_limited_bps`). The page's bytes go over its connections (one per origin for a
  multiplexed protocol, up to six per origin for HTTP/1.1) as
  :func:`h2lab.analysis.lower_bound.fetch_lower_bound_ms` fetches one body (handshakes, slow
  start, serialisation), one round trip more for the entry document before its subresources,
  one more per request queued behind another on an HTTP/1.1 connection (none when pipelined)
  or behind the client's cap of requests per host (OkHttp's 5, ``per_host=N``), and the
  server's longest think time. ``clients=N`` in a client spec (h2load's parallel page loads)
  multiplies bytes and connections by N.

A trial the model gives longer than the trial timeout is expected to fail every attempt and
costs ``timeout × (1 + retries)``. A cell whose trials the store already holds (a resumed run)
costs what they took (:func:`recorded_costs`): every attempt, failed ones too, per trial; the
model's other cells are scaled by how far it missed on those (:meth:`BlockEstimator.scale`).

The estimate ranks blocks; it is not a measurement. ``bench/cluster.py simulate`` prints how
well it ranks recorded blocks (:func:`rank_correlation`). Pure but for reading a Mahimahi trace
a network names.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from h2lab.analysis.lower_bound import MSS_BYTES, fetch_lower_bound_ms, handshake_rtts
from h2lab.errors import H2LabError, SpecError, UnitError
from h2lab.pages import Page
from h2lab.pages.gen_mix import HA_BYTES, HA_COUNTS
from h2lab.results import TrialRecord
from h2lab.runner.executor import BlockJob
from h2lab.runner.matrix import TrialSpec
from h2lab.spec.cellular import STEP_MS, cellular_profiles, read_mahimahi
from h2lab.spec.factors import Cell, TrialFactors
from h2lab.spec.network import NetworkProfile
from h2lab.spec.options import parse_named
from h2lab.spec.protocols import H1C, H1P, H1S
from h2lab.units import parse_duration_ms


@dataclass(frozen=True)
class ClientCost:
    """What a client adds to a trial besides the bytes it moves."""

    overhead_s: float
    """seconds a trial costs besides its page load (start-up, a browser's profile and tab,
    writing results)"""
    per_host: int | None = None
    """requests it keeps outstanding per host at most (None: all it may, six connections'
    worth for HTTP/1.1); its ``per_host=N`` option overrides it"""


CLIENT_COSTS = {
    "chromium": ClientCost(3.2),
    "firefox": ClientCost(4.1),
    "okhttp": ClientCost(1.4, per_host=5),
    "curl": ClientCost(0.8),
    "nghttp": ClientCost(0.85),
    "h2load": ClientCost(0.8),
}
"""Per client. ``overhead_s``: the median of ``duration_s`` minus the measured load time
(``plt_ms``, else ``pdt_ms``) over the ok trials of reproduction/*/trials.csv (2026-11:
chromium 3337 trials, firefox 1045, okhttp 120, nghttp 110, h2load 7139); curl, not among
them, is taken as h2load (one process, no profile). OkHttp's dispatcher runs 5 calls per
host (``DEFAULT_PER_HOST`` of :mod:`h2lab.clients.okhttp`, OkHttp's
``Dispatcher.maxRequestsPerHost``), over HTTP/2 too."""
UNKNOWN_CLIENT = ClientCost(max(c.overhead_s for c in CLIENT_COSTS.values()))
"""A client not in the table costs as much as the dearest known one: a long guess only moves
its blocks earlier, where a short one could leave them for the end."""

CONNECTIONS_PER_HOST_H1 = 6
"""HTTP/1.1 connections per host of Chromium and Firefox (and h2load's plan for h1,
:data:`h2lab.clients.h2load.BROWSER_CONNECTIONS_PER_HOST`)."""
PADHYE_B = 2
"""Packets acknowledged per ACK (delayed ACKs, RFC 9293 §3.8.6.3), Padhye et al.'s ``b``."""
RTO_MIN_MS = 200.0
"""Linux's TCP_RTO_MIN: a retransmission timeout is at least the RTT plus this (RFC 6298
§2.4 allows 1 s; Linux uses 200 ms)."""
INITIAL_RTO_S = 1.0
"""RFC 6298 §2.1: a lost handshake packet is sent again after 1 s."""
UNKNOWN_PAGE_OBJECTS = sum(HA_COUNTS.values())
UNKNOWN_PAGE_BYTES = sum(HA_BYTES.values()) * 1000
"""A page the estimate cannot see is the HTTP Archive 2024 median page (71 requests, 2.6 MB,
:data:`h2lab.pages.gen_mix.HA_COUNTS`)."""
_THINK = re.compile(r"(?:^|[:,;])(?:delay_[a-z]+|think)=([0-9.]+\s*(?:us|ms|s))\b")


@dataclass(frozen=True)
class ClientModel:
    """A client spec as the estimate sees it: its :class:`ClientCost`, its options applied."""

    cost: ClientCost
    loads: int = 1
    """page loads a trial makes at once (h2load's ``clients=N``)"""
    per_host: int | None = None
    """requests outstanding per host at most (the option ``per_host=N``, else the client's)"""

    @property
    def overhead_s(self) -> float:
        return self.cost.overhead_s


def client_model(client: str) -> ClientModel:
    """``chromium``, ``h2load:clients=40``, ``okhttp:per_host=8`` -> its :class:`ClientModel`;
    an unknown name is :data:`UNKNOWN_CLIENT`, an option that is not a count is left out."""
    try:
        name, options = parse_named(client, "client", "client", "client")
    except SpecError:
        return ClientModel(UNKNOWN_CLIENT)
    cost = CLIENT_COSTS.get(name, UNKNOWN_CLIENT)

    def count(key: str) -> int | None:
        text = options.get(key, "")
        return int(text) if text.isdigit() and int(text) > 0 else None

    return ClientModel(
        cost, loads=count("clients") or 1, per_host=count("per_host") or cost.per_host
    )


@dataclass(frozen=True)
class PageShape:
    """What the estimate needs of a page."""

    objects: int
    """responses, the entry document among them"""
    size_bytes: int
    """every body together"""
    origins: int
    """hosts serving them"""
    think_ms: float = 0.0
    """the longest per-resource server think time (:attr:`h2lab.pages.Resource.delay_ms`)"""

    @classmethod
    def of(cls, page: Page) -> PageShape:
        return cls(
            objects=max(1, len(page.resources)),
            size_bytes=sum(r.size_bytes for r in page.resources),
            origins=max(1, len(page.origins)),
            think_ms=max((r.delay_ms for r in page.resources), default=0.0),
        )


UNKNOWN_PAGE = PageShape(UNKNOWN_PAGE_OBJECTS, UNKNOWN_PAGE_BYTES, origins=1)


@dataclass(frozen=True)
class PathModel:
    """An emulated path as the estimate sees it."""

    rtt_ms: float
    rate_bps: float | None
    """the downlink's (mean) rate; None: unlimited"""
    loss_ratio: float
    """the chance a packet or its ACK is lost"""


def path_of(net: NetworkProfile) -> PathModel:
    """``net`` as one RTT, one rate and one loss ratio (see the module docstring)."""
    if net.cellular:
        p = cellular_profiles()[net.cellular]
        # one STEP_MS episode at loss_pct after each gap (net/traces.py loss_schedule)
        episode_s = STEP_MS / 1000
        in_loss = episode_s / (statistics.fmean(p.loss_gap_s) + episode_s)
        return PathModel(
            rtt_ms=statistics.fmean(p.rtt_ms),
            rate_bps=statistics.fmean(p.rate_kbps) * 1000,
            loss_ratio=min(1.0, in_loss * statistics.fmean(p.loss_pct) / 100),
        )
    rate: float | None = net.down_rate_bps
    if net.down_trace:
        try:
            rate = read_mahimahi(Path(net.down_trace)).mean_rate_bps
        except H2LabError:
            rate = None  # unreadable here: the run itself will say so
    lost = 1 - (1 - net.up_loss_ratio) * (1 - net.down_loss_ratio)
    return PathModel(net.rtt_ms + net.up_jitter_ms + net.down_jitter_ms, rate, lost)


def loss_limited_bps(rtt_ms: float, loss_ratio: float) -> float | None:
    """One TCP connection's throughput at this RTT and random loss (Padhye, Firoiu, Towsley,
    Kurose, "Modeling TCP Throughput", SIGCOMM 1998, eq. 30, with timeouts); None: no loss,
    no limit. QUIC's loss response (RFC 9002 §7, NewReno-like) is taken to be the same."""
    if loss_ratio <= 0:
        return None
    p = min(loss_ratio, 0.5)
    rtt_s = max(rtt_ms, 1.0) / 1000
    rto_s = rtt_s + RTO_MIN_MS / 1000
    per_packet_s = rtt_s * math.sqrt(2 * PADHYE_B * p / 3) + rto_s * min(
        1.0, 3 * math.sqrt(3 * PADHYE_B * p / 8)
    ) * p * (1 + 32 * p * p)
    return MSS_BYTES * 8 / per_packet_s


def load_s(
    shape: PageShape,
    path: PathModel,
    protocol: str,
    *,
    tls: str = "1.3",
    initcwnd: int = 10,
    client: ClientModel | None = None,
    think_ms: float = 0.0,
) -> float:
    """Seconds for ``client`` (default: one load, no cap per host) to load the page over
    ``path`` (module docstring)."""
    client = client or ClientModel(ClientCost(0.0))
    per_host = client.per_host
    per_origin = math.ceil(shape.objects / shape.origins)
    if protocol in (H1C, H1S, H1P):
        conns_per_origin = min(CONNECTIONS_PER_HOST_H1, per_host or per_origin, per_origin)
        outstanding = per_origin if protocol == H1P else conns_per_origin
    else:
        conns_per_origin = 1
        outstanding = min(per_host or per_origin, per_origin)
    conns = shape.origins * conns_per_origin * client.loads
    rate = path.rate_bps
    capped = loss_limited_bps(path.rtt_ms, path.loss_ratio)
    if capped is not None:
        rate = min(rate, capped * conns) if rate is not None else capped * conns
    hs = handshake_rtts(protocol, tls)
    fetch_ms = fetch_lower_bound_ms(
        math.ceil(shape.size_bytes * client.loads / conns),
        path.rtt_ms,
        None if rate is None else max(1, round(rate / conns)),
        handshake_rtts=hs,
        initcwnd_packets=initcwnd,
    )
    rounds = 1 + math.ceil(per_origin / outstanding)  # the entry document, then the rest
    lost_handshakes = min(1.0, 2 * hs * path.loss_ratio) * INITIAL_RTO_S
    return (fetch_ms + path.rtt_ms * (rounds - 1) + think_ms) / 1000 + lost_handshakes


def server_think_ms(server: str) -> float:
    """The longest ``delay_<class>=`` or ``think=`` duration in a server spec (a backend's
    options too: ``haproxy:backend=origin:delay_image=200ms``); 0 when none."""
    found = [parse_duration_ms(m) for m in _THINK.findall(server)]
    return max(found, default=0.0)


def trial_estimate_s(
    factors: TrialFactors, protocol: str, shape: PageShape, path: PathModel | None = None
) -> float:
    """Seconds one attempt of this trial is expected to take, timeouts aside (``path``:
    :func:`path_of` the trial's network, when the caller has it already)."""
    try:
        think_ms = max(shape.think_ms, server_think_ms(factors.server))
    except UnitError:
        think_ms = shape.think_ms
    client = client_model(factors.client)
    return client.overhead_s + load_s(
        shape,
        path or path_of(factors.network),
        protocol,
        tls=factors.tls,
        initcwnd=factors.initcwnd,
        client=client,
        think_ms=think_ms,
    )


Costs = Mapping[tuple[Cell, str], float]
"""Seconds per trial by (cell, protocol), from the store (:func:`recorded_costs`)."""


def recorded_costs(records: Iterable[TrialRecord]) -> dict[tuple[Cell, str], float]:
    """What a trial of each (cell, protocol) cost in the store: per trial, the sum of
    ``duration_s`` over its attempts (failed ones cost time too); per cell and protocol, the
    median over its trials. Warm-up trials are left out."""
    per_trial: dict[str, float] = {}
    where: dict[str, tuple[Cell, str]] = {}
    for r in records:
        if r.warmup or r.duration_s is None:
            continue
        per_trial[r.trial_key] = per_trial.get(r.trial_key, 0.0) + r.duration_s
        where[r.trial_key] = (r.cell, r.protocol)
    grouped: dict[tuple[Cell, str], list[float]] = {}
    for key, seconds in per_trial.items():
        grouped.setdefault(where[key], []).append(seconds)
    return {k: statistics.median(v) for k, v in grouped.items()}


@dataclass
class BlockEstimator:
    """Seconds per block: the sum of its trials' estimates (module docstring). Keeps the page
    shapes and network paths it has worked out, each worked out once per run."""

    recorded: Costs = field(default_factory=dict)
    """costs of the cells the store already holds (a resumed run); empty for a fresh one"""
    shapes: dict[str, PageShape] = field(default_factory=dict)
    """page spec -> shape; a page not in it is :data:`UNKNOWN_PAGE`"""
    paths: dict[NetworkProfile, PathModel] = field(default_factory=dict)
    """network -> path, filled as networks are met"""

    def model_s(self, t: TrialSpec) -> float:
        """One attempt of ``t`` by the model alone."""
        if t.network not in self.paths:
            self.paths[t.network] = path_of(t.network)
        shape = self.shapes.get(t.page, UNKNOWN_PAGE)
        return trial_estimate_s(t.factors, t.protocol, shape, self.paths[t.network])

    def scale(self, trials: Iterable[TrialSpec]) -> float:
        """How far the model missed on the recorded cells among ``trials``: the median of
        recorded cost / model; 1 when none is recorded."""
        ratios = [
            known / self.model_s(t)
            for t in trials
            if (known := self.recorded.get((t.cell, t.protocol))) is not None
        ]
        return statistics.median(ratios) if ratios else 1.0

    def trial_s(
        self, t: TrialSpec, timeout_s: float | None = None, retries: int = 0, scale: float = 1.0
    ) -> float:
        """One trial: its cell's recorded cost, else the model times ``scale``, which past
        ``timeout_s`` means a trial that fails every attempt: ``timeout_s × (1 + retries)``."""
        known = self.recorded.get((t.cell, t.protocol))
        if known is not None:
            return known
        seconds = self.model_s(t) * scale
        if timeout_s is not None and seconds > timeout_s:
            return timeout_s * (1 + retries)
        return seconds

    def block_s(
        self,
        trials: Sequence[TrialSpec],
        timeout_s: float | None = None,
        retries: int = 0,
        scale: float = 1.0,
    ) -> float:
        return sum(self.trial_s(t, timeout_s, retries, scale) for t in trials)

    def jobs_s(self, jobs: Sequence[BlockJob], pages: Mapping[str, Page]) -> list[float]:
        """Seconds per job of a run (``pages``: the run's resolved pages by spec), each with
        its timeout and retries, the model scaled by :meth:`scale` over every job's trials."""
        for spec, page in pages.items():
            if spec not in self.shapes:
                self.shapes[spec] = PageShape.of(page)
        scale = self.scale(t for job in jobs for t in job.trials) if self.recorded else 1.0
        return [self.block_s(job.trials, job.timeout_s, job.retries, scale) for job in jobs]


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def rank_correlation(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Spearman's rho: the Pearson correlation of the ranks; nan when either side is
    constant or there are fewer than two values."""
    if len(xs) != len(ys):
        raise ValueError(f"need as many xs as ys, got {len(xs)} and {len(ys)}")
    if len(xs) < 2:
        return math.nan
    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    return sxy / math.sqrt(sxx * syy) if sxx and syy else math.nan
