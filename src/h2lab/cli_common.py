"""What every command shares: the consoles, the progress bar, the root check."""

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

from h2lab.errors import H2LabError

console = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True)


def require_root() -> None:
    if os.geteuid() != 0:
        raise H2LabError("h2lab needs root for network namespaces (run it with sudo)")


def progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=err,
    )
