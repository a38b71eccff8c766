"""``h2lab export``, ``restore`` and ``report``: what a results folder's store becomes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from h2lab.cli.common import console
from h2lab.errors import SpecError

EXPORT_FORMATS = ("csv", "browsertime")


def export(
    out: Annotated[Path, typer.Argument(help="results folder")],
    csv: Annotated[
        bool,
        typer.Option(
            "--csv", hidden=True, help="what --format csv does (kept for scripts that pass it)"
        ),
    ] = False,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="csv: trials.csv and resources.csv; browsertime: OUT/browsertime/<cell>/"
            "browsertime.json per browser cell and protocol, browsertime's field names",
        ),
    ] = "csv",
) -> None:
    """Export the store of OUT as CSV files beside it, or as browsertime JSON."""
    from h2lab.store import Store

    if fmt not in EXPORT_FORMATS:
        raise SpecError("command line", "--format", f"must be csv or browsertime, got {fmt!r}")
    if not (out / "results.sqlite").exists():
        raise SpecError(str(out), "results.sqlite", "no results store in this folder")
    if fmt == "browsertime":
        from h2lab.report.browsertime import export_browsertime

        for path in export_browsertime(out):
            console.print(str(path))
        return
    store = Store(out)
    try:
        for path in store.export_csv(out):
            console.print(str(path))
    finally:
        store.close()


def restore(out: Annotated[Path, typer.Argument(help="results folder")]) -> None:
    """Rebuild OUT/results.sqlite from OUT/trials.csv and resources.csv (or their .parquet).

    For a results folder kept without its store (reproduction/ keeps only the CSV): after a
    restore, `h2lab run` with the same experiment resumes and skips every trial stored ok."""
    from h2lab.store.restore import restore_store

    done = restore_store(out)
    resources = (
        f"{done.resources} resource rows from {done.resources_from}"
        if done.resources_from
        else "no resources.csv or resources.parquet: restored trials have no per-resource rows"
    )
    console.print(f"restored {done.trials} trial rows into {out / 'results.sqlite'} ({resources})")


def report(
    out: Annotated[Path, typer.Argument(help="results folder")],
    compare: Annotated[
        list[str] | None,
        typer.Option(
            "--compare",
            metavar="FACTOR=BASELINE",
            help="compare every other level of a factor with BASELINE, paired per repetition "
            "(e.g. server=origin:push=none; repeat for more baselines of the same factor); "
            "default: the experiment's [compare]",
        ),
    ] = None,
) -> None:
    """Write OUT/report.html and CSV + Parquet of trials and resources.

    One self-contained file: verdicts with CIs, figures, decision tree, waterfalls,
    filmstrips."""
    from h2lab.report import write_report

    compared = _parse_compare(compare)
    if not (out / "results.sqlite").exists():
        raise SpecError(str(out), "results.sqlite", "no results store in this folder")
    print(f"report: {write_report(out, compare=compared)}")


def _parse_compare(texts: list[str] | None) -> tuple[str, tuple[str, ...]] | None:
    from h2lab.spec.factors import COMPARABLE

    if not texts:
        return None
    factors, baselines = set(), []
    for text in texts:
        factor, sep, baseline = text.partition("=")
        if not sep or factor not in COMPARABLE or not baseline:
            raise SpecError(
                "--compare",
                text,
                f"must be FACTOR=BASELINE with FACTOR one of {', '.join(COMPARABLE)}",
            )
        factors.add(factor)
        baselines.append(baseline)
    if len(factors) > 1:
        raise SpecError("--compare", " ".join(texts), "every --compare must name the same factor")
    return factors.pop(), tuple(baselines)
