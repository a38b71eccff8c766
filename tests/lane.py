"""Run a command in a test lane: a machine view of its own, so that lanes run side by side.

    python tests/lane.py PROGRAM [ARG...]

pytest-xdist starts each worker through it (``make test``: ``--tx popen//python=...``), and the
group that runs alone goes through it too. A lane is a new mount and PID namespace (as root;
``unshare --mount --pid --fork --mount-proc``) with its own tmpfs on ``/run`` and
``/etc/netns``. There, everything by which a test looks at "the machine" is the lane's own:

- named network namespaces (``/run/netns``: the lab's ``h2lab-*``, Rattan's ``ns-left-*``),
  which the integration tests check are all gone after each test;
- lab state and owners (``/run/h2lab``, ``/run/h2lab-owners``, ``/etc/netns``), which
  ``h2lab clean`` reads: a clean in one lane never takes another lane's live lab for stale;
- processes (``pgrep``, ``pid_alive`` on a recorded owner): a lane sees only its own;
- temporary files: ``TMPDIR`` is a folder of the lane's, removed when it ends (a test that
  counts the browser profiles left in the temporary folder counts its lane's).

What stays shared is what h2lab already shares between concurrent labs (``run --jobs``): the
host's network namespace, with loopback ports the tests pick apart, Rattan's address locks
under ``/tmp/rattan``, and the lock that guards the host-wide ``net.core.rmem_default``
(``/run/h2lab-rmem_default.lock``, :mod:`h2lab.net.rmem`), bound into the lane's /run: without
it, one lane put rmem_default back while another's Rattan opened its sockets, which then held
208 KiB (``test_links_started_at_once_all_get_rattans_socket_buffer``).

The lane's first process (this file, PID 1 there) runs PROGRAM as its child with the same
standard streams (xdist talks to its worker over them), passes SIGINT, SIGTERM and SIGHUP on,
reaps orphans, and exits with PROGRAM's status; the kernel then ends whatever the lane left
running. Standard library only. Not as root (an ordinary user's test
run): PROGRAM runs as it is, without a lane.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

INSIDE = "--inside-lane"
RUN_SKELETON = {"lock": 0o1777, "user": 0o755, "netns": 0o755}
"""Folders of the lane's fresh /run (the host's /run/shm link is made again, below)."""
SHARED_RUN = ("h2lab-rmem_default.lock",)
"""Files of the host's /run that stay the host's in a lane: locks of host-wide settings."""
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def enter(argv: list[str]) -> None:
    """Re-run this file as PID 1 of a new mount and PID namespace (never returns)."""
    if os.geteuid() != 0:
        os.execvp(argv[0], argv)
    Path("/etc/netns").mkdir(exist_ok=True)  # a mount point; `ip netns` makes it anyway
    os.execvp(
        "unshare",
        [
            "unshare",
            "--mount",
            "--pid",
            "--fork",
            "--mount-proc",
            "--propagation",
            "private",
            "--",
            sys.executable,
            os.path.abspath(__file__),
            INSIDE,
            *argv,
        ],
    )


def furnish() -> None:
    """The lane's own /run and /etc/netns, fresh and empty but for /run's usual skeleton and
    the host's :data:`SHARED_RUN` files."""
    shared = {
        name: os.open(Path("/run") / name, os.O_RDWR | os.O_CREAT, 0o644) for name in SHARED_RUN
    }
    for target in ("/run", "/etc/netns"):
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755", "h2lab-lane", target], check=True)
    for name, mode in RUN_SKELETON.items():
        path = Path("/run") / name
        path.mkdir()
        path.chmod(mode)
    Path("/run/shm").symlink_to("/dev/shm")
    for name, fd in shared.items():
        (Path("/run") / name).touch()
        bind = ["mount", "--no-canonicalize", "--bind", f"/proc/self/fd/{fd}", f"/run/{name}"]
        subprocess.run(bind, check=True, pass_fds=(fd,))
        os.close(fd)


def supervise(argv: list[str]) -> int:
    """Run ``argv`` as a child, forward stops to it, reap every orphan; its exit status."""
    child = subprocess.Popen(argv)
    for sig in FORWARDED:
        signal.signal(sig, lambda s, _f: child.send_signal(s))
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            return 1
        except InterruptedError:
            continue
        if pid == child.pid:
            return os.waitstatus_to_exitcode(status) if status else 0


def main() -> int:
    args = sys.argv[1:]
    if not args:
        print("usage: lane.py PROGRAM [ARG...]", file=sys.stderr)
        return 2
    if args[0] != INSIDE:
        enter(args)
    furnish()
    # short: Ray's socket paths under it must fit in 107 bytes (h2lab.cluster.local)
    tmp = tempfile.mkdtemp(prefix="lane", dir="/tmp")
    os.chmod(tmp, 0o1777)  # as /tmp: the rootless tests' user writes there too
    os.environ["TMPDIR"] = tmp
    try:
        code = supervise(args[1:])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
