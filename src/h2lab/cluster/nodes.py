"""Ray nodes as h2lab starts them, and the driver's view of them.

``h2lab cluster head`` starts the head (GCS; no lab, no CPU for tasks: the driver runs there);
``h2lab cluster worker`` starts a lab node: its ``h2lab doctor`` must pass first (every tool,
root), and only then does it offer the :data:`LAB_RESOURCE` that every block asks for, one
per node, so a node never holds two labs. Both run ``ray start --block`` in the foreground
(under systemd, a pod or a test), with the secrets' environment
(:func:`h2lab.cluster.secrets.ray_env`) and without Ray's dashboard.
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

LAB_RESOURCE = "h2lab_lab"
"""The custom node resource of a lab node (1 per node); every block's actor asks for 1."""
NAMESPACE = "h2lab"
DEFAULT_PORT = 6379
RAY = Path(sys.executable).parent / "ray"
AGENT_PORTS = ("--dashboard-agent-listen-port=0",)
"""A free port for each node's dashboard agent, rather than Ray's fixed one: nodes may share a
host (a test cluster, or a lab node beside the head)."""


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


def head_argv(ip: str, port: int, temp_dir: Path | None = None) -> list[str]:
    """``ray start`` of a head; ``temp_dir``: Ray's folder for the cluster's sessions (default
    /tmp/ray; keep its path short: Ray's sockets live below it)."""
    argv = [str(RAY), "start", "--head", "--block", f"--node-ip-address={ip}", f"--port={port}"]
    argv += ["--num-cpus=0", "--resources={}", "--include-dashboard=false"]
    argv += ["--disable-usage-stats", *AGENT_PORTS]
    return argv + ([f"--temp-dir={temp_dir}"] if temp_dir else [])


def worker_argv(address: str, ip: str) -> list[str]:
    argv = [str(RAY), "start", "--block", f"--address={address}", f"--node-ip-address={ip}"]
    argv += ["--num-cpus=1", f"--resources={json.dumps({LAB_RESOURCE: 1})}"]
    return argv + list(AGENT_PORTS)


def exec_ray(argv: Sequence[str], env: dict[str, str]) -> None:
    """Become ``ray start --block`` (it stops its node's processes when it is stopped)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(argv[0], list(argv), {**os.environ, **env})


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
