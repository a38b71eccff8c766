"""One trial in a lab, and the lab that runs them one at a time.

:func:`run_one` runs one attempt of a trial: a client load over the trial's link, the link's
counters and the machine's CPU around it, its record. It reads its clocks, the CPU and the
counters through arguments (:class:`TrialClock`, :data:`CpuReader`, :data:`CounterReader`) and
its lab through the small protocols below, so a test runs it against fakes without root
(tests/unit/test_runner_trial.py). A lab (:class:`LabSession`, kept across blocks) holds what
outlives a trial: a server per (page, server) stretch, a Rattan link per trial (kept for the
next trial only when the link holds no state the next trial could inherit, see
:func:`link_is_stateless`). :class:`SerialExecutor` runs every block in this process, in one
lab; the workers of ``--jobs`` run theirs in one each (:mod:`h2lab.runner.shards`). The driver
is :mod:`h2lab.runner.run`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import shutil
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from h2lab import clients, servers
from h2lab.artifacts import DNS_LOOKUPS, SERVER_LOG, TRACEBACK
from h2lab.clients import LoadContext, LoadResult
from h2lab.errors import H2LabError, TrialFailed
from h2lab.machine import machine_info
from h2lab.metrics.counters import CpuTimes, busy_pct, parse_cpu_times, parse_dev, parse_snmp
from h2lab.net import netns
from h2lab.net.dns import DNS_FOLDER, Answer, Lookups
from h2lab.net.firewall import UdpDropped, udp_dropped
from h2lab.net.lab import Lab, Link
from h2lab.pages import Page, resolve_page
from h2lab.results import CPU_SATURATED_PCT, Metrics, ResourceTiming, TrialRecord
from h2lab.runner.captures import client_iface, early_data_capture, packet_capture, trial_keylog
from h2lab.runner.executor import BlockDone, BlockJob, Event, TrialDone
from h2lab.runner.h3_origins import advertised, told
from h2lab.runner.matrix import TrialSpec
from h2lab.servers import ServeContext
from h2lab.spec.experiment import Capture, FailOn
from h2lab.spec.factors import UDP_BLOCKED
from h2lab.spec.network import NetworkProfile
from h2lab.spec.protocols import H3, PORTS
from h2lab.spec.tcp import TcpSettings
from h2lab.store.sqlite import artifacts_dir, config_json


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


CounterReader = Callable[[TrialLink, str], Counters]
"""``read(link, servers_ns)``: the link's byte and TCP counters (:func:`read_counters`)."""


def read_counters(link: TrialLink, servers_ns: str) -> Counters:
    """The link's counters now: bytes on the client's veth, the client's TCP opens, the
    servers' retransmits, Rattan's drops."""
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
    )


def tool_versions(
    server: str,
    client: clients.ClientAdapter,
    delay_overhead_ms: float,
    machine: Mapping[str, str],
) -> dict[str, str]:
    """What ran a trial: the tools, the machine (:func:`h2lab.machine.machine_info`), and
    Rattan's latency per direction that its Delay cells left out (net/calibration.py): a
    trial's RTT depends on it."""
    from h2lab import __version__
    from h2lab.net.rattan import RATTAN_VERSION
    from h2lab.version import commit

    try:
        server_version = servers.get(server).version()
    except H2LabError as exc:  # e.g. a missing binary: its trials fail, with the reason
        server_version = f"unavailable ({exc.line()})"
    return {
        **machine,
        "h2lab": __version__,
        "h2lab_commit": commit(),
        "rattan": RATTAN_VERSION,
        "rattan_delay_overhead_ms": f"{delay_overhead_ms:.3f}",
        server: server_version,
        client.name: client.version(),
    }


def link_is_stateless(profile: NetworkProfile) -> bool:
    """True when a link carries nothing from one trial to the next: no seeded loss process
    (its random stream would continue instead of restarting at the trial's seed) and no trace
    (its clock would continue). Rate and delay cells hold only their queue, empty once idle."""
    return (
        profile.up_loss_ratio == 0
        and profile.down_loss_ratio == 0
        and profile.up_trace is None
        and profile.down_trace is None
        and profile.cellular is None
    )


class Links:
    """The lab's current link: reused by the next trial when it asks for the same stateless
    profile and TCP settings, else replaced (a fresh client namespace and loss process)."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self.generation = 0
        """bumped on every new link (clients keeping processes in the namespace restart)"""
        self._link: Link | None = None
        self._key: tuple[NetworkProfile, TcpSettings] | None = None

    def get(self, profile: NetworkProfile, seed: int, tcp: TcpSettings) -> Link:
        key = (profile, tcp)
        link = self._link
        if link is not None and self._key == key and link_is_stateless(profile) and link.alive():
            return link
        self.close()
        link = self.lab.link(profile, seed, tcp)
        link.__enter__()
        self._link, self._key = link, key
        self.generation += 1
        return link

    def keep_diagnostics(self, artifacts: Path) -> None:
        """Write the current link's state into a failed trial's artifacts (``link-*``), before
        the link is closed: the lab's state folder, where Rattan's log lives, goes with it.
        Best effort: the trial's row is what must not be lost."""
        if self._link is None:
            return
        try:
            artifacts.mkdir(parents=True, exist_ok=True)
            for name, text in self._link.diagnostics().items():
                (artifacts / name).write_text(text)
        except (OSError, H2LabError):
            pass

    def close(self) -> None:
        if self._link is not None:
            link, self._link, self._key = self._link, None, None
            link.close()


class ServerStretch:
    """The server of the current (page, server, TLS version, resumption, Alt-Svc) stretch of
    trials (resumption: the repeat view's, :attr:`ServeContext.resumption`; Alt-Svc: the
    origins that send it, :attr:`ServeContext.alt_svc`): started when
    the stretch begins, stopped when it ends, and started again before the next attempt when it
    died during the last one (a crash costs one trial, not the rest of its block)."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self._stack = ExitStack()
        self._key: tuple[str, str, str, bool, tuple[str, ...]] | None = None
        self.serving: servers.Serving | None = None
        self.error: str | None = None
        """the line of a server that did not start: the trials of its stretch fail with it"""

    def get(
        self, page: Page, spec: str, tls_version: str, resumption: bool = False,
        alt_svc: frozenset[str] = frozenset(),
    ) -> None:  # fmt: skip
        key = (page.digest, spec, tls_version, resumption, tuple(sorted(alt_svc)))
        dead = self.serving is not None and self.serving.exited() is not None
        if self._key == key and not dead:
            return
        self.close()
        self._key = key
        ctx = ServeContext(
            netns=self.lab.servers_ns,
            origin_ips=self.lab.origin_ips,
            state_dir=self.lab.state_dir / "server",
            tls_dir=self.lab.state_dir / "tls",
            tls_version=tls_version,
            resumption=resumption,
            alt_svc=alt_svc,
        )
        try:
            self.serving = self._stack.enter_context(servers.get(spec).serve(page, ctx))
        except H2LabError as exc:
            # the adapter stopped whatever it had started; the run goes on
            self.error = f"server {spec} did not start: {exc.line()}"

    def close(self) -> None:
        self._stack.close()
        self._key, self.serving, self.error = None, None, None


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


PageLoader = Callable[[str, "str | None"], Page]
"""``load(spec, page_id)``: the page a trial names (its id as the driver resolved it, if
known)."""


def _resolve(spec: str, page_id: str | None) -> Page:
    return resolve_page(spec)


class LabSession:
    """One lab, started at the first block and kept for every block after it, with what
    outlives a trial: the current link (:class:`Links`), the server of the current (page,
    server) stretch (:class:`ServerStretch`), one client adapter per client spec, and the tool
    versions per (server, client). ``machine`` is what its records say ran them
    (:func:`h2lab.machine.machine_info`); ``load_page`` finds a trial's page (default: resolve
    its spec here)."""

    def __init__(
        self, machine: Mapping[str, str] | None = None, load_page: PageLoader = _resolve
    ) -> None:
        self._machine = dict(machine or machine_info())
        self._load_page = load_page
        self._stack = ExitStack()
        self._lab: Lab | None = None
        self._links: Links | None = None
        self._stretch: ServerStretch | None = None
        self._pages: dict[str, Page] = {}
        self._adapters: dict[str, clients.ClientAdapter] = {}
        self._versions: dict[tuple[str, str], dict[str, str]] = {}

    def _open(self, origins: tuple[str, ...]) -> tuple[Lab, Links, ServerStretch]:
        if self._lab is None or self._links is None or self._stretch is None:
            lab = self._stack.enter_context(Lab(origins))
            self._lab, self._links, self._stretch = lab, Links(lab), ServerStretch(lab)
            self._stack.callback(self._links.close)
            self._stack.callback(self._stretch.close)
        else:
            self._lab.set_origins(origins)  # the same run's: nothing new
        return self._lab, self._links, self._stretch

    def _client(self, spec: str) -> clients.ClientAdapter:
        if spec not in self._adapters:
            self._adapters[spec] = clients.get(spec)
            self._stack.callback(self._adapters[spec].close)
        return self._adapters[spec]

    def run(self, job: BlockJob) -> Iterator[TrialDone]:
        """Run the block's trials in order, each attempted again at once when it fails (up to
        ``job.retries`` more times, not when its server did not start); one event per attempt."""
        lab, links, stretch = self._open(job.origins)
        for t in job.trials:
            if t.page not in self._pages:
                self._pages[t.page] = self._load_page(t.page, job.pages.get(t.page))
            page = self._pages[t.page]
            client = self._client(t.client)
            if (t.server, t.client) not in self._versions:
                self._versions[(t.server, t.client)] = tool_versions(
                    t.server, client, lab.delay_overhead_ms(), self._machine
                )
            stored = job.attempts.get(t.key, 0)
            for retry in range(1 + job.retries):
                f = t.factors
                stretch.get(page, t.server, f.tls, f.view == "repeat", advertised(page, f))
                attempt = stored + 1 + retry
                record, resources = run_one(
                    lab, links, client, page, t, attempt,
                    artifacts_dir(job.results_dir, t.key, attempt), job.timeout_s,
                    self._versions[(t.server, t.client)], stretch, job.fail_on, job.capture,
                )  # fmt: skip
                last = record.status == "ok" or bool(stretch.error) or retry == job.retries
                yield TrialDone(record, resources, last)
                if last:
                    break

    def close(self) -> None:
        """Stop the clients, the server and the link, and tear the lab down."""
        self._stack.close()
        self._lab = self._links = self._stretch = None


class SerialExecutor:
    """Runs every block here, in submission order, in one :class:`LabSession`: Ctrl-C raises
    inside the running trial, and :meth:`close` tears the lab down."""

    def __init__(self) -> None:
        self._jobs: deque[BlockJob] = deque()
        self._session = LabSession()

    def submit(self, job: BlockJob) -> None:
        self._jobs.append(job)

    def events(self, check: Callable[[], None] = lambda: None) -> Iterator[Event]:
        while self._jobs:
            job = self._jobs.popleft()
            yield from self._session.run(job)
            yield BlockDone(job.number)

    def cancel(self) -> None:
        self._jobs.clear()

    def close(self) -> None:
        self._jobs.clear()
        self._session.close()


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
) -> tuple[TrialRecord, tuple[ResourceTiming, ...]]:
    """Attempt ``attempt`` of trial ``t``, its artifacts in ``artifacts``; its record (``id``
    None: the driver stores it) and resources. A failed trial never leaves its link to the
    next one, keeps the end of the server's logs, and says so when the server died under it.
    With ``"pcap"`` in ``capture``, the packets on the client's end of the link from just
    before the client starts until it returns (:func:`packet_capture`), and for TLS the
    client's keys beside them (:attr:`h2lab.clients.LoadContext.keylog`). ``clock``, ``cpu``
    and ``counters`` are what it reads besides its client: its start and duration, the
    machine's CPU around it, the link's counters (this machine's by default; tests pass fakes)."""
    # A run killed during this attempt left its files here (the attempt was never stored):
    # start clean, so no log of the lost attempt is read as this one's.
    shutil.rmtree(artifacts, ignore_errors=True)
    started = clock.now().isoformat(timespec="milliseconds")
    t0 = clock.monotonic_s()
    cpu_before = cpu()
    metrics: dict[str, object] = {}
    resources: tuple[ResourceTiming, ...] = ()
    error, dns = None, lab.state_dir / DNS_FOLDER
    try:
        if stretch.error:
            raise TrialFailed(stretch.error)
        link = links.get(t.network, t.seed, t.tcp)
        ctx = LoadContext(
            netns=link.client_ns,
            artifacts_dir=artifacts,
            timeout_s=timeout_s,
            hosts={h: lab.origin_ips[h] for h in page.origins},
            tls_dir=lab.state_dir / "tls",
            link_generation=links.generation,
            fail_on=fail_on,
            keylog=trial_keylog(artifacts, t.protocol, capture),
            discovery=t.factors.discovery,
            h3_hosts=told(page, t.factors, t.protocol),
        )
        with _udp_blocking(lab, t) as blocked:
            _before_the_load(lab, client, page, t, ctx)
            early = early_data_capture(link, artifacts, t)
            with packet_capture(link, artifacts, capture), early or nullcontext():
                before = counters(link, lab.servers_ns)
                request_log, lookups = servers.RequestLog(lab.state_dir / "server"), Lookups(dns)
                logged, looked = request_log.mark(), lookups.mark()
                result = client.load(page, t.protocol, ctx)
                after = counters(link, lab.servers_ns)
            dropped = None if blocked is None else blocked.packets()
        metrics = _measured(result, before, after)
        metrics["udp_dropped_packets"] = dropped
        metrics.update(_lookups(lookups.since(looked), artifacts))
        metrics["early_data_packets"] = None if early is None else early.packets()
        if metrics["request_header_bytes"] is None:
            # the client cannot tell (h2load, Chromium): the server's count, where it keeps one
            metrics["request_header_bytes"] = request_log.since(logged)
        resources = result.resources
    except (H2LabError, OSError, ValueError) as exc:
        error = _failed(exc, links, artifacts)
    if error is not None and stretch.serving is not None:
        error = _server_said(stretch.serving, t.server, artifacts, error)
    record = trial_record(
        t, page, attempt=attempt, error=error, started_at=started,
        duration_s=round(clock.monotonic_s() - t0, 3), versions=versions,
        cpu_busy_pct=busy_pct(cpu_before, cpu()), metrics=metrics,
    )  # fmt: skip
    return record, resources


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
