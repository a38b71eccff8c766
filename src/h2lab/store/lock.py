"""One run at a time per results folder (issue #44): ``h2lab run`` holds ``OUT/.h2lab-run.lock``
for as long as it runs, and a second run into the same folder is refused at once, before it
writes anything, in one line naming the folder and the process that holds it.

The lock is ``flock(2)`` on that file: the kernel lets it go when the holder ends, however it
ends (``kill -9`` included), so no stale lock is ever left to clear by hand. The file itself
stays (a few bytes: the holder's pid), since removing it would let a run that had opened it
lock a file nobody else sees. The driver alone writes the store, and holds the lock alone:
its file is closed on exec, so the workers of ``--jobs`` (programs of their own) do not keep
it after the driver has gone.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from h2lab.errors import SpecError

RUN_LOCK = ".h2lab-run.lock"


@contextlib.contextmanager
def run_lock(out: Path) -> Iterator[None]:
    """Hold ``out``'s run lock while the body runs (the folder is made if missing); refuse
    (:class:`SpecError`, exit 2) when another process holds it."""
    if out.exists() and not out.is_dir():
        raise SpecError("command line", "--out", f"{out} is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    fd = os.open(out / RUN_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        if not _lock_exclusively(fd):
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            raise SpecError(
                "command line",
                "--out",
                f"{out} is being written by another h2lab run (pid {holder}); wait for it to "
                "end or choose another folder",
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # and with it the lock


READERS_WAIT_S = 1.0
"""How long a run waits for readers' tests of the lock to pass: a reader of the store takes it
shared for two system calls (:func:`h2lab.store.tables.opening`), so a run that meets one must
not be refused as if by another run."""


def _lock_exclusively(fd: int) -> bool:
    """Take the lock on ``fd`` exclusively; False when another run holds it. Held shared (only
    readers testing it, who can take it shared beside each other), it is tried again for up to
    :data:`READERS_WAIT_S`."""
    deadline = time.monotonic() + READERS_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            pass
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # held exclusively: a run
        fcntl.flock(fd, fcntl.LOCK_UN)
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
