#!/usr/bin/python3.11
"""The container image's entrypoint (deploy/Containerfile, docs/container.md).

``podman run … -v "$PWD/out:/results" h2lab:latest h2lab demo``: runs its arguments as a child
(the working folder is /results), passes SIGINT, SIGTERM and SIGHUP on to it, reaps orphans
(it is PID 1), and when the child has ended gives every file under /results that root owns to
the owner of /results (the caller, who made the mounted folder), then exits with the child's
status. Before, it makes /proc/sys writable if the runtime mounted it read-only (it does
unless ``--privileged``): h2lab sets the TCP and IPv6 sysctls of the network namespaces it
creates through it. That needs CAP_SYS_ADMIN, which the lab needs anyway; without it a failed
command is followed by one line saying so. Standard library only: it runs before anything
else, under Debian's python3.11.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

RESULTS = Path("/results")
PROC_SYS = Path("/proc/sys")
PROBE = PROC_SYS / "net/ipv4/tcp_rmem"
"""A per-namespace sysctl h2lab writes in every lab namespace."""
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
SI_KERNEL = 0x80
"""si_code of a signal the kernel sent: a terminal's to its foreground process group."""


def say(message: str) -> None:
    print(f"h2lab-entrypoint: {message}", file=sys.stderr, flush=True)


def results_owner(folder: Path = RESULTS) -> tuple[int, int] | None:
    """(uid, gid) of ``folder``, or None when it is missing or root's (not a caller's mount)."""
    try:
        st = folder.stat()
    except FileNotFoundError:
        return None
    return None if st.st_uid == 0 else (st.st_uid, st.st_gid)


def give_back(folder: Path, uid: int, gid: int, from_uid: int = 0) -> int:
    """Give every entry under ``folder`` owned by ``from_uid`` to ``uid``:``gid``: symbolic
    links themselves (never their targets), and nothing on another file system mounted below.
    Returns how many entries changed owner."""
    device = folder.stat().st_dev
    changed = 0
    for top, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if os.lstat(os.path.join(top, d)).st_dev == device]
        for name in [*dirs, *files]:
            path = os.path.join(top, name)
            if os.lstat(path).st_uid == from_uid:
                os.lchown(path, uid, gid)
                changed += 1
    return changed


def writable_proc_sys() -> str | None:
    """Remount /proc/sys read-write when the runtime mounted it read-only; why not, if it
    stays read-only."""
    if os.access(PROBE, os.W_OK):
        return None
    proc = subprocess.run(
        ["mount", "-o", "remount,bind,rw", str(PROC_SYS)], capture_output=True, text=True
    )
    if proc.returncode == 0:
        return None
    return (proc.stderr.strip().splitlines() or [f"mount exited with {proc.returncode}"])[0]


def _reap(child: int) -> int | None:
    """Reap every ended child (PID 1 inherits orphans); the exit status of ``child`` if it
    was among them (128 + signal for a signal)."""
    status = None
    while True:
        try:
            pid, wait_status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status
        if pid == 0:
            return status
        if pid == child:
            code = os.waitstatus_to_exitcode(wait_status)
            status = 128 - code if code < 0 else code


def run(argv: list[str]) -> int:
    """``argv`` as a child; its exit status (128 + signal). SIGINT, SIGTERM and SIGHUP sent
    to this process (``podman stop``, podman's signal proxy) go on to the child; one the
    terminal sent (Ctrl-C under ``podman run -it``: si_code SI_KERNEL) reached the child's
    process group already and is not sent twice."""
    waited = {*FORWARDED, signal.SIGCHLD}
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, waited)
    try:
        child = subprocess.Popen(
            argv, preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        )
        status = None
        while status is None:
            info = signal.sigwaitinfo(waited)
            if info.si_signo == signal.SIGCHLD:
                status = _reap(child.pid)
            elif info.si_code != SI_KERNEL:
                os.kill(child.pid, info.si_signo)
        child.returncode = status
        return status
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)


def main(argv: list[str]) -> int:
    if not argv:
        say("command line: nothing to run (e.g. h2lab demo)")
        return 2
    read_only = writable_proc_sys()
    try:
        code = run(argv)
    except FileNotFoundError:
        say(f"command line: {argv[0]!r} not found")
        code = 127
    if code != 0 and read_only:
        say(
            f"/proc/sys stayed read-only ({read_only}), so a lab could not set its sysctls: "
            "run with --cap-add=SYS_ADMIN or --privileged (docs/container.md)"
        )
    owner = results_owner()
    if owner is not None:
        give_back(RESULTS, *owner)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
