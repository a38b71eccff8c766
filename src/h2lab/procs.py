"""Child processes: started in their own session, killed with their group, never orphaned.

Every child gets ``PR_SET_PDEATHSIG = SIGTERM`` so that even a ``kill -9`` of h2lab takes
its servers, clients and Rattan down with it (Rattan then removes its own namespaces).
Children are always spawned from the main thread: the death signal follows the thread
that forked, not the process.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from h2lab.errors import ProcessFailed, WaitTimeout

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def _child_setup(death_signal: int = signal.SIGTERM, file_cap_bytes: int | None = None) -> None:
    _libc.prctl(_PR_SET_PDEATHSIG, death_signal, 0, 0, 0)
    if file_cap_bytes is not None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_cap_bytes, file_cap_bytes))
        # an ignored signal stays ignored across exec: a write past the cap fails (EFBIG)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def death_signal_setup(death_signal: int = signal.SIGTERM) -> Callable[[], None]:
    """A ``preexec_fn`` that gives the child ``death_signal`` when this process dies (its
    forking thread, in fact: call from the main thread). If this process died already, between
    the fork and the ``prctl``, the child sends it to itself: it would never come."""
    parent = os.getpid()

    def setup() -> None:
        _libc.prctl(_PR_SET_PDEATHSIG, death_signal, 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), death_signal)

    return setup


def spawn(
    argv: Sequence[str],
    *,
    log: Path | None = None,
    death_signal: signal.Signals = signal.SIGTERM,
    file_cap_bytes: int | None = None,
) -> subprocess.Popen[bytes]:
    """Start a child in its own session (Ctrl-C reaches only h2lab, which tears down in order).

    stdout and stderr go to ``log`` (or nowhere). ``death_signal`` reaches the child if h2lab
    dies without cleaning up. ``file_cap_bytes``: no file the child writes may grow past it
    (``RLIMIT_FSIZE``); a write that would fails instead of killing the child.
    """
    with open(log or os.devnull, "wb") as out:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=lambda: _child_setup(death_signal, file_cap_bytes),
        )


def run(argv: Sequence[str], *, timeout_s: float = 30.0, check: bool = True) -> str:
    """Run to completion; return stdout. Raise :class:`ProcessFailed` on a non-zero exit."""
    try:
        proc = subprocess.run(
            list(argv),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout_s,
            preexec_fn=_child_setup,
        )
    except subprocess.TimeoutExpired as exc:
        raise WaitTimeout(f"{argv[0]} to finish", timeout_s) from exc
    except FileNotFoundError as exc:
        raise ProcessFailed(argv, None, f"{argv[0]}: not found") from exc
    if check and proc.returncode != 0:
        raise ProcessFailed(argv, proc.returncode, proc.stderr.decode(errors="replace")[-2000:])
    return proc.stdout.decode(errors="replace")


def stop(
    proc: subprocess.Popen[bytes],
    *,
    grace_s: float = 5.0,
    sig: signal.Signals = signal.SIGTERM,
    group: bool = True,
) -> None:
    """Send ``sig`` to the child (its whole process group if ``group``), then SIGKILL the
    group after ``grace_s``."""
    if proc.poll() is not None:
        return
    try:
        if group:
            os.killpg(proc.pid, sig)
        else:
            os.kill(proc.pid, sig)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=grace_s)


def run_together(
    jobs: Sequence[tuple[Sequence[str], Path]], timeout_s: float
) -> list[subprocess.Popen[bytes]]:
    """Start every ``(argv, log)`` at once and wait for all of them together for at most
    ``timeout_s``; on return or on :class:`WaitTimeout` none of them is left running."""
    running = [spawn(argv, log=log) for argv, log in jobs]
    deadline = time.monotonic() + timeout_s
    try:
        for proc in running:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired as exc:
                raise WaitTimeout(f"{len(running)} process(es) to finish", timeout_s) from exc
    finally:
        for proc in running:
            stop(proc, grace_s=1)
    return running


def wait_until(
    what: str, condition: Callable[[], bool], *, timeout_s: float, poll_s: float = 0.01
) -> None:
    """Poll ``condition`` until it holds; raise :class:`WaitTimeout` naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while True:
        if condition():
            return
        if time.monotonic() >= deadline:
            raise WaitTimeout(what, timeout_s)
        time.sleep(poll_s)


def read_int_file(path: Path) -> int | None:
    """The integer a pid or status file holds (None: missing, empty or half written)."""
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


VERSION_TIMEOUT_S = 60
"""Long enough for a cold binary on a loaded host: Caddy 2.11's 40 MB ``caddy version`` took
8.0 s beside the suite's four lanes (0.06 s of CPU; 0.06-0.12 s idle), and past the 10 s it
once had, a trial stored a built Caddy as "not built"."""


def version_text(argv: Sequence[str]) -> str:
    """stdout + stderr of a ``--version``-like command ('' if the program is missing or does
    not answer within :data:`VERSION_TIMEOUT_S`)."""
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=VERSION_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout + proc.stderr


def wrapper_exit_status(status_file: Path, *, wait_s: float) -> int | None:
    """The exit status a browser's wrapper script wrote to ``status_file``, waiting up to
    ``wait_s`` for it (the script creates the file before it writes the number); None if the
    browser has not exited."""
    if wait_s > 0:
        with contextlib.suppress(WaitTimeout):
            wait_until(
                "the browser's exit status",
                lambda: read_int_file(status_file) is not None,
                timeout_s=wait_s,
                poll_s=0.02,
            )
    return read_int_file(status_file)


def describe_exit(status: int) -> str:
    """``killed by SIGKILL`` for a shell's 128 + signal status, else ``exit status N``."""
    if status > 128 and status - 128 in signal.valid_signals():
        return f"killed by {signal.Signals(status - 128).name}"
    return f"exit status {status}"
