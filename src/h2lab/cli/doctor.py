"""``h2lab clean`` and ``doctor``: this machine, what killed instances left on it and what is
installed."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from h2lab.cli.common import console, enter_lab_mode


def clean(
    all_instances: Annotated[
        bool, typer.Option("--all", help="also remove instances whose h2lab is still running")
    ] = False,
) -> None:
    """Remove namespaces, processes and state left by killed h2lab instances, the folders
    of cluster nodes and lab actors that are gone, and the CPU quota groups of killed runs."""
    from h2lab.clients.cpu import remove_left_groups
    from h2lab.net.clean import clean_cluster_folders, clean_stale

    enter_lab_mode()
    folders = clean_cluster_folders()
    removed = clean_stale(include_live=all_instances)
    groups = remove_left_groups()
    console.print(
        f"removed {len(removed)} instance(s)"
        + (f": {' '.join(removed)}" if removed else "")
        + (f"; {len(folders)} cluster folder(s)" if folders else "")
        + (f"; {len(groups)} CPU quota group(s)" if groups else "")
    )


def doctor() -> None:
    """Report what is installed and what is missing, with versions, and Rattan's delay
    overhead measured on this machine."""
    from h2lab.doctor import checks

    table = Table(title="h2lab doctor")
    for col in ("component", "status", "version / detail"):
        table.add_column(col)
    missing = 0
    for c in checks():
        table.add_row(c.name, "[green]ok[/]" if c.ok else "[red]missing[/]", c.detail)
        missing += not c.ok
    console.print(table)
    if missing:
        raise typer.Exit(1)
