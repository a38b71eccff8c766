"""``h2lab net``: the emulated network: list profiles, check a link, open a shell."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from h2lab.cli.common import console, enter_lab_mode, err
from h2lab.errors import SpecError

net_app = typer.Typer(help="The emulated network: list profiles, check a link, open a shell.")


@net_app.command("profiles")
def net_profiles() -> None:
    """List the named network profiles with their values and sources."""
    from h2lab.spec.network import parse_network
    from h2lab.spec.presets import PRESETS

    table = Table(title="network profiles")
    for col in ("name", "values", "source"):
        table.add_column(col)
    for name, preset in PRESETS.items():
        table.add_row(name, parse_network(name).describe(), preset.source)
    console.print(table)


@net_app.command("check")
def net_check(
    profile: Annotated[str, typer.Argument(help="profile name or rtt=..,down=..,loss=..")],
    as_json: Annotated[bool, typer.Option("--json", help="print rows as JSON")] = False,
    quick: Annotated[bool, typer.Option(help="fewer samples, shorter flows")] = False,
    seed: Annotated[int, typer.Option(help="loss seed", min=0)] = 1,
    cc: Annotated[str, typer.Option(help="TCP congestion control")] = "cubic",
) -> None:
    """Measure the link for PROFILE and compare with what was asked (exit 1 if a row fails)."""
    from h2lab.net.check import check
    from h2lab.net.lab import Lab
    from h2lab.spec.network import parse_network
    from h2lab.spec.tcp import CONGESTION_CONTROLS, TcpSettings

    network = parse_network(profile, "command line", field="PROFILE")
    if cc not in CONGESTION_CONTROLS:
        raise SpecError(
            "command line", "--cc", f"unknown {cc!r} ({', '.join(CONGESTION_CONTROLS)})"
        )
    enter_lab_mode()
    with Lab(("check.h2lab.test",)) as lab:
        rows = check(lab, network, seed, TcpSettings(cc), quick=quick)
    if as_json:
        print(json.dumps([r.as_dict() for r in rows], indent=1))
    else:
        table = Table(title=f"net check {network.describe()}")
        for col in ("metric", "direction", "asked", "measured", "unit", "tolerance", "pass"):
            table.add_column(col)
        for r in rows:
            verdict = (
                "-" if r.passed is None else ("[green]pass[/]" if r.passed else "[red]FAIL[/]")
            )
            table.add_row(r.metric, r.direction, f"{r.asked:g}" if r.asked is not None else "-",
                          f"{r.measured:g}" if r.measured is not None else "-", r.unit,
                          r.tolerance, verdict)  # fmt: skip
        console.print(table)
    if any(r.passed is False for r in rows):
        raise typer.Exit(1)


@net_app.command("shell")
def net_shell(
    profile: Annotated[str, typer.Argument(help="profile name or rtt=..,down=..,loss=..")],
    seed: Annotated[int, typer.Option(help="loss seed", min=0)] = 1,
) -> None:
    """Open a shell in the client namespace with the link up (like mm-shell); exit to tear down.

    The servers side answers at 10.2.0.1 (name server.h2lab.test); run a server there with
    `ip netns exec <servers namespace> ...` from another terminal.
    """
    import os
    import subprocess

    from h2lab.net.lab import Lab
    from h2lab.net.netns import exec_argv
    from h2lab.spec.network import parse_network
    from h2lab.spec.tcp import TcpSettings

    network = parse_network(profile, "command line", field="PROFILE")
    enter_lab_mode()
    with Lab(("server.h2lab.test",)) as lab, lab.link(network, seed, TcpSettings()) as link:
        err.print(
            f"client namespace {link.client_ns}, servers namespace {lab.servers_ns} "
            f"(server.h2lab.test = {lab.origin_ips['server.h2lab.test']}); link: "
            f"{network.describe()}. Exit the shell to tear down."
        )
        shell = os.environ.get("SHELL", "/bin/bash")
        env = {**os.environ, "H2LAB_NETWORK": network.describe(), "PS1": "[h2lab] \\w$ "}
        subprocess.run(exec_argv(link.client_ns, [shell]), env=env, check=False)
