"""Command wiring only: parse flags, call into the package, print. (typer + rich)

One module per command or group of commands; this one puts them in one ``h2lab`` in the order
``--help`` lists them (a command's module is never shadowed by its function here: the functions
are imported as ``*_command``), and :func:`main` turns errors into one line and an exit code."""

from __future__ import annotations

import sqlite3
import sys

import typer

from h2lab.cli.cluster import cluster_app
from h2lab.cli.common import err
from h2lab.cli.compare import compare as compare_command
from h2lab.cli.doctor import clean
from h2lab.cli.doctor import doctor as doctor_command
from h2lab.cli.load import LoadCommand
from h2lab.cli.load import load as load_command
from h2lab.cli.net import net_app
from h2lab.cli.pages import pages_app
from h2lab.cli.record import record as record_command
from h2lab.cli.report import export, restore
from h2lab.cli.report import report as report_command
from h2lab.cli.run import demo, validate
from h2lab.cli.run import run as run_command
from h2lab.cli.verdict import verdict as verdict_command
from h2lab.errors import H2LabError, OutOfSpace, is_out_of_space

app = typer.Typer(
    name="h2lab",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from h2lab.version import version_line

        print(version_line())
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        help="print h2lab's version and the commit it runs from, and exit",
        callback=_version,
        is_eager=True,
    ),
) -> None:
    """A web-performance lab in one command: h1, h2 and h3 on real servers, real clients and
    an emulated network (Rattan)."""


app.add_typer(net_app, name="net")
app.add_typer(pages_app, name="pages")
app.add_typer(cluster_app, name="cluster")
app.command("run")(run_command)
app.command()(validate)
app.command()(demo)
app.command("verdict")(verdict_command)
app.command("load", cls=LoadCommand)(load_command)
app.command()(export)
app.command()(restore)
app.command("report")(report_command)
app.command("compare")(compare_command)  # after `report` in --help
app.command()(clean)
app.command("doctor")(doctor_command)
app.command("record")(record_command)  # after the others: listed after `doctor` in --help


def _error_line(message: str) -> None:
    """Exactly one line on stderr: rich would wrap it at the console width (80 columns when
    stderr is not a terminal) and replace ``:name:`` emoji codes found in paths."""
    print("h2lab: " + " ".join(message.splitlines()), file=sys.stderr, flush=True)


def main() -> None:
    import signal

    # A shell starts background jobs with SIGINT ignored, and Python keeps an inherited
    # SIG_IGN; h2lab always wants Ctrl-C/SIGINT to mean "tear down and stop".
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        # non-standalone typer returns an exit code instead of exiting (130 for Ctrl-C)
        rc = app(standalone_mode=False)
        if rc == 130:
            err.print("interrupted: stored trials are kept; rerun the same command to resume")
        sys.exit(rc if isinstance(rc, int) else 0)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        err.print("aborted")
        sys.exit(130)
    except typer.TyperException as exc:  # usage errors: unknown flag, bad value, missing argument
        _error_line(exc.format_message())
        sys.exit(2)
    except KeyboardInterrupt:
        err.print("interrupted: stored trials are kept; rerun the same command to resume")
        sys.exit(130)
    except H2LabError as exc:
        _error_line(exc.line())
        sys.exit(exc.exit_code)
    except (OSError, sqlite3.OperationalError) as exc:
        if not is_out_of_space(exc):
            raise
        where = getattr(exc, "filename", None) or "the results folder"
        _error_line(OutOfSpace(where, "writing").line())
        sys.exit(OutOfSpace.exit_code)
