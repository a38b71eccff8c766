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
    from h2lab.analysis.ab import RunComparison
    from h2lab.analysis.budget import Budget, BudgetResult
    from h2lab.report.ab import AbResult


def compare(
    dir_a: Annotated[Path, typer.Argument(help="results folder of run A (the reference)")],
    dir_b: Annotated[Path, typer.Argument(help="results folder of run B (compared with A)")],
    metric: Annotated[
        str | None,
        typer.Option(
            "--metric",
            help="the time metric to compare (e.g. plt_ms, pdt_ms, speed_index_ms, fcp_ms, "
            "journey_ms, or a journey's step after its first: step:NAME for its duration, "
            "step:NAME/FIELD for ttfb_ms, fcp_ms, lcp_ms, load_ms or interaction_ms); default: "
            "the report's, plt_ms for browsers and pdt_ms for load clients",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="the HTML page to write (default: DIR_B/compare.html)"),
    ] = None,
    budget: Annotated[
        list[str] | None,
        typer.Option(
            "--budget",
            metavar="METRIC[:PROTOCOL]:PCT%",
            help="fail (exit 1) when B is slower than A by more than PCT% in a cell, the whole "
            "95% CI beyond it, e.g. plt_ms:h2s:5%, or a journey's step, step:login:h2s:10% "
            "(repeat the flag for more budgets)",
        ),
    ] = None,
) -> None:
    """A/B of two results folders: s = B/A per matched cell, its CI, p, verdict; HTML page.

    Cells are matched by their factors and trials paired by repetition and protocol; per
    cell: the medians of A and B, the median of s = B/A with its bootstrap 95% CI, a
    Wilcoxon signed-rank p and the verdict with the report's thresholds. A factor with no
    level in common (e.g. server origin:scheduler=fcfs in A, origin:scheduler=client in B)
    is what the runs compare: it is printed as "differs" and cells are matched without it.
    Method: docs/statistics.md.

    Journeys: every step after the first both runs have is compared too, on its duration
    (a second table, and a section of the page).

    With --budget (CI): exits 1 when a budget is broken, naming the cells; 0 when every
    budget holds."""
    from h2lab.analysis.budget import parse_budget
    from h2lab.report.ab import COMPARE_FILE, TIME_METRICS, compare_folders, write_compare

    budgets = [parse_budget(text, TIME_METRICS) for text in budget or []]
    page = out if out is not None else dir_b / COMPARE_FILE
    if out is not None and not out.parent.is_dir():
        raise SpecError("command line", "--out", f"no such folder: {out.parent}")
    result = compare_folders(dir_a, dir_b, metric=metric)
    broken = _judge_budgets(budgets, result, dir_a, dir_b) if budgets else []
    _print(result)
    print(f"compare: {write_compare(result, page)}")
    for line in broken:
        print(line)
    if any(line.startswith("budget broken") for line in broken):
        raise typer.Exit(1)


def _judge_budgets(budgets: list[Budget], result: AbResult, dir_a: Path, dir_b: Path) -> list[str]:
    """The budgets' lines (:mod:`h2lab.analysis.budget`), each metric compared once;
    :class:`SpecError` for a budget no cell of both runs can judge."""
    from h2lab.analysis.budget import judge
    from h2lab.report.ab import compare_folders

    by_metric = {result.comparison.cells[0].metric: result}
    lines = []
    for b in budgets:
        if b.metric not in by_metric:
            by_metric[b.metric] = compare_folders(dir_a, dir_b, metric=b.metric, flag="--budget")
        judged = judge(b, by_metric[b.metric].comparison.cells)
        if not judged.judged and not judged.not_judged:
            what = f"{b.protocol}'s " if b.protocol else ""
            raise SpecError("command line", "--budget", f"{b.text!r}: no cell of both runs has "
                            f"{what}{b.metric}")  # fmt: skip
        lines += _budget_lines(judged, by_metric[b.metric])
    return lines


def _budget_lines(judged: BudgetResult, result: AbResult) -> list[str]:
    from h2lab.report.ab import ab_rows, cell_ratio_text, varying_factors
    from h2lab.spec.factors import FACTORS

    b, n = judged.budget, len(judged.judged)
    skipped = f"; {judged.not_judged} not judged: too few pairs" if judged.not_judged else ""
    if not judged.broken:
        return [f"budget kept: {b.text} in {n} cells{skipped}"]
    rows = ab_rows(result.comparison)
    varying = varying_factors(rows)
    where = {id(c): row for c, row in zip(result.comparison.cells, rows, strict=True)}
    lines = [
        f"budget broken: {b.text} in {len(judged.broken)} of {n} cells (B slower than A by more "
        f"than {b.slower_pct:g}%: the whole 95% CI of s = B/A above {b.limit_ratio:.3f}){skipped}"
    ]
    for c in judged.broken:
        row = where[id(c)]
        cell = " | ".join(f"{FACTORS[i].name} {row.factors[i]}" for i in varying) or "the one cell"
        lines.append(f"  {cell} | {c.protocol}: s = {cell_ratio_text(c)}")
    return lines


def _print(result: AbResult) -> None:
    from h2lab.report.ab import METHOD, ab_rows, common_levels, differs_lines

    for side, run in (("A", result.a), ("B", result.b)):
        experiments = ", ".join(sorted({t.experiment for t in run.trials}))
        print(f"{side}: {run.dir} (experiment {experiments}, {len(run.trials)} trial attempts)")
    for line in differs_lines(result):
        print(f"differs: {line}")
    print(f"cells: {common_levels(ab_rows(result.comparison))}")
    _print_table(result.comparison, "B against A, per cell: s = B/A")
    if result.by_step is not None:
        _print_table(result.by_step, "B against A, step by step (its duration): s = B/A")
    console.print(Text(METHOD))


def _print_table(comparison: RunComparison, title: str) -> None:
    from h2lab.report.ab import ROW_HEADERS, ab_rows, row_cells

    headers, body = row_cells(ab_rows(comparison), compact=True)
    table = Table(title=title)
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
