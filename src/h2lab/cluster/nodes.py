"""Ray nodes as h2lab starts them, and the driver's view of them.

``h2lab cluster head`` starts the head (GCS; no lab, no CPU for tasks: the driver runs there);
``h2lab cluster worker`` starts a lab node: its ``h2lab doctor`` must pass first (every tool,
root), and only then does it offer the :data:`LAB_RESOURCE` that every block asks for, one
per node, so a node never holds two labs. Both run ``ray start --block`` in the foreground
(under systemd, a pod or a test), watched (:mod:`h2lab.cluster.supervise`), with the secrets'
environment (:func:`h2lab.cluster.secrets.ray_env`), without Ray's dashboard and without
Ray's drain on SIGTERM and its agents' deadline (:data:`NODE_ENV`).

A lab node's Ray folder (sessions, logs, sockets) is its own, in its lab state folder
(:func:`node_temp_dir`): nodes that share a host and a Ray folder name their sockets and logs
``raylet.1``, ``raylet.2``... by looking which exist, and two started at the same moment took
the same name (the second raylet died: ``bind: Address already in use``).
"""

from __future__ import annotations

import ipaddress
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from h2lab.errors import H2LabError, SpecError
from h2lab.paths import cluster_root

LAB_RESOURCE = "h2lab_lab"
"""The custom node resource of a lab node (1 per node); every block's actor asks for 1."""
NAMESPACE = "h2lab"
DEFAULT_PORT = 6379
RAY = Path(sys.executable).parent / "ray"
AGENT_PORTS = ("--dashboard-agent-listen-port=0",)
"""A free port for each node's dashboard agent, rather than Ray's fixed one: nodes may share a
host (a test cluster, or a lab node beside the head)."""
NODE_ENV = {
    "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",
    "RAY_agent_register_timeout_ms": "180000",
}
"""Ray settings of every h2lab node. No drain: Ray 2.60.0 drains a node for up to 30 s on
SIGTERM, for Ray Serve's proxies to let go; h2lab has none, and a head kept its GCS running
> 20 s after SIGTERM. Agents' registration deadline 180 s rather than Ray's 30: a raylet whose
dashboard or runtime-env agent has not registered by then kills itself, and on a busy 2-core
machine (load 8) those Python agents took longer than 30 s to import and start."""
SOCKET_PATH_MAX = 107
"""Bytes of a unix socket's path (``sun_path`` is 108 with its NUL; unix(7))."""
SOCKET_TAIL = len("/session_2026-01-01_00-00-00_000000_4194304/sockets/plasma_store")
"""The longest path Ray puts below its folder for a socket (Ray 2.60.0: its session folder
is named by the head's start time and pid, at most 7 digits)."""


class NodeRefused(H2LabError):
    """This machine cannot be a lab node: why, and what to do."""

    exit_code = 2


def doctor_refusal() -> str | None:
    """Why this machine may not run labs (root, a failing ``h2lab doctor`` check), or None."""
    from h2lab import doctor

    if os.geteuid() != 0:
        return "not root: labs need network namespaces (run h2lab cluster worker as root)"
    failed = [c for c in doctor.checks() if not c.ok]
    if failed:
        return f"h2lab doctor: {failed[0].name} missing ({failed[0].detail})"
    return None


def node_temp_dir(pid: int | None = None) -> Path:
    """This lab node's Ray folder: ``ray-PID`` in :func:`h2lab.paths.cluster_root` (the pid
    of ``h2lab cluster worker``, which owns it; ``h2lab clean`` removes it once that is
    gone: :func:`h2lab.net.clean.clean_cluster_folders`)."""
    return cluster_root() / f"ray-{os.getpid() if pid is None else pid}"


def check_socket_room(temp_dir: Path, flag: str = "--temp-dir") -> None:
    """Ray's sockets below ``temp_dir`` fit :data:`SOCKET_PATH_MAX`; else a :class:`SpecError`
    that says how long it is and what to do."""
    room = SOCKET_PATH_MAX - SOCKET_TAIL
    length = len(os.fsencode(temp_dir.absolute()))
    if length > room:
        raise SpecError(
            "command line", flag, f"Ray's folder {temp_dir} is {length} bytes long; its "
            f"sockets need it at most {room} (a unix socket's path is at most "
            f"{SOCKET_PATH_MAX} bytes): give a shorter --temp-dir or H2LAB_STATE",
        )  # fmt: skip


def head_argv(ip: str, port: int, temp_dir: Path | None = None) -> list[str]:
    """``ray start`` of a head; ``temp_dir``: Ray's folder for the cluster's sessions (default
    /tmp/ray; keep its path short: Ray's sockets live below it)."""
    argv = [str(RAY), "start", "--head", "--block", f"--node-ip-address={ip}", f"--port={port}"]
    argv += ["--num-cpus=0", "--resources={}", "--include-dashboard=false"]
    argv += ["--disable-usage-stats", *AGENT_PORTS]
    return argv + ([f"--temp-dir={temp_dir}"] if temp_dir else [])


def worker_argv(address: str, ip: str, temp_dir: Path | None = None) -> list[str]:
    """``ray start`` of a lab node; ``temp_dir``: its Ray folder (:func:`node_temp_dir`)."""
    argv = [str(RAY), "start", "--block", f"--address={address}", f"--node-ip-address={ip}"]
    argv += ["--num-cpus=1", f"--resources={json.dumps({LAB_RESOURCE: 1})}"]
    return argv + list(AGENT_PORTS) + ([f"--temp-dir={temp_dir}"] if temp_dir else [])


def run_ray(argv: Sequence[str], env: dict[str, str], temp_dir: Path | None) -> int:
    """Run ``ray start --block`` watched (:class:`h2lab.cluster.supervise.Watch`): its exit
    code once stopped, or :class:`~h2lab.cluster.supervise.NodeDied` when its processes die."""
    from h2lab.cluster.supervise import Watch

    def say(line: str) -> None:
        print(f"h2lab cluster: {line}", file=sys.stderr, flush=True)

    sys.stdout.flush()
    sys.stderr.flush()
    return Watch(argv, {**os.environ, **env, **NODE_ENV}, temp_dir, say=say).run()


def split_address(address: str, where: str = "command line") -> tuple[str, int]:
    """``HOST:PORT`` -> its parts; anything else is a :class:`SpecError`."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise SpecError(where, "--cluster", f"expected HOST:PORT, got {address!r}")
    return host, int(port)


def head_address(address: str, flag: str = "--cluster") -> tuple[str, int]:
    """``IP:PORT`` of a head -> its parts; a host name is refused (every certificate names
    its node's address, and so does Ray)."""
    host, port = split_address(address, "command line")
    try:
        ipaddress.ip_address(host)
    except ValueError as exc:
        raise SpecError("command line", flag, f"{host!r}: use the head's IP address") from exc
    return host, port


@dataclass(frozen=True)
class LabNode:
    """A live node that offers a lab."""

    node_id: str
    ip: str


def lab_nodes() -> list[LabNode]:
    """The connected cluster's live nodes offering :data:`LAB_RESOURCE`."""
    import ray

    return [
        LabNode(n["NodeID"], n["NodeManagerAddress"])
        for n in ray.nodes()
        if n.get("Alive") and n.get("Resources", {}).get(LAB_RESOURCE, 0) >= 1
    ]
