"""What every command shares: the consoles, the progress bar, root or rootless mode."""

from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

console = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True)

CAPTURE_HELP = (
    "record this of every trial besides its measurements: pcap = a packet capture of the "
    "client's side (capture.pcap, at most 64 MiB) with the TLS keys beside it (keylog.txt), "
    "any client; qlog = each h3 trial's qlog files (qlog/), the server's (origin) and the "
    "client's (curl, firefox) (docs/capture.md)"
)


def enter_lab_mode() -> None:
    """Root mode when h2lab runs as root. Otherwise rootless mode (docs/rootless.md): this
    process moves into a user namespace of its own for the lab, or stops (exit 2) with one
    line naming the host's switch that forbids it."""
    if os.geteuid() == 0:
        return
    from h2lab.net import userns
    from h2lab.paths import owners_root, state_root

    userns.require()
    userns.enter([state_root(), owners_root()])
    rmem_max = int(userns.read_sysctl("net.core.rmem_max") or 0)
    if userns.packet_buffer_short(rmem_max):
        note = userns.packet_buffer_note(rmem_max)
        err.print(f"h2lab: rootless mode: {note}", soft_wrap=True, highlight=False)


def progress(eta_field: bool = False) -> Progress:
    """A long job's bar with its ETA: rich's (the speed of the last 30 s: right for a job that
    moves evenly, as fuzzing's seconds), or with ``eta_field`` the task's field ``eta``, which
    its feeder works out (a run's trials, 4-40 s each: rich's read 49 min for two hours)."""
    eta = TextColumn("ETA {task.fields[eta]}") if eta_field else TimeRemainingColumn()
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        *([eta] if eta_field else [TextColumn("ETA"), eta]),
        console=err,
    )
