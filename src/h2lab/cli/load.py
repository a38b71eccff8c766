"""``h2lab load PAGE``: K trials of one cell without an experiment file."""

from __future__ import annotations

import datetime as dt
import inspect
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table
from typer import _click as click
from typer.core import TyperCommand

from h2lab.cli.common import CAPTURE_HELP, console, err
from h2lab.cli.run import run_experiment
from h2lab.errors import SpecError
from h2lab.spec.factors import FACTORS, Factor
from h2lab.spec.limits import DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S

if TYPE_CHECKING:
    from h2lab.results import TrialRecord


def load(
    protocol: Annotated[str, typer.Option(help="h1c, h1p, h1s, h2c, h2s or h3 (comma list ok)")],
    repeat: Annotated[int, typer.Option(help="trials per protocol", min=1, max=1000)] = 1,
    seed: Annotated[int, typer.Option(help="seed of loss pattern and order", min=0)] = 0,
    timeout: Annotated[
        float,
        typer.Option(
            help="seconds a trial may take (an experiment's timeout_s)", min=1, max=MAX_TIMEOUT_S
        ),
    ] = DEFAULT_TIMEOUT_S,
    out: Annotated[Path, typer.Option(help="results folder")] = Path("h2lab-out/load"),
    as_json: Annotated[bool, typer.Option("--json", help="print trial records as JSON")] = False,
    capture: Annotated[
        list[str] | None, typer.Option("--capture", metavar="pcap|qlog", help=CAPTURE_HELP)
    ] = None,
    **levels: Any,  # one level per factor, by name: its parameters come from _with_factors
) -> None:
    """Run K trials of one cell without an experiment file and print the metrics."""
    from h2lab.runner.levels import check_capture, validate_factors
    from h2lab.spec.experiment import Experiment, parse_capture
    from h2lab.store import Store
    from h2lab.store.sqlite import row_of

    raw: dict[str, Any] = {
        "protocol": [p.strip() for p in protocol.split(",") if p.strip()],
        **{f.name: [levels[f.name]] for f in FACTORS},
    }
    try:
        factors = validate_factors("command line", raw)
    except SpecError as exc:
        if exc.source != "command line":  # a file's own error (a server's conf= fragment)
            raise
        # name the flag, not the factor: "factors.network[0].rate" -> "--network"
        factor = ".".join(re.sub(r"\[\d+\]", "", exc.field).split(".")[:2])
        raise SpecError("command line", _FLAG_FOR.get(factor, exc.field), exc.reason) from exc
    # each `load` is a fresh question: its own experiment name keeps earlier rows apart
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S.%f")
    exp = Experiment(
        name=f"load-{stamp}",
        factors=factors,
        seed=seed,
        repetitions=repeat,
        timeout_s=timeout,
        capture=tuple(
            v for c in capture or [] for v in parse_capture(c, "command line", "--capture")
        ),
    )
    check_capture(exp, "command line", "--capture")
    run_experiment(None, exp, out)
    store = Store(out)
    try:
        rows = store.trials(experiment=exp.name)
    finally:
        store.close()
    if as_json:
        print(json.dumps([row_of(r) for r in rows], indent=1))
        return
    console.print(_load_table(f"{levels['page']} over {levels['network']}", rows))
    for r in rows:
        if r.error:
            err.print(f"[yellow]{r.protocol} r{r.repetition}:[/] {r.error}")


def _factor_parameter(f: Factor) -> inspect.Parameter:
    """``h2lab load``'s parameter for factor ``f``: its argument (``PAGE``) or option
    (:attr:`~h2lab.spec.factors.Factor.option`), its help and default from the definition
    (none: required)."""
    if f.option.isupper():
        spelled: Any = typer.Argument(help=f.usage or f.doc, show_default=False)
    else:
        spelled = typer.Option(f.option, help=f.usage or f.doc)
    return inspect.Parameter(
        f.name,
        inspect.Parameter.KEYWORD_ONLY,
        annotation=Annotated[f.kind, spelled],
        default=inspect.Parameter.empty if f.default is None else f.stored(f.default),
    )


def _with_factors(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` with one parameter per factor (:data:`~h2lab.spec.factors.FACTORS`) in
    place of its ``**levels``, as typer reads a signature: the argument first, the protocol's
    option, the factors' options, then the command's own."""
    own = list(inspect.signature(command, eval_str=True).parameters.values())[:-1]  # no **levels
    factors = [_factor_parameter(f) for f in FACTORS]
    arguments = [p for p in factors if p.name in _ARGUMENTS]
    options = [p for p in factors if p.name not in _ARGUMENTS]
    parameters = [*arguments, own[0], *options, *own[1:]]
    command.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in parameters]
    )
    return command


class LoadCommand(TyperCommand):
    """``h2lab load``: the help of a factor a registry holds (``--server``, ``--client``) starts
    with every adapter registered, read when the help is shown (``--help``, docs/reference.md):
    listing them loads every adapter's module, which no other use of the command line pays."""

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        from h2lab.runner.levels import LISTED

        params = super().get_params(ctx)
        for p in params:
            listed, said = LISTED.get(p.name or ""), getattr(p, "help", None)
            if listed is not None and isinstance(said, str) and not said.startswith(listed()):
                p.help = f"{listed()}; {said}"  # type: ignore[attr-defined]
        return params


_ARGUMENTS = frozenset(f.name for f in FACTORS if f.option.isupper())
_FLAG_FOR = {"factors.protocol": "--protocol", **{f"factors.{f.name}": f.option for f in FACTORS}}
"""A factor's error names the flag that gave its level (``factors.network`` -> ``--network``)."""
load = _with_factors(load)


LOAD_COLUMNS = (
    "protocol",
    "repetition",
    "status",
    "pdt_ms",
    "bytes_down",
    "bytes_up",
    "tcp_connections",
    "retransmits",
    "response_header_bytes",
)
"""`h2lab load`'s table; the browser metrics join it when some trial has them."""


def _load_table(title: str, rows: list[TrialRecord]) -> Table:
    from h2lab.store.sqlite import row_of

    table = Table(title=title)
    cols = list(LOAD_COLUMNS)
    # the page-level metrics only a browser measures, when some trial has them
    cols[3:3] = [m for m in ("plt_ms", "speed_index_ms", "fcp_ms") if any(
        getattr(r, m) is not None for r in rows)]  # fmt: skip
    for c in cols:
        table.add_column(c, justify="right")
    for r in rows:
        d = row_of(r)
        table.add_row(*(f"{d[c]:.1f}" if isinstance(d[c], float) else str(d[c]) for c in cols))
    return table
