"""docs/reference.md, generated from the definitions in the code: the commands and their flags
(the CLI's own parameters), the exit codes (:data:`h2lab.errors.EXIT_CODES`), the experiment
file's keys (:data:`h2lab.spec.experiment.KEY_DOCS` and its tables), the factors
(:data:`h2lab.spec.factors.FACTORS`), the metrics (:data:`h2lab.results.METRICS`) and every
server's and client's options (declared where each registers).

    .venv/bin/python -m h2lab.reference > docs/reference.md     (make reference)

tests/unit/test_reference.py fails when the file differs from what this writes, and when
:func:`missing_entries` finds something without its description."""

from __future__ import annotations

import ast
import inspect
import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import typer

from h2lab import clients, results, servers
from h2lab.clients.browser.client import BrowserClient
from h2lab.errors import EXIT_CODES
from h2lab.results import METRICS
from h2lab.spec import experiment
from h2lab.spec.factors import FACTORS
from h2lab.spec.options import Option
from h2lab.spec.protocols import PROTOCOLS

HEADER = """# h2lab reference

Generated from the code by `make reference` (`python -m h2lab.reference`): do not edit by
hand; `tests/unit/test_reference.py` fails when this file and the code differ. How to use
these is in README.md and the pages of docs/.
"""


def reported_by() -> dict[str, str]:
    """Who reports each class of metric: the browsers and the other clients as registered."""
    names = clients.names()
    browsers = [n for n in names if isinstance(clients.get(n), BrowserClient)]
    return {
        results.BROWSER: ", ".join(browsers),
        results.CLIENT: "every client",
        results.LAB: "the lab (counted on the link or by the servers), every client",
        results.LOAD: ", ".join(n for n in names if n not in browsers),
    }


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("\\[", "[").replace("|", "\\|")


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + " --- |" * len(headers)]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return [*out, ""]


Command = Any
"""a command of typer's own click (``typer._click``, vendored): read by its attributes"""


def _is_group(cmd: Command) -> bool:
    return hasattr(cmd, "commands")


def _root(app: typer.Typer) -> Command:
    root = typer.main.get_command(app)
    assert _is_group(root)
    return root


def walk(group: Command, prefix: str = "h2lab") -> Iterator[tuple[str, Command]]:
    """Every command under ``group`` with its full name, in ``--help``'s order."""
    for name, cmd in group.commands.items():
        if cmd.hidden:
            continue
        full = f"{prefix} {name}"
        if _is_group(cmd):
            yield full, cmd
            yield from walk(cmd, full)
        else:
            yield full, cmd


def _param_row(p: Any, ctx: Any) -> tuple[str, str, str, str]:
    option = p.param_type_name == "option"
    kind = p.metavar or p.display_type(ctx).strip("<>")
    if option:
        names = ", ".join(f"`{o}`" for o in (*p.opts, *p.secondary_opts))
        value = "flag" if p.is_flag else kind
    else:
        names = f"`{(p.name or '').upper()}`"
        value = kind + ("" if p.required else ", optional")
    default = p.default
    shown = "" if default in (None, False, (), []) or callable(default) else f"`{default}`"
    if option and p.multiple:
        value = (value + ", repeatable").strip(", ")
    return names, value, shown, getattr(p, "help", None) or ""


def commands_part(app: typer.Typer) -> list[str]:
    root = _root(app)
    lines = ["## Commands", ""]
    ctx = typer.main.get_command(app).make_context("h2lab", [], resilient_parsing=True)
    lines += _table(
        ("option", "value", "default", "what"), [_param_row(p, ctx) for p in root.params]
    )
    for full, cmd in walk(root):
        lines += [f"### `{full}`", "", _cell(cmd.help or ""), ""]
        if _is_group(cmd):
            subs = ", ".join(f"`{full} {n}`" for n in cmd.commands)
            lines += [f"Commands: {subs}.", ""]
            continue
        params = cmd.get_params(ctx)  # as --help shows them (h2lab load lists the registries)
        rows = [_param_row(p, ctx) for p in params if p.name != "help" and not p.hidden]
        lines += _table(("argument or option", "value", "default", "what"), rows) if rows else []
    return lines


def exit_codes_part() -> list[str]:
    rows = [(f"`{code}`", what) for code, what in sorted(EXIT_CODES.items())]
    return ["## Exit codes", "", *_table(("code", "meaning"), rows)]


def experiment_part() -> list[str]:
    top = [(f"`{k}`", kind, doc) for k, (kind, doc) in experiment.KEY_DOCS.items()]
    compare = [(f"`{k}`", doc) for k, doc in experiment.COMPARE_DOCS.items()]
    quick = [(f"`{k}`", doc) for k, doc in experiment.QUICK_DOCS.items()]
    factors = []
    for f in FACTORS:
        default = "required" if f.default is None else f"`{f.stored(f.default)}`"
        where = "yes" if f.comparable else "no"
        factors.append((f"`{f.name}`", f.kind.__name__, default, where, f"`{f.column}`", f.doc))
    return [
        "## Experiment files",
        "",
        "Top-level keys:",
        "",
        *_table(("key", "value", "what"), top),
        "`[compare]`:",
        "",
        *_table(("key", "what"), compare),
        "`[quick]`:",
        "",
        *_table(("key", "what"), quick),
        "### Factors",
        "",
        "Keys of `[factors]` (`protocol`, required, is what a block pairs: "
        f"{', '.join(f'`{p}`' for p in PROTOCOLS)}), each a list of levels:",
        "",
        *_table(
            ("factor", "level", "default", "[compare], --only", "store column", "what"), factors
        ),
    ]


def metric_docs() -> dict[str, str]:
    """The attribute docstrings of :class:`h2lab.results.Metrics`, by field."""
    tree = ast.parse(inspect.getsource(results.Metrics))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs: dict[str, str] = {}
    for stmt, nxt in itertools.pairwise(body):
        named = isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
        if named and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant):
            docs[stmt.target.id] = str(nxt.value.value)
    return docs


def metrics_part() -> list[str]:
    docs = metric_docs()
    by = reported_by()
    rows = [
        (f"`{m.name}`", m.unit, m.title, m.only or by[m.reported_by], docs.get(m.name, ""))
        for m in METRICS
    ]
    return ["## Metrics", "", *_table(("metric", "unit", "title", "reported by", "what"), rows)]


def _options_rows(name: str, docs: Sequence[Option]) -> list[str]:
    if not docs:
        return ["No options.", ""]
    rows = [(f"`{d.key}`", f"`{d.values}`", d.doc, f"`{name}:{d.example}`") for d in docs]
    return _table(("option", "values", "what", "example"), rows)


def adapters_part() -> list[str]:
    lines = ["## Servers and clients", "", "Options follow the name: `name:key=value,...`.", ""]
    for title, registry in (("Servers", servers), ("Clients", clients)):
        lines += [f"### {title}", ""]
        for name in registry.names():
            lines += [f"#### `{name}`", "", *_options_rows(name, registry.options_of(name))]
    return lines


def reference() -> str:
    from h2lab.cli import app

    parts = [
        HEADER,
        *commands_part(app),
        *exit_codes_part(),
        *experiment_part(),
        *metrics_part(),
        *adapters_part(),
    ]
    return "\n".join(parts).rstrip("\n") + "\n"


def missing_entries(app: typer.Typer | None = None) -> list[str]:
    """What lacks its description: a command or flag without help, a factor without its doc,
    a metric without its title. (Experiment-file keys and adapter options cannot: validation
    accepts exactly :data:`~h2lab.spec.experiment.KEY_DOCS`' keys, and the registries refuse
    an option not declared.)"""
    if app is None:
        from h2lab.cli import app as h2lab_app

        app = h2lab_app
    root = _root(app)
    out = []
    for full, cmd in walk(root):
        if not (cmd.help or "").strip():
            out.append(f"command {full}: no help")
        for p in cmd.params:
            if p.name != "help" and not (getattr(p, "help", None) or "").strip():
                out.append(f"command {full}: {p.name}: no help")
    out += [f"factor {f.name}: no doc" for f in FACTORS if not f.doc.strip()]
    out += [f"metric {m.name}: no title" for m in METRICS if not m.title.strip()]
    return out


if __name__ == "__main__":
    print(reference(), end="")
