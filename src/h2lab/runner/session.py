"""The lab that runs trials one at a time, and what outlives a trial in it.

A lab (:class:`LabSession`, kept across blocks) holds a server per (page, server) stretch
(:class:`ServerStretch`), a Rattan link per trial (:class:`Links`: kept for the next trial only
when the link holds no state the next trial could inherit, see :func:`link_is_stateless`), a
client adapter per client spec and the tool versions. :class:`SerialExecutor` runs every block
in this process, in one lab; the workers of ``--jobs`` run theirs in one each
(:mod:`h2lab.runner.shards`). One trial is :func:`h2lab.runner.trial.run_one`'s.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from pathlib import Path

from h2lab import clients, servers
from h2lab.errors import H2LabError
from h2lab.machine import machine_info
from h2lab.net.lab import Lab, Link
from h2lab.pages import Page, resolve_page
from h2lab.runner.executor import BlockDone, BlockJob, Event, TrialDone
from h2lab.runner.h3_origins import advertised
from h2lab.runner.trial import run_one
from h2lab.servers import ServeContext
from h2lab.spec.network import NetworkProfile
from h2lab.spec.tcp import TcpSettings
from h2lab.store.sqlite import artifacts_dir


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
        self._key: tuple[str, str, str, bool, tuple[str, ...], bool] | None = None
        self.serving: servers.Serving | None = None
        self.error: str | None = None
        """the line of a server that did not start: the trials of its stretch fail with it"""

    def get(
        self, page: Page, spec: str, tls_version: str, resumption: bool = False,
        alt_svc: frozenset[str] = frozenset(), qlog: bool = False,
    ) -> None:  # fmt: skip
        key = (page.digest, spec, tls_version, resumption, tuple(sorted(alt_svc)), qlog)
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
            qlog=qlog,
        )
        try:
            self.serving = self._stack.enter_context(servers.get(spec).serve(page, ctx))
        except H2LabError as exc:
            # the adapter stopped whatever it had started; the run goes on
            self.error = f"server {spec} did not start: {exc.line()}"

    def close(self) -> None:
        self._stack.close()
        self._key, self.serving, self.error = None, None, None


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
                stretch.get(
                    page, t.server, f.tls, f.view == "repeat", advertised(page, f),
                    "qlog" in job.capture,
                )  # fmt: skip
                attempt = stored + 1 + retry
                record, resources, steps = run_one(
                    lab, links, client, page, t, attempt,
                    artifacts_dir(job.results_dir, t.key, attempt), job.timeout_s,
                    self._versions[(t.server, t.client)], stretch, job.fail_on, job.capture,
                )  # fmt: skip
                last = record.status == "ok" or bool(stretch.error) or retry == job.retries
                yield TrialDone(record, resources, last, steps)
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
