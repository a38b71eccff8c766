"""A Ray cluster of h2lab nodes on this machine, for tests and ``bench/cluster.py``: a head and
N lab nodes, each its own ``h2lab cluster`` process (own session) with its own lab state folder
(``H2LAB_STATE``) and page folder (``H2LAB_PAGES``), all at one loopback address (Ray takes
127.0.0.1 for "this machine only" and would announce another address; 127.0.0.2 is loopback
too, and it keeps it).

Ray's folders (the head's and each lab node's, ``--temp-dir``) are in one short temporary
folder of the cluster's (``h2lab-ray-*``), not in the nodes' state folders: those are a test's
folders, too long for Ray's socket paths (:func:`h2lab.cluster.nodes.check_socket_room`). The
cluster removes it when it stops; its nodes get a parent-death signal, so that they stop even
if whoever started them is killed."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType

from h2lab import procs
from h2lab.cluster.supervise import log_level, session_pids
from h2lab.errors import H2LabError

IP = "127.0.0.2"
H2LAB = (sys.executable, "-m", "h2lab")
START_TIMEOUT_S = 90.0
RESTARTS_AT_MOST = 2
STATUS_TIMEOUT_S = 75.0
"""``h2lab cluster status`` waits up to Ray's 60 s for a raylet to join through, then fails."""


START_LOCK = Path("/tmp/h2lab-local-cluster.lock")
"""Held while a local cluster starts its nodes: one cluster of this machine at a time starts
(test lanes side by side each start theirs), since a Ray node's start-up is a burst of CPU
(about 8 s: ``ray start``, the raylet, two Python agents) and raylets died starting at a load of
8."""


@contextlib.contextmanager
def starting_alone() -> Iterator[None]:
    """:data:`START_LOCK`, held (bounded: at most :data:`START_TIMEOUT_S` of waiting)."""
    fd = os.open(START_LOCK, os.O_RDONLY | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    break  # a start-up held longer than that is stuck: start anyway
                time.sleep(0.2)
        yield
    finally:
        os.close(fd)


def _notable(line: str) -> bool:
    """A warning or an error of a Ray log: a raylet's ``[date time W|E|F pid tid]`` line, an
    agent's ``WARNING``/``ERROR`` line or a traceback's last line."""
    level = log_level(line)
    return level in ("W", "E", "F") or any(w in line for w in ("WARNING", "ERROR", "Error"))


class LocalCluster:
    """``with LocalCluster(folder, workers=2) as c:`` then ``h2lab run --cluster c.address
    --cluster-secrets c.secrets``; leaving stops every node (SIGTERM, then SIGKILL)."""

    def __init__(
        self,
        folder: Path,
        *,
        workers: int = 2,
        port: int = 6390,
        head_env: Mapping[str, str] | None = None,
        head_user: str | None = None,
    ) -> None:
        self.folder = folder
        self.secrets = folder / "secrets"
        self.address = f"{IP}:{port}"
        self.port = port
        self.workers = workers
        self.head_env = dict(head_env or {})
        self.head_user = head_user
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.node_ids: dict[str, str] = {}
        """each lab node's Ray node id (12 hex digits, as the ``machine`` column has it)"""
        self.temp_dir = Path(tempfile.mkdtemp(prefix="h2lab-ray-"))
        """Ray's folders: ``head`` and ``nK`` (lab node K) in it; short (its socket paths must
        fit 107 bytes), and the head's own (an unprivileged head cannot write a root-owned
        /tmp/ray)"""
        self.node_env: dict[str, dict[str, str]] = {}
        """more environment for a lab node, by name (``node-K``), set before it starts"""
        self.restarts: Counter[str] = Counter()
        """nodes started again by :meth:`wait_for` (a raylet that died starting), by name"""
        self.head_up = False
        """the head listened and its raylet joined (:meth:`wait_for`)"""
        self.node_ray_dirs = True
        """False: lab nodes started from now on keep their default Ray folder, in their lab
        state folder (as ``h2lab cluster worker`` does unless told; set a short
        ``H2LAB_STATE`` in :attr:`node_env`)"""

    def __enter__(self) -> LocalCluster:
        from h2lab.cluster.secrets import make_secrets

        make_secrets(self.secrets)
        try:
            with starting_alone():
                self.start_head()
                self.wait_for(nodes=1)
                for k in range(1, self.workers + 1):  # one at a time: node-K joins K-th
                    self.start_worker(k)
                    self.wait_for(nodes=1 + k)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def node_dir(self, name: str) -> Path:
        return self.folder / name

    def start_head(self) -> None:
        ray_dir = self.temp_dir / "head"
        ray_dir.mkdir(exist_ok=True)
        argv = [*H2LAB, "cluster", "head", "--ip", IP, "--port", str(self.port)]
        argv += ["--secrets", str(self.secrets), "--temp-dir", str(ray_dir)]
        if self.head_user:
            shutil.chown(self.temp_dir, self.head_user)
            shutil.chown(ray_dir, self.head_user)
            argv = ["runuser", "-u", self.head_user, "--", *argv]
        self._spawn("head", argv, self.head_env)

    def start_worker(self, k: int) -> None:
        name = f"node-{k}"
        env = {
            "H2LAB_STATE": str(self.node_dir(name) / "state"),
            "H2LAB_PAGES": str(self.node_dir(name) / "pages"),
            **self.node_env.get(name, {}),
        }
        argv = [*H2LAB, "cluster", "worker", "--address", self.address, "--ip", IP]
        if self.node_ray_dirs:  # short: 107-byte socket paths
            argv += ["--temp-dir", str(self.temp_dir / f"n{k}")]
        self._spawn(name, [*argv, "--secrets", str(self.secrets)], env)

    def _spawn(self, name: str, argv: list[str], env: Mapping[str, str]) -> None:
        folder = self.node_dir(name)
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / "node.log").open("ab") as log:
            self.procs[name] = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0", **env},
                start_new_session=True,
                preexec_fn=procs.death_signal_setup(signal.SIGTERM),
            )

    def nodes(self) -> list[tuple[str, str]]:
        """(kind, id of 12 hex digits) of each live node the head knows, kind ``head``, ``lab``
        or ``node`` (``h2lab cluster status``); none while no driver can join yet."""
        argv = [*H2LAB, "cluster", "status", "--address", self.address]
        try:
            out = subprocess.run(
                [*argv, "--secrets", str(self.secrets)], capture_output=True, text=True,
                timeout=STATUS_TIMEOUT_S,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return []
        rows = [ln.split("\t") for ln in out.stdout.splitlines()]
        return [(row[0], row[2]) for row in rows if len(row) == 3]

    def lab_nodes(self) -> list[str]:
        """The ids of the live lab nodes the head knows."""
        return [node for kind, node in self.nodes() if kind == "lab"]

    def wait_for(self, nodes: int) -> None:
        """Until the head knows ``nodes`` live nodes (head included); bounded."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            dead = [n for n, p in self.procs.items() if p.poll() is not None]
            if dead and self._restarted(dead[0]):
                continue
            if dead:
                raise H2LabError(f"cluster node {dead[0]} exited: {self._last_words(dead[0])}")
            if nodes == 1 and self._head_listens() and self._head_joined():
                self.head_up = True
                return
            labs = [] if nodes == 1 else self.lab_nodes()
            if nodes > 1 and len(labs) >= nodes - 1:
                new = [n for n in labs if n not in self.node_ids.values()]
                if new:
                    self.node_ids[f"node-{nodes - 1}"] = new[0]
                return
            time.sleep(1)
        raise H2LabError(f"local cluster: {nodes} nodes not up after {START_TIMEOUT_S:g} s")

    def _restarted(self, name: str) -> bool:
        """As a supervisor does (systemd's ``Restart=on-failure``, a pod's restart policy): a
        node, the head or a lab node, whose Ray died under it while starting (``h2lab cluster``
        exits 1 saying so) before it joined is started again, at most
        :data:`RESTARTS_AT_MOST` times, with a line on stderr. Any other exit (a refusal, a bad
        argument) is the caller's. (A head's raylet died starting beside four test lanes in
        CI: its process group, GCS included, is gone with it, so its port is free again.)"""
        log = self.node_dir(name) / "node.log"
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
        died = bool(tail) and tail[0].startswith("h2lab: Ray's raylet")
        # a joined node's id is known (another start would change it); a head that is up has
        # drivers and lab nodes that know its session
        joined = self.head_up if name == "head" else name in self.node_ids
        if joined or not died or self.restarts[name] >= RESTARTS_AT_MOST:
            return False
        self.restarts[name] += 1
        print(f"local cluster: {name} started again: {tail[0]}", file=sys.stderr, flush=True)
        if name == "head":
            self.start_head()
        else:
            self.start_worker(int(name.removeprefix("node-")))
        return True

    def _last_words(self, name: str) -> str:
        """The end of a dead node's log, and the last warnings and errors of its raylet and of
        the raylet's two agents (whose death the raylet shares)."""
        log = self.node_dir(name) / "node.log"
        said = log.read_text()[-2000:] if log.exists() else "(no log)"
        ray_dir = self.temp_dir / ("head" if name == "head" else f"n{name.removeprefix('node-')}")
        logs = ray_dir / "session_latest" / "logs"
        for file in ("raylet.out", "dashboard_agent.log", "runtime_env_agent.log"):
            if (logs / file).exists():
                lines = (logs / file).read_text(errors="replace").splitlines()
                notable = [ln for ln in lines if _notable(ln)]
                said += f"\n{file}, its last warnings and errors:\n" + "\n".join(notable[-6:])
        return said

    def _head_joined(self) -> bool:
        """Whether the head's own raylet is a live node: a driver needs it (Ray joins a driver
        through a raylet on its machine) and, on a busy machine, it registered more than a
        minute after the head's port listened: a driver that came sooner waited Ray's 60 s
        and failed ("Failed to connect to Ray cluster")."""
        return any(kind == "head" for kind, _ in self.nodes())

    def _head_listens(self) -> bool:
        try:
            socket.create_connection((IP, self.port), timeout=1).close()
        except OSError:
            return False
        return True

    def kill_node(self, name: str) -> None:
        """kill -9 of every process of node ``name`` (its ``h2lab cluster``, ``ray start`` and
        what it started: its session)."""
        proc = self.procs[name]
        self._kill_session(proc.pid)
        proc.wait()

    @staticmethod
    def _kill_session(sid: int) -> None:
        for _ in range(3):  # a process forking while it is listed: list again
            pids = session_pids(sid)
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        for proc in self.procs.values():  # what a node left in its session
            self._kill_session(proc.pid)
        shutil.rmtree(self.temp_dir, ignore_errors=True)
