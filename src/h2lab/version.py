"""Which h2lab ran: the release (``h2lab.__version__``, bumped with every change users see:
CHANGELOG.md) and the commit of the source tree, recorded with every trial beside the version
and shown in the report's footer and by ``h2lab --version``.

The commit is the environment's ``H2LAB_COMMIT`` when set (the container image is built from a
copy without ``.git``: scripts/build-image.sh passes the checkout's), else ``git rev-parse`` in
the checkout this package runs from, with ``-dirty`` when tracked files differ from it, else
``unknown`` (an installed wheel)."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import h2lab

UNKNOWN = "unknown"


def _git(*args: str) -> str | None:
    import subprocess  # here: the report and the analysis import this module and start nothing

    root = Path(h2lab.__file__).resolve().parent
    try:
        done = subprocess.run(
            ["git", "-c", "safe.directory=*", "-C", str(root), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


@functools.cache
def commit() -> str:
    """The source tree's commit (40 hex digits, ``-dirty`` when tracked files changed), or
    ``unknown``."""
    given = os.environ.get("H2LAB_COMMIT", "").strip()
    if given:
        return given
    head = _git("rev-parse", "--verify", "HEAD")
    if not head:
        return UNKNOWN
    changed = _git("status", "--porcelain", "--untracked-files=no")
    return head + ("-dirty" if changed else "")


def short_commit(full: str | None = None) -> str:
    """12 hex digits (and ``-dirty``) of :func:`commit`, or of ``full``, for pages and lines."""
    value = commit() if full is None else full
    head, dirty, _ = value.partition("-dirty")
    return head[:12] + ("-dirty" if dirty else "") if head != UNKNOWN else UNKNOWN


def version_line() -> str:
    """``h2lab 0.2.0 (commit 0123456789ab)``."""
    return f"h2lab {h2lab.__version__} (commit {short_commit()})"
