"""Blocks run on a Ray cluster's lab nodes (``h2lab run --cluster ADDRESS``):
:class:`RayExecutor`, the driver's side.

On every live node offering :data:`~h2lab.cluster.nodes.LAB_RESOURCE`, the driver starts one
:class:`~h2lab.cluster.node.LabActor` (pinned to the node, holding its lab resource) and asks
it what machine it is, which h2lab it runs and whether it may run labs (``h2lab doctor``,
root): a node of another h2lab version or commit than the driver's
(:func:`~h2lab.cluster.checks.version_refusal`), or one whose doctor fails, gets no block, and
the reason is printed. A node that joins later is added the same way.

Each idle node is handed the next block in run order (so rounds stay balanced and a block's
protocols run back to back on one machine); Ray carries the block, the pages a node lacks
(:mod:`h2lab.cluster.transfer`, one object per page id, fetched by the node at most once) and
the streamed answers (an actor generator: one item per attempt, with its artifacts). Ray's
failure detection says when a node or its actor died: the attempt it was running is stored
as failed with that reason, and the rest of its block goes back to the head of the queue for
another node, its attempts counted as usual (no trial is run again once stored ok; the lost
one runs again, at most :data:`MAX_LOSSES` times).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import os
import queue
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from h2lab.cluster import transfer
from h2lab.cluster.checks import h2lab_identity, version_refusal
from h2lab.cluster.node import NodeFailed
from h2lab.cluster.nodes import LAB_RESOURCE, NAMESPACE, LabNode, head_address, lab_nodes
from h2lab.cluster.secrets import check_secrets, ray_env
from h2lab.errors import H2LabError, SpecError
from h2lab.pages import Page, resolve_page
from h2lab.runner import wire
from h2lab.runner.executor import BlockDone, BlockJob, Event, TrialDone
from h2lab.runner.trial import trial_record
from h2lab.store.sqlite import artifacts_dir

POLL_S = 0.5
CONNECT_TIMEOUT_S = 5.0
NODES_EVERY_S = 10.0
"""How often the driver looks for lab nodes that joined, while blocks wait."""
PROBE_TIMEOUT_S = 120.0
"""How long a new node may take to start its actor and answer (its lab resource may be held
by another driver's run: then it is skipped until it answers)."""
MAX_LOSSES = 2
"""A trial whose node was lost under it this many times in a run is not sent again (a trial
that kills its node would otherwise take every node down); a lost attempt does not count
against the experiment's ``retries``, which are for the trial's own failures."""
STOP_S = 300.0
"""How long nodes may take, after Ctrl-C, to finish their running trial and tear down."""


class ClusterError(H2LabError):
    """The cluster cannot run the blocks: unreachable, or no lab node (left)."""

    exit_code = 2


@dataclass
class _Slot:
    """One lab node and its actor."""

    node: LabNode
    actor: Any
    probe: Any
    """the probe's object ref until it answered"""
    machine: dict[str, str] = field(default_factory=dict)
    job: BlockJob | None = None
    generator: Any = None
    seen: dict[str, int] = field(default_factory=dict)
    """attempts of the running job's trials received so far"""
    finished: set[str] = field(default_factory=set)
    """keys of the running job whose last attempt was received"""
    since: str = ""
    """when its running attempt started (the previous answer)"""
    dead: bool = False


@dataclass(frozen=True)
class _End:
    """A node's generator ended: normally (``error`` None) or with Ray's error."""

    error: BaseException | None


def connect(address: str, secrets: Path) -> None:
    """Join the cluster at ``address`` (``HOST:PORT`` or ``auto``) as a driver, with the
    secrets' token and a certificate for the host's address; one clear line if it fails.
    Ray reads its TLS settings when it is first imported: nothing may import it before."""
    check_secrets(secrets, "--cluster-secrets")
    host, port = head_address(_auto_address() if address == "auto" else address)
    _reachable(host, port, address)
    env = ray_env(secrets, host)
    _handshake(host, port, address, env)
    os.environ.update(env)
    import ray

    try:
        ray.init(
            address=address,
            namespace=NAMESPACE,
            log_to_driver=False,
            logging_level=logging.ERROR,
            include_dashboard=False,
        )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ClusterError(f"command line: --cluster: cannot join {address}: {_why(exc)}") from exc


def _why(exc: BaseException) -> str:
    """The first line of ``exc`` and of what caused it: Ray's "Failed to connect to Ray
    cluster" hides its reason in ``__cause__``."""
    lines: list[str] = []
    link: BaseException | None = exc
    while link is not None and len(lines) < 2:
        text = str(link).strip()
        lines.append(text.splitlines()[0] if text else type(link).__name__)
        link = link.__cause__
    return " (".join(lines) + ")" * (len(lines) - 1)


def _auto_address() -> str:
    """The address of the local cluster that ``ray start`` last started here."""
    try:
        return Path("/tmp/ray/ray_current_cluster").read_text().strip()
    except OSError as exc:
        raise SpecError("command line", "--cluster", "auto: no local Ray cluster runs") from exc


def _reachable(host: str, port: int, address: str) -> None:
    """Fail fast, in one line, when nothing answers at the head's port: Ray itself would try
    again for minutes."""
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise ClusterError(
            f"command line: --cluster: cannot reach {address} ({exc.strerror or exc})"
        ) from exc


def _handshake(host: str, port: int, address: str, env: dict[str, str]) -> None:
    """Fail fast, in one line, when the head's TLS does not accept ours (another cluster's
    secrets): Ray would try again for minutes. A wrong token Ray refuses at once itself."""
    ctx = ssl.create_default_context(cafile=env["RAY_TLS_CA_CERT"])
    ctx.load_cert_chain(env["RAY_TLS_SERVER_CERT"], env["RAY_TLS_SERVER_KEY"])
    ctx.set_alpn_protocols(["h2"])
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S) as raw:
            ctx.wrap_socket(raw, server_hostname=host).close()
    except (ssl.SSLError, OSError) as exc:
        why = getattr(exc, "reason", None) or str(exc)
        raise ClusterError(
            f"command line: --cluster: {address} refused this secrets folder's TLS ({why})"
        ) from exc


class RayExecutor:
    """Runs blocks on the lab nodes of the cluster joined by :func:`connect`."""

    def __init__(self, address: str, *, say: Callable[[str], None] = print) -> None:
        self.address = address
        self._say = say
        self._queue: deque[BlockJob] = deque()
        self._slots: dict[str, _Slot] = {}
        self._items: queue.Queue[tuple[_Slot, Any, Any]] = queue.Queue()
        self._pages: dict[str, Page] = {}
        self._archives: dict[str, Any] = {}
        self._stop_by: float | None = None
        self._nodes_at = 0.0
        self._refused: dict[str, str] = {}
        self._losses: dict[str, int] = {}
        self._identity = h2lab_identity()
        self._add_nodes()
        if not self._slots:
            raise ClusterError(
                f"command line: --cluster: {address} has no live node offering {LAB_RESOURCE} "
                "(start lab nodes with `h2lab cluster worker`)"
            )
        self._await_probes(PROBE_TIMEOUT_S)
        if not self._live():
            why = next(iter(self._refused.values()), "no lab node answered")
            raise ClusterError(f"command line: --cluster: no lab node may run trials: {why}")

    # ------------------------------------------------------------------ the interface

    def submit(self, job: BlockJob) -> None:
        self._queue.append(job)

    def events(self, check: Callable[[], None] = lambda: None) -> Iterator[Event]:
        while self._queue or self._running():
            self._kill_late()
            if self._stop_by is None:
                self._refresh_nodes()
                self._dispatch()
                if self._queue and not self._live() and not self._probing():
                    raise ClusterError(
                        f"no lab node left in {self.address}: {len(self._queue)} blocks not "
                        "run; rerun the same command to resume"
                    )
            check()
            try:
                slot, generator, item = self._items.get(timeout=POLL_S)
            except queue.Empty:
                continue
            if generator is slot.generator:  # not the end of a block already done
                yield from self._handle(slot, item)

    def cancel(self) -> None:
        import ray

        self._queue.clear()
        if self._stop_by is None:
            self._stop_by = time.monotonic() + STOP_S
        for slot in self._slots.values():
            if slot.generator is not None:
                ray.cancel(slot.generator)

    def close(self) -> None:
        import ray

        try:
            if self._running() and self._stop_by is not None:
                self._stop_by = 0.0  # a second Ctrl-C while nodes were stopping: kill them
                self._kill_late()
            elif self._running():
                self.cancel()
                for _ in self.events():
                    pass  # the driver stored what it wanted before closing
        finally:
            for slot in self._slots.values():
                self._close_actor(slot)
            ray.shutdown()

    # ------------------------------------------------------------------ nodes

    def _live(self) -> list[_Slot]:
        return [s for s in self._slots.values() if not s.dead and s.machine and s.probe is None]

    def _probing(self) -> bool:
        return any(s.probe is not None and not s.dead for s in self._slots.values())

    def _running(self) -> bool:
        return any(s.job is not None for s in self._slots.values())

    def _add_nodes(self) -> None:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from h2lab.cluster.node import LabActor

        actor_class: Any = ray.remote(LabActor)
        for node in lab_nodes():
            if node.node_id in self._slots:
                continue
            actor = actor_class.options(
                num_cpus=0,
                resources={LAB_RESOURCE: 1},
                scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False),
                max_restarts=0,
                max_task_retries=0,
            ).remote()
            self._slots[node.node_id] = _Slot(node, actor, actor.probe.remote())
        self._nodes_at = time.monotonic()

    def _refresh_nodes(self) -> None:
        if self._queue and time.monotonic() - self._nodes_at > NODES_EVERY_S:
            self._add_nodes()
        self._await_probes(0)

    def _await_probes(self, timeout_s: float) -> None:
        import ray

        pending = {s.probe: s for s in self._slots.values() if s.probe is not None}
        if not pending:
            return
        ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=timeout_s)
        for ref in ready:
            slot = pending[ref]
            slot.probe = None
            try:
                answer = ray.get(ref)
            except Exception as exc:  # the actor could not start there: Ray's reason
                self._refuse(slot, _line(exc))
                continue
            refused = answer["refused"] or version_refusal(self._identity, answer)
            if refused:
                self._refuse(slot, refused)
                continue
            slot.machine = answer["machine"]
            self._say(f"lab node {slot.machine['machine']} ({slot.node.ip}) joined")

    def _refuse(self, slot: _Slot, why: str) -> None:
        import ray

        slot.dead = True
        self._refused[slot.node.node_id] = why
        self._say(f"lab node {slot.node.ip} {slot.node.node_id[:12]} refused: {why}")
        ray.kill(slot.actor)

    def _close_actor(self, slot: _Slot) -> None:
        import ray

        if not slot.dead and slot.probe is None:
            try:
                ray.get(slot.actor.close.remote(), timeout=STOP_S)
            except Exception as exc:  # dead already, or stuck: its node's `h2lab clean`
                self._say(f"lab node {slot.node.ip}: lab not torn down ({_line(exc)})")
        ray.kill(slot.actor)

    def _kill_late(self) -> None:
        import ray

        if self._stop_by is None or time.monotonic() < self._stop_by:
            return
        for slot in self._slots.values():
            if slot.job is not None:
                self._say(
                    f"lab node {slot.node.ip}: killed; its lab is left there: run h2lab clean"
                )
                ray.kill(slot.actor)
                slot.job, slot.dead = None, True

    # ------------------------------------------------------------------ blocks

    def _dispatch(self) -> None:
        for slot in self._live():
            if slot.job is not None or not self._queue:
                continue
            job = self._queue.popleft()
            archives = {pid: self._archive(spec, pid) for spec, pid in job.pages.items()}
            slot.job, slot.seen, slot.finished = job, {}, set()
            slot.since = _now()
            slot.generator = slot.actor.run.remote(wire.encode_message(job), archives)
            threading.Thread(target=self._pump, args=(slot, slot.generator), daemon=True).start()

    def _archive(self, spec: str, page_id: str) -> Any:
        import ray

        if page_id not in self._archives:
            page = self._page(spec)
            if page.digest != page_id:
                raise H2LabError(f"page {spec!r} changed during the run ({page_id})")
            self._archives[page_id] = ray.put(transfer.page_archive(page))
        return self._archives[page_id]

    def _page(self, spec: str) -> Page:
        if spec not in self._pages:
            self._pages[spec] = resolve_page(spec)
        return self._pages[spec]

    def _pump(self, slot: _Slot, generator: Any) -> None:
        import ray

        try:
            for ref in generator:
                self._items.put((slot, generator, ray.get(ref)))
        except Exception as exc:
            self._items.put((slot, generator, _End(exc)))
        else:
            self._items.put((slot, generator, _End(None)))

    def _handle(self, slot: _Slot, item: Any) -> Iterator[Event]:
        job = slot.job
        if job is None:
            return
        if isinstance(item, _End):
            yield from self._ended(slot, job, item.error)
            return
        kind, payload, archive = item
        if kind == "block":
            slot.job = slot.generator = None
            yield BlockDone(job.number)
            return
        event = wire.decode_message(payload)
        assert isinstance(event, TrialDone)
        key = event.record.trial_key
        if archive:
            transfer.unpack(archive, artifacts_dir(job.results_dir, key, event.record.attempt))
        slot.seen[key] = slot.seen.get(key, 0) + 1
        if event.last:
            slot.finished.add(key)
        slot.since = _now()
        yield event

    def _ended(self, slot: _Slot, job: BlockJob, error: BaseException | None) -> Iterator[Event]:
        """A block's generator ended without its last item: cancelled (nothing to do), or the
        node raised (:class:`NodeFailed`: it stays), or Ray lost the node or its actor (it gets
        no more blocks): the running attempt is stored failed with the reason, and the rest of
        the block goes first in the queue."""
        slot.job = slot.generator = None
        if self._stop_by is not None:
            return
        if error is None:
            error = H2LabError("the block ended early")
        raised = isinstance(getattr(error, "cause", None), NodeFailed)
        slot.dead = slot.dead or not raised
        what = "could not run this attempt" if raised else "lost during this attempt"
        remaining = [t for t in job.trials if t.key not in slot.finished]
        if not remaining:
            yield BlockDone(job.number)
            return
        t = remaining[0]
        tries = slot.seen.get(t.key, 0) + 1
        attempt = job.attempts.get(t.key, 0) + tries
        machine = slot.machine.get("machine", slot.node.ip)
        record = trial_record(
            t, self._page(t.page), attempt=attempt,
            error=f"lab node {machine} {what}: {_line(error)}",
            started_at=slot.since, duration_s=0.0, versions=slot.machine, cpu_busy_pct=None,
            metrics={},
        )  # fmt: skip
        self._losses[t.key] = self._losses.get(t.key, 0) + 1
        last = self._losses[t.key] >= MAX_LOSSES
        self._say(f"lab node {machine} {what} ({_line(error)}); the rest of its block goes back")
        yield TrialDone(record, (), last)
        attempts = dict(job.attempts)
        for k, n in slot.seen.items():
            attempts[k] = attempts.get(k, 0) + n
        attempts[t.key] = attempt
        rest = remaining[1:] if last else remaining
        if rest:
            kept = {x.key: attempts[x.key] for x in rest if attempts.get(x.key)}
            self._queue.appendleft(dataclasses.replace(job, trials=tuple(rest), attempts=kept))
        else:
            yield BlockDone(job.number)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def _line(exc: BaseException) -> str:
    """One line for a Ray error: a node's own error (the cause of Ray's task error), else
    Ray's first line."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        exc = cause
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
