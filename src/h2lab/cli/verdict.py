"""``h2lab verdict PAGE --out DIR``: is h2 (or h3) faster for my page, on my users' networks?

One command from a page to a verdict: it writes the experiment file (``DIR/verdict.toml``: the
page over h1s, h2s and h3 from the Go origin, on a few networks, in Chromium and Firefox, each
default a flag away), runs it like ``h2lab run`` (resumable: the same command again skips what
is stored), prints the paired ratios with their confidence intervals and verdicts per network
and browser, and writes the report.

h3's figure is what a visitor gets by default: a first visit as deployed, where the browser
learns h3 from the server's ``Alt-Svc`` header (``discovery = "alt-svc"``), so the page starts
over TCP. ``--https-rr`` adds the first visit to a site that also publishes an HTTPS DNS record
(h3 from the first request, every name looked up across the link), ``--forced`` the lab's upper
bound (every origin over h3 from the first request, no lookup) and ``--repeat`` a repeat visit
(h3 known, TLS tickets kept: Chromium's repeat view), each in a factor table of its own, and
every row of the table says which visit it is (:func:`visit`)."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from h2lab.cli.common import console
from h2lab.errors import SpecError

if TYPE_CHECKING:
    from h2lab.analysis.verdict import Verdict
    from h2lab.spec.factors import Cell

VERDICT_FILE = "verdict.toml"
NETWORKS = ("cable", "lte", "3g")
"""WebPageTest's cable, LTE and 3G (``h2lab net profiles``): a fixed line, a good phone and a
poor one."""
CLIENTS = ("chromium", "firefox")
PROTOCOLS = "h1s,h2s,h3"
REPETITIONS = 5
METRIC = "plt_ms"
FIRST_VISIT = "first visit (h3 from Alt-Svc)"
FIRST_VISIT_DNS = "first visit (h3 from an HTTPS record)"
UPPER_BOUND = "upper bound (h3 forced)"
REPEAT_VISIT = "repeat visit"
VISITS = (FIRST_VISIT, FIRST_VISIT_DNS, UPPER_BOUND, REPEAT_VISIT)
"""The rows' visits, in the table's order: what a visitor gets first."""


def experiment_text(
    page: str,
    networks: list[str],
    clients: list[str],
    protocols: list[str],
    server: str,
    repetitions: int,
    seed: int,
    forced: bool = False,
    repeat: list[str] | None = None,
    https_rr: bool = False,
) -> str:
    """The experiment file ``verdict`` runs (TOML), pages as given but a relative file made
    absolute against the working directory. Its first table is the first visit as deployed
    (h3, when compared, learnt from Alt-Svc); ``https_rr`` adds h2s and h3 with h3 learnt from
    an HTTPS record, ``forced`` h2s and h3 with h3 forced, and ``repeat`` (clients) h2s and h3
    in a repeat view (h3 known from the first visit)."""
    from h2lab.spec.factors import ALT_SVC, HTTPS_RR, IMPORT_KINDS, REPEAT

    kind, sep, rest = page.partition(":")
    if sep and kind in IMPORT_KINDS and not Path(rest.split("#", 1)[0]).is_absolute():
        page = f"{kind}:{Path(rest).absolute()}"

    def toml_list(values: list[str]) -> str:
        return "[" + ", ".join(_quoted(v) for v in values) + "]"

    def table(protocols: list[str], clients: list[str], **more: str) -> list[str]:
        return [
            "[[factors]]",
            f"protocol = {toml_list(protocols)}",
            f"network = {toml_list(networks)}",
            f"page = {toml_list([page])}",
            f"server = {toml_list([server])}",
            f"client = {toml_list(clients)}",
            *(f"{k} = {toml_list([v])}" for k, v in more.items()),
            "",
        ]

    h3 = "h3" in protocols
    tables = table(protocols, clients, **({"discovery": ALT_SVC} if h3 else {}))
    if https_rr and h3:
        tables += table(["h2s", "h3"], clients, discovery=HTTPS_RR)
    if forced and h3:
        tables += table(["h2s", "h3"], clients)
    if repeat:
        tables += table([p for p in ("h2s", "h3") if p in protocols], repeat, view=REPEAT)
    return "\n".join(
        [
            "# written by `h2lab verdict`; `h2lab run` this file into the same folder to resume",
            'name = "verdict"',
            f"seed = {seed}",
            f"repetitions = {repetitions}",
            "timeout_s = 120",
            "retries = 1",
            "",
            *tables,
        ]
    )


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


ForcedFlag = Annotated[
    bool,
    typer.Option(
        "--forced",
        help="also the lab's upper bound: h3 forced on every origin from the first request "
        "(h2s and h3 again)",
    ),
]
HttpsRrFlag = Annotated[
    bool,
    typer.Option(
        "--https-rr",
        help="also a first visit to a site that publishes an HTTPS DNS record: h3 from the "
        "first request, each name looked up across the link (h2s and h3 again)",
    ),
]
RepeatFlag = Annotated[
    bool,
    typer.Option(
        "--repeat",
        help="also a repeat visit: the page again with h3 known and TLS tickets kept (h2s and "
        "h3 in the browsers that have a repeat view: chromium)",
    ),
]


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
    forced: ForcedFlag = False,
    https_rr: HttpsRrFlag = False,
    repeat: RepeatFlag = False,
) -> None:
    """Is h2 or h3 faster for my page? Run it over h1s, h2s and h3 and print the verdicts.

    Writes OUT/verdict.toml (an experiment file: `h2lab run` it to go on, or edit it), runs
    it, prints per network and browser the paired ratio of plt_ms (h2s/h1s, h3/h2s) with its
    95% CI and the verdict, and writes OUT/report.html. The same command again resumes.

    h3 is measured as a first visit gets it as deployed: learnt from the server's Alt-Svc
    header, so the page starts over h2. --https-rr adds a first visit with h3 from an HTTPS
    DNS record, --forced the lab's upper bound and --repeat a repeat visit; each row says
    which visit it is."""
    from h2lab.cli.run import run_experiment
    from h2lab.report import write_report
    from h2lab.runner.levels import load_experiment

    protocols = [p.strip() for p in protocol.split(",") if p.strip()]
    clients = client or list(CLIENTS)
    text = experiment_text(
        page, network or list(NETWORKS), clients, protocols, server, repetitions, seed,
        forced, _repeating(clients) if repeat else None, https_rr,
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


def _repeating(clients: list[str]) -> list[str]:
    """The clients that have a repeat view; :class:`SpecError` on ``--repeat`` when none has."""
    from h2lab import clients as registry

    have = [c for c in clients if "repeat" in registry.get(c, "command line", "--client").views]
    if not have:
        raise SpecError(
            "command line", "--repeat", f"no --client has a repeat view ({', '.join(clients)}; "
            "chromium has)",
        )  # fmt: skip
    return have


def _flag_of(field: str) -> str:
    """``factors[1].network[1]`` -> ``--network``: the flag that gave the bad level (a
    discovery the server cannot send: ``--server``)."""
    name = re.sub(r"^factors(\[\d+\])?\.", "", field).split("[", 1)[0]
    flags = {"page": "PAGE", "discovery": "--server", "view": "--repeat"}
    return flags.get(name, "--" + name.replace("_", "-"))


def visit(cell: Cell, pair: tuple[str, str]) -> str:
    """Which visit a verdict row measures: a repeat view, h3 forced (the upper bound), a first
    visit with h3 from an HTTPS record, or a first visit (h3, if any, learnt from Alt-Svc as
    deployed)."""
    from h2lab.spec.factors import FORCED, HTTPS_RR, REPEAT
    from h2lab.spec.protocols import H3

    if cell["view"] == REPEAT:
        return REPEAT_VISIT
    if cell["discovery"] == HTTPS_RR:
        return FIRST_VISIT_DNS
    if H3 in pair and cell["discovery"] == FORCED:
        return UPPER_BOUND
    return FIRST_VISIT


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
    verdicts = analyze(trials, np.random.default_rng(0), metric=METRIC).verdicts

    def order(v: Verdict) -> tuple[str, str, int]:
        pair = (v.ratio.h2_protocol, v.ratio.h1_protocol)
        return (v.cell.text("network"), v.cell.text("client"), VISITS.index(visit(v.cell, pair)))

    return sorted(verdicts, key=order)


def verdict_table(out: Path) -> Table:
    from h2lab.analysis.verdict import outcome_text

    table = Table(title=f"{METRIC}: newer / older protocol per block, median [95% CI] ({out})")
    heads = ("network", "client", "visit", "pair", "older ms", "newer ms", "s [95% CI]", "n",
             "verdict")  # fmt: skip
    for head in heads:
        table.add_column(head, justify="right" if head.endswith(("ms", "n")) else "left")
    for v in verdict_rows(out):
        r = v.ratio
        ci = "–" if r.median_ratio is None else (
            f"{r.median_ratio:.3f} [{r.ci_low_ratio:.3f}, {r.ci_high_ratio:.3f}]"
        )  # fmt: skip
        table.add_row(
            v.cell.text("network"), v.cell.text("client"),
            visit(v.cell, (r.h2_protocol, r.h1_protocol)), f"{r.h2_protocol}/{r.h1_protocol}",
            _ms(v.h1.median_ms), _ms(v.h2.median_ms), ci, str(r.n_blocks),
            outcome_text(v.outcome, r.h2_protocol, r.h1_protocol),
        )  # fmt: skip
    return table


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}"
