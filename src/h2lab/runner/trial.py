"""One trial in a lab.

:func:`run_one` runs one attempt of a trial: a client load over the trial's link, the link's
counters and the machine's CPU around it, its record. It reads its clocks, the CPU and the
counters through arguments (:class:`TrialClock`, :data:`CpuReader`, :data:`CounterReader`) and
its lab through the small protocols below, so a test runs it against fakes without root
(tests/unit/test_runner_trial.py). The lab that runs trials one at a time, and what outlives a
trial in it, are :mod:`h2lab.runner.session`'s. The driver is :mod:`h2lab.runner.run`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import shutil
import time
import traceback
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from h2lab import clients, servers
from h2lab.artifacts import DNS_LOOKUPS, SERVER_LOG, TRACEBACK
from h2lab.clients import LoadContext, LoadResult
from h2lab.errors import H2LabError, TrialFailed
from h2lab.metrics.counters import CpuTimes, busy_pct, parse_cpu_times, parse_dev, parse_snmp
from h2lab.net import netns
from h2lab.net.dns import DNS_FOLDER, Answer, Lookups
from h2lab.net.firewall import UdpDropped, udp_dropped
from h2lab.pages import Page
from h2lab.results import CPU_SATURATED_PCT, Metrics, ResourceTiming, StepTiming, TrialRecord
from h2lab.runner.captures import (
    ServerCounts,
    client_iface,
    early_data_capture,
    namespace_congestion,
    packet_capture,
    trial_keylog,
    trial_qlog_dir,
)
from h2lab.runner.h3_origins import published, told
from h2lab.runner.matrix import TrialSpec
from h2lab.spec.experiment import Capture, FailOn
from h2lab.spec.factors import JOURNEY, UDP_BLOCKED
from h2lab.spec.journey import Journey, load_journey
from h2lab.spec.network import NetworkProfile
from h2lab.spec.protocols import H3, PORTS
from h2lab.spec.tcp import TcpSettings
from h2lab.store.sqlite import config_json


class TrialClock(Protocol):
    """The clocks one trial reads (:data:`SYSTEM_CLOCK`; a test passes a fake)."""

    def now(self) -> dt.datetime:
        """Wall-clock time, aware: the record's ``started_at``."""
        ...

    def monotonic_s(self) -> float:
        """Seconds on a clock that never steps back: the record's ``duration_s``."""
        ...


class SystemClock:
    """This machine's clocks: UTC wall time and :func:`time.monotonic`."""

    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)

    def monotonic_s(self) -> float:
        return time.monotonic()


SYSTEM_CLOCK: TrialClock = SystemClock()

CpuReader = Callable[[], CpuTimes]
"""The machine's CPU time so far (:func:`read_cpu_times`): read before and after a trial, its
``cpu_busy_pct`` is the busy share between."""


def read_cpu_times() -> CpuTimes:
    """This machine's CPU times, from ``/proc/stat``."""
    return parse_cpu_times(Path("/proc/stat").read_text())


class TrialLink(Protocol):
    """What a trial uses of its link (:class:`h2lab.net.lab.Link`)."""

    @property
    def client_ns(self) -> str: ...

    def emulator_drops(self) -> int | None: ...


class TrialLab(Protocol):
    """What a trial uses of its lab (:class:`h2lab.net.lab.Lab`)."""

    @property
    def servers_ns(self) -> str: ...

    @property
    def state_dir(self) -> Path: ...

    @property
    def origin_ips(self) -> Mapping[str, str]: ...

    def reset_client_connections(self) -> None: ...

    def publish_https(self, hosts: frozenset[str]) -> None:
        """The lab resolver's HTTPS records: for ``hosts`` only, from the next lookup on."""
        ...


class TrialLinks(Protocol):
    """What a trial uses of the lab's current link (:class:`Links`)."""

    @property
    def generation(self) -> int: ...

    def get(self, profile: NetworkProfile, seed: int, tcp: TcpSettings) -> TrialLink: ...

    def keep_diagnostics(self, artifacts: Path) -> None: ...

    def close(self) -> None: ...


class TrialServer(Protocol):
    """What a trial uses of its stretch's server (:class:`ServerStretch`)."""

    @property
    def error(self) -> str | None: ...

    @property
    def serving(self) -> servers.Serving | None: ...


@dataclass(frozen=True)
class Counters:
    bytes_up: int
    bytes_down: int
    active_opens: int
    retransmits: int
    emulator_drops: int | None
    tcp_cc: str | None = None
    """the TCP congestion control the servers namespace gives a socket (its sysctl)"""


CounterReader = Callable[[TrialLink, str], Counters]
"""``read(link, servers_ns)``: the link's byte and TCP counters (:func:`read_counters`)."""


def read_counters(link: TrialLink, servers_ns: str) -> Counters:
    """The link's counters now: bytes on the client's veth, the client's TCP opens, the
    servers' retransmits, Rattan's drops; and the servers' TCP congestion control."""
    devs = parse_dev(netns.read_proc_net(link.client_ns, "dev"))
    iface = devs[client_iface(devs)]
    client_tcp = parse_snmp(netns.read_proc_net(link.client_ns, "snmp"))
    server_tcp = parse_snmp(netns.read_proc_net(servers_ns, "snmp"))
    return Counters(
        bytes_up=iface.tx_bytes,
        bytes_down=iface.rx_bytes,
        active_opens=client_tcp["ActiveOpens"],
        retransmits=server_tcp["RetransSegs"],
        emulator_drops=link.emulator_drops(),
        tcp_cc=namespace_congestion(servers_ns),
    )


SERVER_LOG_TAIL_BYTES = 1 << 20
"""How much of each server log a failed trial keeps among its artifacts (the end)."""


def keep_server_logs(serving: servers.Serving, artifacts: Path) -> None:
    """Copy the end of the server's logs into a failed trial's artifacts (``server-<name>``):
    the lab's state folder, where they live, goes with the lab."""
    artifacts.mkdir(parents=True, exist_ok=True)
    for log in serving.logs():
        with log.open("rb") as f:
            f.seek(max(0, f.seek(0, 2) - SERVER_LOG_TAIL_BYTES))
            (artifacts / SERVER_LOG.format(name=log.name)).write_bytes(f.read())


def _measured(result: LoadResult, before: Counters, after: Counters) -> dict[str, object]:
    """The metrics of a successful trial: the client's, and the link's from the counters."""
    return {
        **{f.name: getattr(result, f.name) for f in dataclasses.fields(Metrics)},
        "bytes_up": after.bytes_up - before.bytes_up,
        "bytes_down": after.bytes_down - before.bytes_down,
        "tcp_connections": after.active_opens - before.active_opens,
        "retransmits": after.retransmits - before.retransmits,
        "emulator_drops": None
        if after.emulator_drops is None or before.emulator_drops is None
        else after.emulator_drops - before.emulator_drops,
    }


def _lookups(answered: list[Answer] | None, artifacts: Path) -> dict[str, int | None]:
    """A trial's ``dns_lookups`` and ``dns_nxdomain`` from its resolver's answers, which it
    keeps among its artifacts (:data:`DNS_LOOKUPS`)."""
    if answered is None:
        return {"dns_lookups": None, "dns_nxdomain": None}
    if answered:
        artifacts.mkdir(parents=True, exist_ok=True)
        lines = [f"{a.at_s}\t{a.name}\t{a.qtype}\t{a.rcode}\n" for a in answered]
        (artifacts / DNS_LOOKUPS).write_text("at_s\tname\ttype\tanswer\n" + "".join(lines))
    nxdomain = sum(a.rcode == "NXDOMAIN" for a in answered)
    return {"dns_lookups": len(answered), "dns_nxdomain": nxdomain}


def run_one(
    lab: TrialLab,
    links: TrialLinks,
    client: clients.ClientAdapter,
    page: Page,
    t: TrialSpec,
    attempt: int,
    artifacts: Path,
    timeout_s: float,
    versions: dict[str, str],
    stretch: TrialServer,
    fail_on: FailOn = "document",
    capture: tuple[Capture, ...] = (),
    *,
    clock: TrialClock = SYSTEM_CLOCK,
    cpu: CpuReader = read_cpu_times,
    counters: CounterReader = read_counters,
) -> tuple[TrialRecord, tuple[ResourceTiming, ...], tuple[StepTiming, ...]]:
    """Attempt ``attempt`` of trial ``t``, its artifacts in ``artifacts``; its record (``id``
    None: the driver stores it), resources and a journey's steps. A failed trial never leaves
    its link to the next one, keeps the end of the server's logs, and says so when the server
    died under it.
    With ``"pcap"`` in ``capture``, the packets on the client's end of the link from just
    before the client starts until it returns (:func:`packet_capture`), and for TLS the
    client's keys beside them (:attr:`h2lab.clients.LoadContext.keylog`). ``clock``, ``cpu``
    and ``counters`` are what it reads besides its client: its start and duration, the
    machine's CPU around it, the link's counters (this machine's by default; tests pass fakes)."""
    # A run killed during this attempt left its files here (the attempt was never stored):
    # start clean, so no log of the lost attempt is read as this one's.
    shutil.rmtree(artifacts, ignore_errors=True)
    now = clock.now()
    started, since_s = now.isoformat(timespec="milliseconds"), now.timestamp()
    t0 = clock.monotonic_s()
    cpu_before = cpu()
    metrics: dict[str, object] = {}
    resources: tuple[ResourceTiming, ...] = ()
    steps: tuple[StepTiming, ...] = ()
    error, dns = None, lab.state_dir / DNS_FOLDER
    try:
        if stretch.error:
            raise TrialFailed(stretch.error)
        link = links.get(t.network, t.seed, t.tcp)
        lab.publish_https(published(page, t.factors))
        ctx = _load_context(lab, page, t, artifacts, capture, timeout_s, fail_on)
        ctx = dataclasses.replace(ctx, netns=link.client_ns, link_generation=links.generation)
        with _udp_blocking(lab, t) as blocked:
            _before_the_load(lab, client, page, t, ctx)
            early = early_data_capture(link, artifacts, t)
            with packet_capture(link, artifacts, capture), early or nullcontext():
                said = ServerCounts(stretch.serving, t.protocol)
                before = counters(link, lab.servers_ns)
                request_log, lookups = servers.RequestLog(lab.state_dir / "server"), Lookups(dns)
                logged, looked = request_log.mark(), lookups.mark()
                result = client.load(page, t.protocol, ctx)
                after = counters(link, lab.servers_ns)
                said.end(since_s, ctx.qlog_dir)
            dropped = None if blocked is None else blocked.packets()
        metrics = _measured(result, before, after)
        metrics.update(said.metrics(after.tcp_cc))
        metrics["udp_dropped_packets"] = dropped
        metrics.update(_lookups(lookups.since(looked), artifacts))
        metrics["early_data_packets"] = None if early is None else early.packets()
        if metrics["request_header_bytes"] is None:
            # the client cannot tell (h2load, Chromium): the server's count, where it keeps one
            metrics["request_header_bytes"] = request_log.since(logged)
        resources, steps = result.resources, result.steps
    except (H2LabError, OSError, ValueError) as exc:
        error = _failed(exc, links, artifacts)
    if error is not None and stretch.serving is not None:
        error = _server_said(stretch.serving, t.server, artifacts, error)
    record = trial_record(
        t, page, attempt=attempt, error=error, started_at=started,
        duration_s=round(clock.monotonic_s() - t0, 3), versions=versions,
        cpu_busy_pct=busy_pct(cpu_before, cpu()), metrics=metrics,
    )  # fmt: skip
    return record, resources, steps


def _load_context(
    lab: TrialLab, page: Page, t: TrialSpec, artifacts: Path, capture: tuple[Capture, ...],
    timeout_s: float, fail_on: FailOn,
) -> LoadContext:  # fmt: skip
    """What the client is told for trial ``t`` (its link's namespace and generation are set
    once the link is had): the origins' addresses, the CA, how it finds h3 and where, where
    its keys and qlog go."""
    return LoadContext(
        netns="",
        artifacts_dir=artifacts,
        timeout_s=timeout_s,
        hosts={h: lab.origin_ips[h] for h in page.origins},
        tls_dir=lab.state_dir / "tls",
        fail_on=fail_on,
        keylog=trial_keylog(artifacts, t.protocol, capture),
        qlog_dir=trial_qlog_dir(artifacts, t.protocol, capture),
        discovery=t.factors.discovery,
        h3_hosts=told(page, t.factors, t.protocol),
        journey=journey_of(t.page),
    )


def journey_of(page: str) -> Journey | None:
    """The journey a ``journey:FILE`` page level names (read again: validation read it)."""
    if not page.startswith(f"{JOURNEY}:"):
        return None
    return load_journey(Path(page.removeprefix(f"{JOURNEY}:")))


def _before_the_load(
    lab: TrialLab, client: clients.ClientAdapter, page: Page, t: TrialSpec, ctx: LoadContext
) -> None:
    """Before the counters: a client's own setup in the namespace is not the trial's (Firefox's
    WebDriver BiDi connection to its browser), nor is a repeat view's first visit (its
    connections closed after it); then no connection left open from before."""
    client.prepare(t.protocol, ctx)
    if t.factors.view == "repeat":
        client.prime(page, t.protocol, ctx)
    lab.reset_client_connections()


def _udp_blocking(lab: TrialLab, t: TrialSpec) -> AbstractContextManager[UdpDropped | None]:
    """With ``discovery = "udp-blocked"``, UDP to the h3 port dropped as it reaches the servers
    for the whole trial (a repeat view's first visit too: the same network)."""
    blocked = t.factors.discovery == UDP_BLOCKED
    return udp_dropped(lab.servers_ns, PORTS[H3]) if blocked else nullcontext()


def _failed(exc: Exception, links: TrialLinks, artifacts: Path) -> str:
    """A failed trial's error line, after its link's state is kept and the link closed: an
    :class:`H2LabError`'s own line, else the exception's type and text with its traceback
    kept among the artifacts."""
    links.keep_diagnostics(artifacts)
    links.close()
    if isinstance(exc, H2LabError):
        return exc.line()
    artifacts.mkdir(parents=True, exist_ok=True)
    (artifacts / TRACEBACK).write_text(traceback.format_exc())
    return f"{type(exc).__name__}: {exc}"


def _server_said(serving: servers.Serving, server: str, artifacts: Path, error: str) -> str:
    """A failed trial's error, its server's logs kept; when the server died during the trial,
    the error says so first."""
    keep_server_logs(serving, artifacts)
    died = serving.exited()
    if died:
        return f"server {server} died during the trial ({died}); the client: {error}"
    return error


def trial_record(
    t: TrialSpec,
    page: Page,
    *,
    attempt: int,
    error: str | None,
    started_at: str,
    duration_s: float,
    versions: Mapping[str, str],
    cpu_busy_pct: float | None,
    metrics: Mapping[str, object],
) -> TrialRecord:
    """The row of one attempt of ``t`` (failed when ``error``; ``metrics`` as
    :func:`_measured` gives them, none for a failed one); ``id`` is None until stored."""
    cpu = cpu_busy_pct
    return TrialRecord(
        trial_key=t.key,
        experiment=t.experiment,
        block=t.block,
        cell=t.cell,
        page_digest=page.digest,
        protocol=t.protocol,
        repetition=t.repetition,
        seed=t.seed,
        attempt=attempt,
        status="ok" if error is None else "failed",
        error=error,
        started_at=started_at,
        duration_s=duration_s,
        # as JSON gives them back (lists, not tuples): the record equals the one read from
        # the store, and crosses the wire unchanged
        config=json.loads(config_json(t.config())),
        versions=dict(versions),
        warmup=t.warmup > 0,
        machine=versions.get("machine"),
        cpu_busy_pct=None if cpu is None else round(cpu, 1),
        cpu_saturated=None if cpu is None else cpu >= CPU_SATURATED_PCT,
        **metrics,  # type: ignore[arg-type]
    )
