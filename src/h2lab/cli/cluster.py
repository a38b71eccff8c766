"""``h2lab cluster``: the secrets, the head and the lab nodes of a Ray cluster (docs/cluster.md).

``h2lab run --cluster`` (in cli/run.py) is the driver."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from h2lab.cli.common import console, err
from h2lab.errors import SpecError

cluster_app = typer.Typer(
    help="Run matrices on a Ray cluster: one lab per node (docs/cluster.md).",
    no_args_is_help=True,
)

SECRETS_ENV = "H2LAB_CLUSTER_SECRETS"

Secrets = Annotated[
    Path | None,
    typer.Option(
        "--secrets",
        help=f"the cluster's secrets folder (h2lab cluster secrets); default ${SECRETS_ENV}",
    ),
]
Ip = Annotated[str, typer.Option("--ip", help="this node's address on the cluster's network")]


def secrets_folder(given: Path | None, flag: str = "--secrets") -> Path:
    """The secrets folder named on the command line or by ``$H2LAB_CLUSTER_SECRETS``."""
    folder = given or (Path(os.environ[SECRETS_ENV]) if os.environ.get(SECRETS_ENV) else None)
    if folder is None:
        raise SpecError(
            "command line", flag, f"needed (or ${SECRETS_ENV}): make one with "
            "`h2lab cluster secrets DIR` and copy it to every node",
        )  # fmt: skip
    return folder


def _check_ip(ip: str) -> str:
    import ipaddress

    try:
        ipaddress.ip_address(ip)
    except ValueError as exc:
        raise SpecError("command line", "--ip", f"not an IP address: {ip!r}") from exc
    return ip


@cluster_app.command("secrets")
def secrets_cmd(folder: Annotated[Path, typer.Argument(help="folder to create")]) -> None:
    """Make the cluster's token and CA in FOLDER (kept if there): copy it to every node and to
    the driver's machine, and to no one else."""
    from h2lab.cluster.secrets import make_secrets

    make_secrets(folder)
    console.print(f"cluster secrets in {folder} (token, ca.pem, ca.key)")


@cluster_app.command()
def head(
    ip: Ip,
    port: Annotated[int, typer.Option("--port", help="the head's (GCS) port")] = 6379,
    secrets: Secrets = None,
    temp_dir: Annotated[
        Path | None,
        typer.Option("--temp-dir", help="Ray's session folder (default /tmp/ray; a short path)"),
    ] = None,
) -> None:
    """Start the cluster's head here, in the foreground (no lab: drivers run here). SIGTERM
    stops every process of it; if Ray's processes die it exits 1 with the reason."""
    from h2lab.cluster import nodes
    from h2lab.cluster.secrets import ray_env

    env = ray_env(secrets_folder(secrets), _check_ip(ip))
    folder = temp_dir or Path("/tmp/ray")
    raise typer.Exit(nodes.run_ray(nodes.head_argv(ip, port, temp_dir), env, folder))


@cluster_app.command()
def worker(
    address: Annotated[str, typer.Option("--address", help="the head, HOST:PORT")],
    ip: Ip,
    secrets: Secrets = None,
    temp_dir: Annotated[
        Path | None,
        typer.Option(
            "--temp-dir",
            help="Ray's folder for this node (default: cluster/ray-PID in the lab state folder)",
        ),
    ] = None,
) -> None:
    """Start a lab node here, in the foreground: after its `h2lab doctor` passes (every tool,
    root), it joins ADDRESS offering one lab (the h2lab_lab resource). If Ray's processes die
    it exits 1 with the reason; SIGTERM stops every process of it."""
    from h2lab.cluster import nodes
    from h2lab.cluster.secrets import ray_env

    nodes.head_address(address, "--address")
    refusal = nodes.doctor_refusal()
    if refusal:
        raise nodes.NodeRefused(f"this machine cannot be a lab node: {refusal}")
    folder = temp_dir or nodes.node_temp_dir()
    nodes.check_socket_room(folder)
    env = ray_env(secrets_folder(secrets), _check_ip(ip))
    err.print(f"lab node: doctor ok; joining {address} as {ip}")
    try:
        code = nodes.run_ray(nodes.worker_argv(address, ip, folder), env, folder)
    finally:
        _clean_after_node()
    raise typer.Exit(code)


def _clean_after_node() -> None:
    """What a stopped lab node's actors left (their labs, when Ray killed them mid-block, and
    their folders) and its own Ray folder, as ``h2lab clean`` would remove them. A failure is
    one line on stderr: the node's own exit line comes after it."""
    from h2lab.errors import H2LabError
    from h2lab.net.clean import clean_cluster_folders, clean_stale

    try:
        clean_cluster_folders(ended={os.getpid()})
        clean_stale()
    except (H2LabError, OSError) as exc:
        err.print(f"h2lab cluster: cleaning after the node: {exc}")


@cluster_app.command()
def status(
    address: Annotated[str, typer.Option("--address", help="the head, HOST:PORT or auto")],
    secrets: Secrets = None,
) -> None:
    """List the cluster's live nodes: which offer a lab, and their machines."""
    from h2lab.cluster.executor import connect
    from h2lab.cluster.nodes import LAB_RESOURCE

    connect(address, secrets_folder(secrets))
    import ray

    try:
        for n in ray.nodes():
            if n.get("Alive"):
                lab = n.get("Resources", {}).get(LAB_RESOURCE, 0)
                head = "node:__internal_head__" in n.get("Resources", {})
                kind = "lab" if lab else "head" if head else "node"
                print(f"{kind}\t{n['NodeManagerAddress']}\t{n['NodeID'][:12]}")  # tabs kept
    finally:
        ray.shutdown()
