"""``h2lab verdict PAGE --out DIR``: is h2 (or h3) faster for my page, on my users' networks?

One command from a page to a verdict: it writes the experiment file (``DIR/verdict.toml``: the
page over h1s, h2s and h3 from the Go origin, on a few networks, in Chromium and Firefox, each
default a flag away), runs it like ``h2lab run`` (resumable: the same command again skips what
is stored), prints the paired ratios with their confidence intervals and verdicts per network
and browser, and writes the report."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from h2lab.cli.common import console
from h2lab.errors import SpecError

if TYPE_CHECKING:
    from h2lab.analysis.verdict import Verdict

VERDICT_FILE = "verdict.toml"
NETWORKS = ("cable", "lte", "3g")
"""WebPageTest's cable, LTE and 3G (``h2lab net profiles``): a fixed line, a good phone and a
poor one."""
CLIENTS = ("chromium", "firefox")
PROTOCOLS = "h1s,h2s,h3"
REPETITIONS = 5
METRIC = "plt_ms"


def experiment_text(
    page: str,
    networks: list[str],
    clients: list[str],
    protocols: list[str],
    server: str,
    repetitions: int,
    seed: int,
) -> str:
    """The experiment file ``verdict`` runs (TOML), pages as given but a relative file made
    absolute against the working directory."""
    from h2lab.spec.factors import IMPORT_KINDS

    kind, sep, rest = page.partition(":")
    if sep and kind in IMPORT_KINDS and not Path(rest.split("#", 1)[0]).is_absolute():
        page = f"{kind}:{Path(rest).absolute()}"

    def toml_list(values: list[str]) -> str:
        return "[" + ", ".join(_quoted(v) for v in values) + "]"

    return "\n".join(
        [
            "# written by `h2lab verdict`; `h2lab run` this file into the same folder to resume",
            'name = "verdict"',
            f"seed = {seed}",
            f"repetitions = {repetitions}",
            "timeout_s = 120",
            "retries = 1",
            "",
            "[factors]",
            f"protocol = {toml_list(protocols)}",
            f"network = {toml_list(networks)}",
            f"page = {toml_list([page])}",
            f"server = {toml_list([server])}",
            f"client = {toml_list(clients)}",
            "",
        ]
    )


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def verdict(
    page: Annotated[
        str,
        typer.Argument(
            help="your page: warc:FILE, har:FILE, dir:FOLDER#ENTRY, or the id `h2lab record` "
            "or `h2lab pages import` printed"
        ),
    ],
    out: Annotated[Path, typer.Option("--out", help="results folder (resumes if it exists)")],
    network: Annotated[
        list[str] | None,
        typer.Option(
            "--network", help=f"a network (repeat the flag); default {', '.join(NETWORKS)}"
        ),
    ] = None,
    client: Annotated[
        list[str] | None,
        typer.Option("--client", help=f"a browser (repeat the flag); default {', '.join(CLIENTS)}"),
    ] = None,
    protocol: Annotated[
        str, typer.Option("--protocol", help="the protocols compared, comma list")
    ] = PROTOCOLS,
    server: Annotated[
        str, typer.Option("--server", help="the server replaying the page (any that does h3)")
    ] = "origin",
    repetitions: Annotated[
        int, typer.Option("--repetitions", min=2, max=100, help="blocks per network and browser")
    ] = REPETITIONS,
    seed: Annotated[int, typer.Option("--seed", min=0, help="the experiment's seed")] = 0,
) -> None:
    """Is h2 or h3 faster for my page? Run it over h1s, h2s and h3 and print the verdicts.

    Writes OUT/verdict.toml (an experiment file: `h2lab run` it to go on, or edit it), runs
    it, prints per network and browser the paired ratio of plt_ms (h2s/h1s, h3/h2s) with its
    95% CI and the verdict, and writes OUT/report.html. The same command again resumes."""
    from h2lab.cli.run import run_experiment
    from h2lab.report import write_report
    from h2lab.runner.levels import load_experiment

    protocols = [p.strip() for p in protocol.split(",") if p.strip()]
    text = experiment_text(
        page, network or list(NETWORKS), client or list(CLIENTS), protocols, server,
        repetitions, seed,
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:  # checked before anything is written to OUT
        trial_file = Path(tmp) / VERDICT_FILE
        trial_file.write_text(text)
        try:
            load_experiment(trial_file)
        except SpecError as exc:
            raise SpecError("command line", _flag_of(exc.field), exc.reason) from None
    out.mkdir(parents=True, exist_ok=True)
    path = out / VERDICT_FILE
    path.write_text(text)
    run_experiment(path, load_experiment(path), out)
    console.print(verdict_table(out))
    print(f"report: {write_report(out)}")


def _flag_of(field: str) -> str:
    """``factors.network[1]`` -> ``--network``: the flag that gave the bad level."""
    name = field.removeprefix("factors.").split("[", 1)[0]
    return "PAGE" if name == "page" else "--" + name.replace("_", "-")


def verdict_rows(out: Path) -> list[Verdict]:
    """The verdicts of ``out``'s trials on plt_ms, every pair of :data:`PAIRS`."""
    import numpy as np

    from h2lab.analysis.verdict import analyze
    from h2lab.store import Store

    store = Store(out)
    try:
        trials = store.trials()
    finally:
        store.close()
    return list(analyze(trials, np.random.default_rng(0), metric=METRIC).verdicts)


def verdict_table(out: Path) -> Table:
    from h2lab.analysis.verdict import outcome_text

    table = Table(title=f"{METRIC}: newer / older protocol per block, median [95% CI] ({out})")
    for head in ("network", "client", "pair", "older ms", "newer ms", "s [95% CI]", "n", "verdict"):
        table.add_column(head, justify="right" if head.endswith(("ms", "n")) else "left")
    for v in verdict_rows(out):
        r = v.ratio
        ci = "–" if r.median_ratio is None else (
            f"{r.median_ratio:.3f} [{r.ci_low_ratio:.3f}, {r.ci_high_ratio:.3f}]"
        )  # fmt: skip
        table.add_row(
            v.cell.text("network"), v.cell.text("client"), f"{r.h2_protocol}/{r.h1_protocol}",
            _ms(v.h1.median_ms), _ms(v.h2.median_ms), ci, str(r.n_blocks),
            outcome_text(v.outcome, r.h2_protocol, r.h1_protocol),
        )  # fmt: skip
    return table


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}"
