"""``h2lab compare DIR_A DIR_B``: A/B of two results folders (yesterday's run against today's)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from h2lab.cli.common import console
from h2lab.errors import SpecError

if TYPE_CHECKING:
    from h2lab.report.ab import AbResult


def compare(
    dir_a: Annotated[Path, typer.Argument(help="results folder of run A (the reference)")],
    dir_b: Annotated[Path, typer.Argument(help="results folder of run B (compared with A)")],
    metric: Annotated[
        str | None,
        typer.Option(
            "--metric",
            help="the time metric to compare (e.g. plt_ms, pdt_ms, speed_index_ms, fcp_ms); "
            "default: the report's, plt_ms for browsers and pdt_ms for load clients",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="the HTML page to write (default: DIR_B/compare.html)"),
    ] = None,
) -> None:
    """A/B of two results folders: s = B/A per matched cell, its CI, p, verdict; HTML page.

    Cells are matched by their factors and trials paired by repetition and protocol; per
    cell: the medians of A and B, the median of s = B/A with its bootstrap 95% CI, a
    Wilcoxon signed-rank p and the verdict with the report's thresholds. A factor with no
    level in common (e.g. server origin:scheduler=fcfs in A, origin:scheduler=client in B)
    is what the runs compare: it is printed as "differs" and cells are matched without it.
    Method: docs/statistics.md."""
    from h2lab.report.ab import COMPARE_FILE, compare_folders, write_compare

    page = out if out is not None else dir_b / COMPARE_FILE
    if out is not None and not out.parent.is_dir():
        raise SpecError("command line", "--out", f"no such folder: {out.parent}")
    result = compare_folders(dir_a, dir_b, metric=metric)
    _print(result)
    print(f"compare: {write_compare(result, page)}")


def _print(result: AbResult) -> None:
    from h2lab.report.ab import (
        METHOD,
        ROW_HEADERS,
        ab_rows,
        common_levels,
        differs_lines,
        row_cells,
    )

    for side, run in (("A", result.a), ("B", result.b)):
        experiments = ", ".join(sorted({t.experiment for t in run.trials}))
        print(f"{side}: {run.dir} (experiment {experiments}, {len(run.trials)} trial attempts)")
    for line in differs_lines(result):
        print(f"differs: {line}")
    rows = ab_rows(result.comparison)
    print(f"cells: {common_levels(rows)}")
    headers, body = row_cells(rows, compact=True)
    table = Table(title="B against A, per cell: s = B/A")
    n_factors = len(headers) - len(ROW_HEADERS)
    for i, head in enumerate(headers):
        numeric = i >= len(headers) - 6 and i != len(headers) - 1
        # factor levels fold (a page's path is long); the figures stay on one line
        table.add_column(
            head, justify="right" if numeric else "left", overflow="fold", no_wrap=i >= n_factors
        )
    for cells in body:
        table.add_row(*(Text(c) for c in cells))
    console.print(table)
    console.print(Text(METHOD))
