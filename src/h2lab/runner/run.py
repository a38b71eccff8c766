"""Run trials for real: the driver and one trial in a lab.

The driver (:func:`run_trials`) decides what runs (resume, give-up, retries, blocks), hands
blocks to an executor (:mod:`h2lab.runner.executor`) and alone writes the store, committing
every attempt as it arrives. A lab (:class:`LabSession`, kept across blocks) runs one trial at
a time (:func:`run_one`): a server per (page, server) stretch, a Rattan link per trial (kept
for the next trial only when the link holds no state the next trial could inherit, see
:func:`link_is_stateless`). :class:`SerialExecutor` runs every block in this process, in one
lab; the workers of ``--jobs`` run theirs in one each (:mod:`h2lab.runner.shards`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import shutil
import signal
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from h2lab import clients, servers
from h2lab.artifacts import CAPTURE_KEYLOG, CAPTURE_LOG, CAPTURE_PCAP, SERVER_LOG, TRACEBACK
from h2lab.clients import LoadContext, LoadResult
from h2lab.errors import H2LabError, TrialFailed
from h2lab.machine import machine_info
from h2lab.metrics.counters import busy_pct, parse_cpu_times, parse_dev, parse_snmp
from h2lab.net import netns
from h2lab.net.capture import PacketCapture
from h2lab.net.lab import Lab, Link
from h2lab.pages import Page, resolve_page
from h2lab.results import Metrics, ResourceTiming
from h2lab.runner.executor import BlockDone, BlockJob, Event, Executor, TrialDone, block_jobs
from h2lab.runner.matrix import TrialSpec
from h2lab.servers import ServeContext
from h2lab.spec.network import NetworkProfile
from h2lab.spec.protocols import QUIC, TLS_OVER_TCP
from h2lab.spec.tcp import TcpSettings
from h2lab.store import Store, TrialRecord
from h2lab.store.sqlite import CPU_SATURATED_PCT, artifacts_dir


@dataclass(frozen=True)
class Counters:
    bytes_up: int
    bytes_down: int
    active_opens: int
    retransmits: int
    emulator_drops: int | None


def _client_iface(devs: Mapping[str, object]) -> str:
    names = [n for n in devs if n.startswith("vL1-L")]
    if len(names) != 1:
        raise H2LabError(f"client namespace has no single Rattan veth: {sorted(devs)}")
    return names[0]


def read_counters(link: Link, servers_ns: str) -> Counters:
    devs = parse_dev(netns.read_proc_net(link.client_ns, "dev"))
    iface = devs[_client_iface(devs)]
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

    try:
        server_version = servers.get(server).version()
    except H2LabError as exc:  # e.g. a missing binary: its trials fail, with the reason
        server_version = f"unavailable ({exc.line()})"
    return {
        **machine,
        "h2lab": __version__,
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
    """The server of the current (page, server, TLS version) stretch of trials: started when
    the stretch begins, stopped when it ends, and started again before the next attempt when it
    died during the last one (a crash costs one trial, not the rest of its block)."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self._stack = ExitStack()
        self._key: tuple[str, str, str] | None = None
        self.serving: servers.Serving | None = None
        self.error: str | None = None
        """the line of a server that did not start: the trials of its stretch fail with it"""

    def get(self, page: Page, spec: str, tls_version: str) -> None:
        key = (page.digest, spec, tls_version)
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


class _Terminated(KeyboardInterrupt):
    """SIGTERM, turned into the same orderly teardown as Ctrl-C."""


@contextmanager
def signals_as_interrupt() -> Iterator[Callable[[], None]]:
    """SIGINT and SIGTERM raise KeyboardInterrupt; yields a check that raises it again if a
    signal came but its exception was lost.

    CPython runs a signal's handler at the next bytecode, and when the signal arrives while
    ``subprocess`` forks, that bytecode is in an at-fork hook (logging's ``_releaseLock``),
    where exceptions are printed and ignored: the run went on to the end and exited 0. The
    check, called between trials, stops the run there instead (and the traceback of the lost
    exception is not printed).
    """
    received: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        raise _Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()

    def check() -> None:
        if received:
            raise _Terminated() if received[0] == signal.SIGTERM else KeyboardInterrupt()

    unraisable_hook = sys.unraisablehook

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        if not (received and isinstance(unraisable.exc_value, KeyboardInterrupt)):
            unraisable_hook(unraisable)

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    sys.unraisablehook = hook
    try:
        yield check
    finally:
        sys.unraisablehook = unraisable_hook
        for s, h in old.items():
            signal.signal(s, h)


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
                stretch.get(page, t.server, t.factors.tls)
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


ProgressFn = Callable[[TrialSpec, TrialRecord | None], None]
GiveUpFn = Callable[[TrialSpec, int], None]

RUNS_BEFORE_GIVING_UP = 2
"""A resumed run does not attempt again a trial that failed every attempt of this many
earlier runs (``retry_failed`` overrides): h2c at 1000 ms / 5% loss in seed 002 failed 10 of
10 attempts over five runs, 90 s each, every one a certain loss."""


def run_trials(
    trials: Sequence[TrialSpec],
    store: Store,
    *,
    timeout_s: float,
    retries: int = 0,
    retry_failed: bool = False,
    on_progress: ProgressFn | None = None,
    on_give_up: GiveUpFn | None = None,
    executor: Executor | None = None,
    fail_on: str = "document",
    capture: tuple[str, ...] = (),
) -> list[TrialRecord]:
    """Run ``trials`` not yet stored ok on ``executor`` (default: in this process, one lab);
    return the records written now, each committed as it arrives. A failed trial is attempted
    again at once, up to ``retries`` more times; every attempt is stored. A trial with
    ``RUNS_BEFORE_GIVING_UP * (1 + retries)`` failed attempts stored is given up (reported to
    ``on_give_up`` with that count) unless ``retry_failed``. ``on_progress`` hears of every
    trial once: stored before (record None) or ended now (its last attempt). ``fail_on``: when
    a browser's trial fails (the experiment's); ``capture``: what every trial records besides
    its measurements (the experiment's, see :func:`run_one`). Ctrl-C/SIGTERM stops the
    executor the orderly way and raises KeyboardInterrupt; the executor is closed when this
    returns."""
    if executor is None:
        executor = SerialExecutor()
    with signals_as_interrupt() as interrupted:
        try:
            todo, attempts = _resume(trials, store, retries, retry_failed, on_progress, on_give_up)
            if not todo:
                return []
            pages = _pages(todo)
            for job in block_jobs(
                todo,
                attempts,
                retries=retries,
                timeout_s=timeout_s,
                results_dir=store.dir,
                origins=tuple(dict.fromkeys(o for p in pages.values() for o in p.origins)),
                pages={spec: page.digest for spec, page in pages.items()},
                fail_on=fail_on,
                capture=capture,
            ):
                executor.submit(job)
            return _drive(executor, store, todo, on_progress, interrupted)
        finally:
            executor.close()


def _resume(
    trials: Sequence[TrialSpec],
    store: Store,
    retries: int,
    retry_failed: bool,
    on_progress: ProgressFn | None,
    on_give_up: GiveUpFn | None,
) -> tuple[list[TrialSpec], dict[str, int]]:
    """The trials to run (not stored ok, not given up) and the attempts stored per key; the
    others are reported."""
    if not trials:
        return [], {}
    experiment = trials[0].experiment
    done = store.done_keys(experiment)
    attempts = store.failed_attempts(experiment)  # every attempt of a key not done failed
    give_up_at = RUNS_BEFORE_GIVING_UP * (1 + retries)
    given_up = set() if retry_failed else {k for k, n in attempts.items() if n >= give_up_at}
    for t in trials:
        if t.key in done and on_progress:
            on_progress(t, None)
        elif t.key in given_up and on_give_up:
            on_give_up(t, attempts[t.key])
    return [t for t in trials if t.key not in done and t.key not in given_up], attempts


def _pages(trials: Sequence[TrialSpec]) -> dict[str, Page]:
    """The trials' pages by spec, in order of first use. Resolving a page here materializes it
    once, before any worker reads it."""
    pages: dict[str, Page] = {}
    for t in trials:
        if t.page not in pages:
            pages[t.page] = resolve_page(t.page)
    return pages


def _drive(
    executor: Executor,
    store: Store,
    todo: Sequence[TrialSpec],
    on_progress: ProgressFn | None,
    interrupted: Callable[[], None],
) -> list[TrialRecord]:
    """Store every attempt the executor streams back, as it arrives. On an interrupt, the
    executor is stopped and what ended meanwhile is still stored."""
    specs = {t.key: t for t in todo}
    written: list[TrialRecord] = []

    def keep(event: Event) -> None:
        if isinstance(event, TrialDone):
            record = dataclasses.replace(
                event.record, id=store.add_trial(event.record, event.resources)
            )
            written.append(record)
            if event.last and on_progress:
                on_progress(specs[record.trial_key], record)

    try:
        for event in executor.events(interrupted):
            keep(event)
            interrupted()  # a signal lost in an at-fork hook during that trial
        interrupted()
    except KeyboardInterrupt:
        executor.cancel()
        for event in executor.events():
            keep(event)
        raise
    return written


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


def trial_keylog(artifacts: Path, protocol: str, capture: tuple[str, ...]) -> Path | None:
    """Where a trial's client leaves its TLS keys: beside its capture, when it has one and
    speaks TLS (over TCP or QUIC); None otherwise."""
    if "pcap" in capture and protocol in TLS_OVER_TCP | QUIC:
        return artifacts / CAPTURE_KEYLOG
    return None


def packet_capture(
    link: Link, artifacts: Path, capture: tuple[str, ...]
) -> AbstractContextManager[object]:
    """tcpdump on the client's end of ``link`` into the trial's artifacts for the span of a
    ``with`` block (``"pcap"`` in ``capture``; :mod:`h2lab.net.capture`), else nothing."""
    if "pcap" not in capture:
        return nullcontext()
    iface = _client_iface(parse_dev(netns.read_proc_net(link.client_ns, "dev")))
    return PacketCapture(link.client_ns, iface, artifacts / CAPTURE_PCAP, artifacts / CAPTURE_LOG)


def run_one(
    lab: Lab,
    links: Links,
    client: clients.ClientAdapter,
    page: Page,
    t: TrialSpec,
    attempt: int,
    artifacts: Path,
    timeout_s: float,
    versions: dict[str, str],
    stretch: ServerStretch,
    fail_on: str = "document",
    capture: tuple[str, ...] = (),
) -> tuple[TrialRecord, tuple[ResourceTiming, ...]]:
    """Attempt ``attempt`` of trial ``t``, its artifacts in ``artifacts``; its record (``id``
    None: the driver stores it) and resources. A failed trial never leaves its link to the
    next one, keeps the end of the server's logs, and says so when the server died under it.
    With ``"pcap"`` in ``capture``, the packets on the client's end of the link from just
    before the client starts until it returns (:func:`packet_capture`), and for TLS the
    client's keys beside them (:attr:`h2lab.clients.LoadContext.keylog`)."""
    # A run killed during this attempt left its files here (the attempt was never stored):
    # start clean, so no log of the lost attempt is read as this one's.
    shutil.rmtree(artifacts, ignore_errors=True)
    started = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
    t0 = time.monotonic()
    cpu_before = parse_cpu_times(Path("/proc/stat").read_text())
    metrics: dict[str, object] = {}
    resources: tuple[ResourceTiming, ...] = ()
    error = None
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
        )
        # A client that talks to its browser over a socket in the client namespace (Firefox's
        # WebDriver BiDi) starts it here, so its control connection is not counted as the
        # trial's.
        prepare = getattr(client, "prepare", None)
        if prepare is not None:
            prepare(t.protocol, ctx)
        lab.reset_client_connections()
        with packet_capture(link, artifacts, capture):
            before = read_counters(link, lab.servers_ns)
            request_log = servers.RequestLog(lab.state_dir / "server")
            logged = request_log.mark()
            result = client.load(page, t.protocol, ctx)
            after = read_counters(link, lab.servers_ns)
        metrics = _measured(result, before, after)
        if metrics["request_header_bytes"] is None:
            # the client cannot tell (h2load, Chromium): the server's count, where it keeps one
            metrics["request_header_bytes"] = request_log.since(logged)
        resources = result.resources
    except H2LabError as exc:
        error = exc.line()
        links.keep_diagnostics(artifacts)
        links.close()
    except (OSError, ValueError) as exc:
        links.keep_diagnostics(artifacts)
        links.close()
        error = f"{type(exc).__name__}: {exc}"
        artifacts.mkdir(parents=True, exist_ok=True)
        (artifacts / TRACEBACK).write_text(traceback.format_exc())
    if error is not None and stretch.serving is not None:
        keep_server_logs(stretch.serving, artifacts)
        died = stretch.serving.exited()
        if died:
            error = f"server {t.server} died during the trial ({died}); the client: {error}"
    cpu = busy_pct(cpu_before, parse_cpu_times(Path("/proc/stat").read_text()))
    record = trial_record(
        t, page, attempt=attempt, error=error, started_at=started,
        duration_s=round(time.monotonic() - t0, 3), versions=versions, cpu_busy_pct=cpu,
        metrics=metrics,
    )  # fmt: skip
    return record, resources


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
        config_json=json.dumps(t.config(), sort_keys=True),
        versions_json=json.dumps(versions, sort_keys=True),
        warmup=int(t.warmup > 0),
        machine=versions.get("machine"),
        cpu_busy_pct=None if cpu is None else round(cpu, 1),
        cpu_saturated=None if cpu is None else int(cpu >= CPU_SATURATED_PCT),
        **metrics,  # type: ignore[arg-type]
    )
