"""A log read from a mark on: what a server or the lab's resolver wrote during one trial.
The mark is the log's size before the trial; a log shorter than its mark was started again
(its server restarted), so it is read from its start. What is read is bounded: a log is
outside data."""

from __future__ import annotations

from pathlib import Path

MAX_READ_BYTES = 16 * 1024 * 1024
"""A trial's part of a log read at most (about 100,000 lookups or requests)."""


def size_of(path: Path) -> int | None:
    """Where ``path`` ends now; None when there is no such file."""
    return path.stat().st_size if path.exists() else None


def read_since(path: Path, mark: int, limit: int = MAX_READ_BYTES) -> str:
    """What ``path`` holds past byte ``mark`` (from its start when it is shorter than
    ``mark``), at most ``limit`` bytes, decoded as UTF-8 with replacements."""
    with path.open("rb") as f:
        start = 0 if f.seek(0, 2) < mark else mark
        f.seek(start)
        return f.read(limit).decode(errors="replace")
