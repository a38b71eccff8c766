"""Run trials for real: one lab for the whole run, a server per (page, server) stretch, a fresh
Rattan link per trial, and every trial committed to the store as it ends."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import signal
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from types import FrameType

from h2lab import clients, servers
from h2lab.clients import LoadContext, LoadResult, ResourceTiming
from h2lab.errors import H2LabError
from h2lab.metrics.counters import parse_dev, parse_snmp
from h2lab.net import netns
from h2lab.net.lab import Lab
from h2lab.pages import Page, resolve_page
from h2lab.runner.matrix import TrialSpec
from h2lab.servers import ServeContext
from h2lab.store import Store, TrialRecord


@dataclass(frozen=True)
class Counters:
    bytes_up: int
    bytes_down: int
    active_opens: int
    retransmits: int


def _client_iface(devs: Mapping[str, object]) -> str:
    names = [n for n in devs if n.startswith("vL1-L")]
    if len(names) != 1:
        raise H2LabError(f"client namespace has no single Rattan veth: {sorted(devs)}")
    return names[0]


def read_counters(client_ns: str, servers_ns: str) -> Counters:
    devs = parse_dev(netns.read_proc_net(client_ns, "dev"))
    iface = devs[_client_iface(devs)]
    client_tcp = parse_snmp(netns.read_proc_net(client_ns, "snmp"))
    server_tcp = parse_snmp(netns.read_proc_net(servers_ns, "snmp"))
    return Counters(
        bytes_up=iface.tx_bytes,
        bytes_down=iface.rx_bytes,
        active_opens=client_tcp["ActiveOpens"],
        retransmits=server_tcp["RetransSegs"],
    )


def tool_versions(server: str, client: str) -> dict[str, str]:
    from h2lab import __version__
    from h2lab.net.rattan import RATTAN_VERSION

    return {
        "h2lab": __version__,
        "rattan": RATTAN_VERSION,
        server: servers.get(server).version(),
        client: clients.get(client).version(),
    }


class _Terminated(KeyboardInterrupt):
    """SIGTERM, turned into the same orderly teardown as Ctrl-C."""


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        raise _Terminated()

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


ProgressFn = Callable[[TrialSpec, TrialRecord | None], None]


def run_trials(
    trials: Sequence[TrialSpec],
    store: Store,
    *,
    timeout_s: float,
    on_progress: ProgressFn | None = None,
) -> list[TrialRecord]:
    """Run ``trials`` not yet stored ok; return the records written now."""
    done = store.done_keys(trials[0].experiment) if trials else set()
    todo = [t for t in trials if t.key not in done]
    for t in trials:
        if t.key in done and on_progress:
            on_progress(t, None)
    if not todo:
        return []
    pages: dict[str, Page] = {}
    for t in todo:
        if t.page not in pages:
            pages[t.page] = resolve_page(t.page)
    origins = tuple(dict.fromkeys(o for p in pages.values() for o in p.origins))
    versions: dict[tuple[str, str], dict[str, str]] = {}
    written: list[TrialRecord] = []
    with sigterm_as_interrupt(), Lab(origins) as lab, ExitStack() as serving:
        current: tuple[str, str] | None = None
        for t in todo:
            if current != (t.page, t.server):
                serving.close()
                ctx = ServeContext(
                    netns=lab.servers_ns,
                    origin_ips=lab.origin_ips,
                    state_dir=lab.state_dir / "server",
                    tls_dir=lab.state_dir / "tls",
                )
                serving.enter_context(servers.get(t.server).serve(pages[t.page], ctx))
                current = (t.page, t.server)
            if (t.server, t.client) not in versions:
                versions[(t.server, t.client)] = tool_versions(t.server, t.client)
            record = run_one(
                lab, pages[t.page], t, store, timeout_s, versions[(t.server, t.client)]
            )
            written.append(record)
            if on_progress:
                on_progress(t, record)
    return written


def _measured(result: LoadResult, before: Counters, after: Counters) -> dict[str, object]:
    """The metric columns of a successful trial."""
    return {
        "pdt_ms": result.pdt_ms,
        "plt_ms": result.plt_ms,
        "body_bytes": result.body_bytes,
        "bytes_up": after.bytes_up - before.bytes_up,
        "bytes_down": after.bytes_down - before.bytes_down,
        "tcp_connections": after.active_opens - before.active_opens,
        "retransmits": after.retransmits - before.retransmits,
        "request_header_bytes": result.request_header_bytes,
        "response_header_bytes": result.response_header_bytes,
    }


_NOT_MEASURED = dict.fromkeys(
    [
        "pdt_ms",
        "plt_ms",
        "body_bytes",
        "bytes_up",
        "bytes_down",
        "tcp_connections",
        "retransmits",
        "request_header_bytes",
        "response_header_bytes",
    ]
)


def run_one(
    lab: Lab, page: Page, t: TrialSpec, store: Store, timeout_s: float, versions: dict[str, str]
) -> TrialRecord:
    """One trial on a fresh link; its row (ok or failed) is committed before this returns."""
    attempt = store.attempts(t.experiment, t.key) + 1
    artifacts = store.artifacts_dir(t.key, attempt)
    started = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
    t0 = time.monotonic()
    metrics: dict[str, object] = _NOT_MEASURED
    resources: tuple[ResourceTiming, ...] = ()
    error = None
    try:
        with lab.link(t.network, t.seed, t.tcp) as link:
            before = read_counters(link.client_ns, lab.servers_ns)
            ctx = LoadContext(netns=link.client_ns, artifacts_dir=artifacts, timeout_s=timeout_s)
            result = clients.get(t.client).load(page, t.protocol, ctx)
            after = read_counters(link.client_ns, lab.servers_ns)
        metrics = _measured(result, before, after)
        resources = result.resources
    except H2LabError as exc:
        error = exc.line()
    except (OSError, ValueError) as exc:
        error = f"{type(exc).__name__}: {exc}"
        artifacts.mkdir(parents=True, exist_ok=True)
        (artifacts / "traceback.txt").write_text(traceback.format_exc())
    record = TrialRecord(
        trial_key=t.key,
        experiment=t.experiment,
        block=t.block,
        page=t.page,
        page_digest=page.digest,
        protocol=t.protocol,
        network=t.network.name,
        server=t.server,
        client=t.client,
        congestion_control=t.tcp.congestion_control,
        initcwnd_packets=t.tcp.initcwnd_packets,
        repetition=t.repetition,
        seed=t.seed,
        attempt=attempt,
        status="ok" if error is None else "failed",
        error=error,
        started_at=started,
        duration_s=round(time.monotonic() - t0, 3),
        config_json=json.dumps(t.config(), sort_keys=True),
        versions_json=json.dumps(versions, sort_keys=True),
        **metrics,  # type: ignore[arg-type]
    )
    trial_id = store.add_trial(record, resources)
    return dataclasses.replace(record, id=trial_id)
