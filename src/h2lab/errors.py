"""One error base for h2lab; subclasses carry the data needed to explain themselves.

The CLI turns any :class:`H2LabError` into one line on stderr and an exit code:
input errors (:class:`SpecError`) exit 2, everything else exits 1.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

EXIT_CODES: dict[int, str] = {
    0: "done; `run` and `load` also when some trials failed: each is stored with its reason "
    "and reported",
    1: "a failure h2lab reports in one line: a tool or a lab step failed; `doctor` found "
    "something missing; `net check` failed a row; `pages check` found a problem; `compare "
    "--budget` found a budget broken",
    2: "bad input, before anything runs and with nothing left behind: one line naming the file "
    "(or `command line`) and the field; also a host that forbids what the lab needs",
    130: "interrupted (Ctrl-C, SIGINT): the trials stored so far are kept; the same command "
    "resumes",
}
"""Every exit code of ``h2lab``, for docs/reference.md."""


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


MAX_LINE_CHARS = 1000
"""Longest error line printed: a message quoting a long input is cut in its middle."""


def one_line(text: str) -> str:
    """``text`` with every control character written as an escape (``\\n``, ``\\x00``), at
    most :data:`MAX_LINE_CHARS` long: what an input put into a message can never break the
    line or the terminal, nor bury the message."""
    text = _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)
    if len(text) <= MAX_LINE_CHARS:
        return text
    cut = len(text) - MAX_LINE_CHARS
    half = MAX_LINE_CHARS // 2
    return f"{text[:half]} […{cut} characters…] {text[-half:]}"


class H2LabError(Exception):
    """Base of every error h2lab raises on purpose."""

    exit_code = 1

    def line(self) -> str:
        """The one line the CLI prints (control characters escaped, :func:`one_line`)."""
        return one_line(str(self))


class SpecError(H2LabError):
    """Bad user input: a file, the field inside it, and what was wrong."""

    exit_code = 2

    def __init__(self, source: str | Path, field: str, reason: str) -> None:
        self.source = str(source)
        self.field = field
        self.reason = reason
        super().__init__(f"{self.source}: {field}: {reason}")


class UnitError(ValueError):
    """A value with a unit could not be parsed; wrapped into :class:`SpecError` at the edge."""


def telling_line(output: str) -> str:
    """The line of a program's output most likely to say what went wrong."""
    lines = [ln.strip() for ln in output.strip().splitlines() if ln.strip()]
    for ln in lines:
        if any(w in ln.lower() for w in ("emerg", "error", "fatal", "failed to", "panic")):
            return ln
    return lines[-1] if lines else ""


class ProcessFailed(H2LabError):
    """An external program exited badly."""

    def __init__(self, cmd: Sequence[str], returncode: int | None, stderr_tail: str) -> None:
        self.cmd = list(cmd)
        self.returncode = returncode
        self.stderr_tail = stderr_tail
        super().__init__(f"{self.cmd[0]} exited with {returncode}: {telling_line(stderr_tail)}")


class WaitTimeout(H2LabError):
    """A condition awaited with a deadline did not come true."""

    def __init__(self, what: str, seconds: float) -> None:
        self.what = what
        self.seconds = seconds
        super().__init__(f"timed out after {seconds:.1f} s waiting for {what}")


class HostForbids(H2LabError):
    """The host forbids what rootless mode needs (unprivileged user namespaces): one line
    naming the switch and what to do; nothing was created."""

    exit_code = 2


class MissingTool(H2LabError):
    """A required program is not installed."""

    def __init__(self, tool: str, hint: str) -> None:
        self.tool = tool
        self.hint = hint
        super().__init__(f"{tool} is not installed ({hint})")


class TrialFailed(H2LabError):
    """One trial could not produce a result; the runner records it and goes on."""


NO_SPACE = "No space left on device"
"""``strerror`` of ENOSPC, as an error text carries it."""


class OutOfSpace(H2LabError):
    """The results folder's file system is full: the run stops; what was stored is kept."""

    def __init__(self, folder: str | Path, what: str) -> None:
        self.folder = str(folder)
        super().__init__(
            f"{self.folder}: no space left on device ({what}); the trials stored so far are "
            "kept: free space, then run the same command to resume"
        )


def is_out_of_space(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk is full: ENOSPC or EDQUOT, or SQLite's SQLITE_FULL."""
    import errno
    import sqlite3

    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    if isinstance(exc, sqlite3.OperationalError):
        return getattr(
            exc, "sqlite_errorcode", None
        ) == sqlite3.SQLITE_FULL or "disk is full" in str(exc)
    return False
