"""``h2lab cluster head|worker`` run ``ray start --block`` as a child and watch it, rather than
becoming it, so that a node is either whole or gone:

- **Ray's processes die** (the raylet could not bind, was killed, lost the GCS): Ray's own
  ``--block`` loop notices a dead child only after its start-up finished (a raylet that dies
  during start-up leaves ``ray start`` waiting 30 s for it), so this watcher also follows the
  node's raylet. Either way every process of the node is killed and the command exits 1 with
  one line: what died and the last error line of its log (:class:`NodeDied`), for a supervisor
  (systemd, a pod) to restart it.
- **Stopping** (SIGTERM, SIGINT, SIGHUP): ``ray start`` gets one SIGTERM and
  :data:`STOP_S` to stop its node; then whatever is left of the node's process group (Ray's
  agents outlive a ``ray start`` whose GCS is gone; a raylet may hang) is killed. Exit 0.

``ray start`` runs in a process group of its own (Ray's processes inherit it), so that the
sweep never reaches this command's group (a shell pipeline), and with a parent-death signal,
so that a ``kill -9`` of this command still stops its node.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import FrameType

from h2lab import procs
from h2lab.errors import H2LabError

POLL_S = 0.2
STOP_S = 10.0
"""How long ``ray start`` may take to stop its node after SIGTERM before the rest of its
group is killed. Measured here (Ray 2.60.0, draining off): a head stops in 2-3 s, a lab node
in under 1 s; a lab node whose head is gone leaves its two agents running for good."""
RAYLET = "raylet"
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class NodeDied(H2LabError):
    """A Ray node's processes died under it: what, and the last error line of its log."""

    exit_code = 1


def _live_pids(field: int, value: int, zombies: bool = False) -> dict[int, str]:
    """Live processes (and zombies, if asked) whose /proc stat ``field`` (counted after the
    command name: 2 process group, 3 session) is ``value``: pid -> command name (a zombie's
    with `` (dead)`` after it)."""
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, _, rest = stat[stat.index("(") + 1 :].rpartition(")")
        fields = rest.split()
        if len(fields) > field and int(fields[field]) == value:
            if fields[0] != "Z":
                found[int(entry.name)] = name
            elif zombies:
                found[int(entry.name)] = f"{name} (dead)"
    return found


def group_pids(pgid: int) -> dict[int, str]:
    """The live processes of process group ``pgid``: pid -> command name."""
    return _live_pids(2, pgid)


def session_pids(sid: int) -> dict[int, str]:
    """The live processes of session ``sid`` (a node started in a session of its own: the
    watcher, ``ray start`` and every Ray process): pid -> command name."""
    return _live_pids(3, sid)


GONE_WAIT_S = 5.0
"""How long :func:`kill_group` waits for the killed to be gone (each must be scheduled once to
die: on a busy machine, a few milliseconds or more)."""


def kill_group(pgid: int) -> None:
    """SIGKILL every process of group ``pgid`` and wait, bounded, until none is alive (none
    left: nothing)."""
    deadline = time.monotonic() + GONE_WAIT_S
    while True:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        if not group_pids(pgid) or time.monotonic() > deadline:
            return
        time.sleep(0.01)


def last_error_line(logs: Path | None, name: str) -> str | None:
    """The last line of ``name``'s logs (``name.err``, then ``name.out``, in Ray's session
    ``logs`` folder) that reads as an error, stripped of Ray's log prefix; None if none."""
    if logs is None:
        return None
    texts = []
    for suffix in (".err", ".out"):
        try:
            texts.append((logs / f"{name}{suffix}").read_text(errors="replace").splitlines())
        except OSError:
            continue
    for lines in texts:
        for is_error in (_is_logged_error, _names_error):  # Ray's own E/F lines first
            for line in reversed(lines):
                if is_error(line):
                    return _strip_prefix(line)[:300]
    return None


def log_level(line: str) -> str | None:
    """A Ray (glog) line's level, ``[2026-01-01 00:00:00,000 E 12 12] ...`` -> ``E``; None for
    a line without one."""
    head = line.split("]", 1)[0].split()
    return head[2] if line.startswith("[") and len(head) >= 3 else None


def _is_logged_error(line: str) -> bool:
    return log_level(line) in ("E", "F")


def _names_error(line: str) -> bool:
    """A line naming an error (a Python traceback's last line, a bind failure), not one of
    Ray's statistics lines (``- bytes errored: 0``)."""
    return ("rror" in line and "errored:" not in line) or "in use" in line


def _strip_prefix(line: str) -> str:
    if line.startswith("[") and "]" in line:
        line = line.split("]", 1)[1]
        if line.startswith(" ("):  # "(raylet) file.cc:12: "
            line = line.split(")", 1)[1]
    return line.strip()


def session_logs(temp_dir: Path | None) -> Path | None:
    """Ray's ``logs`` folder of the latest session under ``temp_dir``."""
    if temp_dir is None:
        return None
    logs = temp_dir / "session_latest" / "logs"
    return logs if logs.is_dir() else None


class Watch:
    """``ray start --block`` (``argv``) as a watched child; :meth:`run` returns its exit code
    or raises :class:`NodeDied`."""

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        temp_dir: Path | None,
        *,
        say: Callable[[str], None],
        stop_s: float = STOP_S,
    ) -> None:
        self.argv, self.env, self.temp_dir = list(argv), dict(env), temp_dir
        self.say, self.stop_s = say, stop_s
        self.stop_by: float | None = None
        self.raylet: int | None = None
        self.proc: subprocess.Popen[bytes] | None = None

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.stop_by is None:
            self.stop_by = time.monotonic() + self.stop_s
            self.say(f"{signal.Signals(signum).name}: stopping the Ray node")
            self._pass_stop()

    def _pass_stop(self) -> None:
        """SIGTERM to ``ray start``, once it exists (a stop that came while it was being
        started is passed on as soon as it is)."""
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)

    def run(self) -> int:
        old = {s: signal.signal(s, self._on_signal) for s in STOP_SIGNALS}
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                env=self.env,
                process_group=0,
                preexec_fn=procs.death_signal_setup(signal.SIGTERM),
            )
            if self.stop_by is not None:
                self._pass_stop()
            return self._watch(self.proc)
        finally:
            if self.proc is not None:
                if self.proc.poll() is None:
                    self.proc.kill()
                    self.proc.wait()
                kill_group(self.proc.pid)
            for s, h in old.items():
                signal.signal(s, h)

    def _watch(self, proc: subprocess.Popen[bytes]) -> int:
        while True:
            code = proc.poll()
            if code is not None:
                break
            if self.stop_by is not None:
                if time.monotonic() > self.stop_by:
                    self.say(f"the Ray node did not stop within {self.stop_s:g} s: killed")
                    kill_group(proc.pid)
                    proc.wait()
                    return 0
            else:
                self._check_raylet(proc.pid)
            time.sleep(POLL_S)
        if self.stop_by is not None:
            return 0
        raise NodeDied(self._why_ended(code))

    def _check_raylet(self, pgid: int) -> None:
        """The raylet died: it was seen and is gone, or it is a zombie (one that dies during
        Ray's start-up stays one: ``ray start`` looks at its children only afterwards)."""
        members = _live_pids(2, pgid, zombies=True)
        dead = next((p for p, n in members.items() if n == f"{RAYLET} (dead)"), None)
        if self.raylet is None and dead is None:
            self.raylet = next((p for p, n in members.items() if n == RAYLET), None)
        elif dead is not None or self.raylet not in members:
            why = last_error_line(session_logs(self.temp_dir), RAYLET)
            pid = self.raylet if dead is None else dead
            raise NodeDied(f"Ray's raylet (pid {pid}) died" + (f": {why}" if why else ""))

    def _why_ended(self, code: int) -> str:
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exited with {code}"
        why = last_error_line(session_logs(self.temp_dir), RAYLET)
        return f"ray start {how}" + (f"; the raylet's last error: {why}" if why else "")
