"""A CPU quota for the whole of a client (option ``cpu``, in cores): a cgroup every process of
the client is started in, so that the browser's network service (where QUIC runs), its GPU
process and its renderers share one budget, as on a slow device. DevTools' CPU throttling slows
a renderer's main thread only (docs/guide.md, "A slow CPU").

cgroup v2's ``cpu.max`` where the machine mounts the unified hierarchy with the cpu controller,
else cgroup v1's ``cpu.cfs_quota_us`` (this machine kind mounts v1 controllers with an empty v2
hierarchy beside them). The period is :data:`PERIOD_US`, short, so that a quarter of a core is
a quarter in every 10 ms rather than 25 ms of work then 75 ms of nothing.

Each trial measures the quota it ran under (:meth:`CpuGroup.calibrate`: a fixed piece of work
run in the group, as Lighthouse's BenchmarkIndex), and checks that every process of the
browser's tree is in the group (:meth:`CpuGroup.outside`)."""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
import time
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PERIOD_US = 10_000
"""The quota's period: 10 ms (the kernel's default, 100 ms, lets a quarter-core run 25 ms at
full speed, then stalls it 75 ms: a page's 50 ms task takes either 50 or 150 ms)."""
CALIBRATION_LOOPS = 800_000
"""Iterations of the calibration's loop, its unit of work: about 50 ms of one core here,
unthrottled."""
CALIBRATION_BLOCKS = 4
"""Units of work timed together, the figure their mean: a single unit under a quarter of a
core is some 20 of the quota's periods, where one period more or less moves it 5 %."""
CALIBRATION_CODE = "for i in range(n): x += i * i"


@dataclass(frozen=True)
class Hierarchy:
    """Where a cpu cgroup is made: its parent folder, and whether it is cgroup v2."""

    parent: Path
    v2: bool


def hierarchy(root: Path = CGROUP_ROOT) -> Hierarchy | str:
    """The cgroup tree with a cpu controller this process may make groups in, or why there is
    none (one line)."""
    controllers = root / "cgroup.controllers"
    if controllers.is_file() and "cpu" in controllers.read_text().split():
        found = Hierarchy(root, True)
    elif (root / "cpu" / "cpu.cfs_quota_us").is_file():
        found = Hierarchy(root / "cpu", False)
    else:
        return f"no cgroup with a cpu controller under {root} (neither v2's cpu.max nor v1's cpu)"
    if not os.access(found.parent, os.W_OK):
        return (
            f"{found.parent} is not writable by this user: the cgroup is not delegated "
            "(run as root, or delegate a cgroup with the cpu controller)"
        )
    return found


def cores_text(cores: float) -> str:
    return f"{cores:g}"


LEAST_WEIGHT = {True: 1, False: 2}
"""The least weight a group can have against its siblings: v2's ``cpu.weight``, v1's
``cpu.shares``."""


def idle_class() -> bool:
    """Whether this process runs at Linux's idle scheduling class (``chrt --idle``)."""
    return os.sched_getscheduler(0) == os.SCHED_IDLE


class CpuGroup:
    """A cgroup of ``cores`` cores (made at once, removed by :meth:`remove`). Made by a process
    at the idle scheduling class, it takes the least weight too: a group competes with its
    siblings by its weight, whatever its processes' class, so a browser at ``cores=1`` started
    by an idle-class run (the suite's quick runs beside its alone group) took a core's full
    share from the timing test beside it (a composite lag of 161 ms against at most 150)."""

    def __init__(self, cores: float, root: Path = CGROUP_ROOT) -> None:
        where = hierarchy(root)
        if isinstance(where, str):
            raise OSError(where)
        self.cores = cores
        self._root = root
        self._bench: CpuGroup | None = None
        self.v2 = where.v2
        # a pid and a random part: labs in PID namespaces of their own share the cgroup tree
        self.path = where.parent / f"h2lab-cpu-{os.getpid()}-{secrets.token_hex(4)}"
        quota_us = max(1000, round(cores * PERIOD_US))
        self.path.mkdir()
        try:
            if self.v2:
                (self.path / "cpu.max").write_text(f"{quota_us} {PERIOD_US}\n")
            else:
                (self.path / "cpu.cfs_period_us").write_text(f"{PERIOD_US}\n")
                (self.path / "cpu.cfs_quota_us").write_text(f"{quota_us}\n")
            if idle_class():
                (self.path / ("cpu.weight" if self.v2 else "cpu.shares")).write_text(
                    f"{LEAST_WEIGHT[self.v2]}\n"
                )
        except OSError:
            self.path.rmdir()
            raise

    @property
    def procs_file(self) -> Path:
        return self.path / "cgroup.procs"

    def enter_line(self) -> str:
        """A shell line that moves the shell running it into the group: what it starts after
        (the browser and every process the browser starts) is in it from its first
        instruction."""
        return f"echo $$ > {self.procs_file}\n"

    def members(self) -> set[int]:
        try:
            return {int(p) for p in self.procs_file.read_text().split()}
        except OSError:
            return set()

    def outside(self, pid: int) -> list[int]:
        """The processes of ``pid``'s tree (it and its descendants) not in the group; one that
        ended meanwhile is not counted."""
        outside = process_tree(pid) - self.members()
        # read again: a child forked after the first read is in the tree, and in the group
        return sorted(p for p in outside if p not in self.members() and _runs(p))

    def throttled_ms(self) -> float | None:
        """How long the group's processes have waited for their quota so far, ms."""
        try:
            stat = dict(
                line.split(maxsplit=1) for line in (self.path / "cpu.stat").read_text().splitlines()
            )
        except (OSError, ValueError):
            return None
        if "throttled_usec" in stat:
            return int(stat["throttled_usec"]) / 1000
        if "throttled_time" in stat:
            return int(stat["throttled_time"]) / 1e6
        return None

    def calibrate(self) -> Calibration:
        """:data:`CALIBRATION_LOOPS` loops run under the same quota: in a group of its own
        beside this one, made on first use. (In the browser's own group the
        browser's background work took a share: Chromium's read 7.7 times the free figure at a
        quarter of a core, not 4.) What it catches is a quota the machine cannot give: cores
        busy with other work."""
        if self._bench is None:
            self._bench = CpuGroup(self.cores, self._root)
        return calibration(self._bench.enter_line())

    def remove(self) -> None:
        """Remove the group (and its calibration's), once its processes have gone (up to
        5 s); a process still in it then is moved out to the parent first."""
        if self._bench is not None:
            self._bench.remove()
            self._bench = None
        deadline = time.monotonic() + 5
        while self.members() and time.monotonic() < deadline:
            time.sleep(0.05)
        for pid in self.members():
            with contextlib.suppress(OSError):
                (self.path.parent / "cgroup.procs").write_text(f"{pid}\n")
        with contextlib.suppress(FileNotFoundError):
            self.path.rmdir()


GROUP_PREFIX = "h2lab-cpu-"
LEFT_GRACE_S = 30.0
"""A group younger than this is not taken for one left behind: a lab may be making it."""


def left_groups(root: Path = CGROUP_ROOT) -> list[Path]:
    """The quota groups a killed h2lab left (``h2lab clean``): made by a process that is gone,
    with no process in them, older than :data:`LEFT_GRACE_S`. A lab in a PID namespace of its
    own names a pid this one cannot see; its groups hold its browser while it runs, so an empty
    one is not in use."""
    where = hierarchy(root)
    parent = where.parent if isinstance(where, Hierarchy) else None
    if parent is None or not parent.is_dir():
        return []
    left = []
    for group in sorted(parent.glob(f"{GROUP_PREFIX}*")):
        pid = group.name.removeprefix(GROUP_PREFIX).split("-", 1)[0]
        try:
            young = time.time() - group.stat().st_mtime < LEFT_GRACE_S
        except OSError:
            continue  # gone meanwhile
        try:
            members = (group / "cgroup.procs").read_text().split()
        except FileNotFoundError:
            members = []  # not a cgroup: a folder made by hand
        except OSError:
            continue
        if pid.isdigit() and not _runs(int(pid)) and not members and not young:
            left.append(group)
    return left


def remove_left_groups(root: Path = CGROUP_ROOT) -> list[str]:
    """Remove :func:`left_groups`; the names of those removed."""
    removed = []
    for group in left_groups(root):
        with contextlib.suppress(OSError):
            group.rmdir()
            removed.append(group.name)
    return removed


@dataclass(frozen=True)
class Calibration:
    """The calibration's work, as a process in a quota sees it."""

    ms: float
    """its wall time for one unit of work, ms: what the same work takes on the CPU a client
    gets (``cpu_calibration_ms``)"""
    cores: float
    """the CPU time it got over its wall time: the share of a core the quota gave it
    (``cpu_calibration_cores``; 0.249 at ``cores=0.25`` here). The wall time says more than
    the share (a unit under a quarter of a core costs some 10 % more CPU time than a free
    one: each 2.5 ms slice starts cold), the share checks the quota itself."""


def calibration(enter: str = "", blocks: int = CALIBRATION_BLOCKS) -> Calibration:
    """The calibration loop in a new process (in a group when ``enter`` is its
    :meth:`CpuGroup.enter_line`), ``blocks`` units timed as one, their mean."""
    import subprocess

    code = (
        f"import time\nx = 0\nt, c = time.perf_counter(), time.process_time()\n"
        f"for _ in range({blocks}):\n    n = {CALIBRATION_LOOPS}\n    {CALIBRATION_CODE}\n"
        f"print(time.perf_counter() - t, time.process_time() - c)\n"
    )
    script = f"{enter}exec {sys.executable} -c '{code}'"
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise OSError(f"the CPU calibration failed: {out.stderr.strip()[:200]}")
    wall_s, cpu_s = (float(v) for v in out.stdout.split())
    return Calibration(round(wall_s * 1000 / blocks, 3), round(cpu_s / wall_s, 4))


def calibration_ms(enter: str = "", blocks: int = CALIBRATION_BLOCKS) -> float:
    """The calibration's wall time for one unit of work, ms (:func:`calibration`)."""
    return calibration(enter, blocks).ms


ZOMBIE = ("Z", "X")
"""A process's states in /proc/PID/stat once it has exited: it has left its cgroup (the kernel
takes it out at exit) though its parent has not reaped it yet, and runs nothing."""


def process_tree(pid: int) -> set[int]:
    """``pid`` and every process descended from it that still runs (read from /proc now)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
        if state not in ZOMBIE:
            children.setdefault(int(ppid), []).append(int(entry))
    tree, todo = set(), [pid]
    while todo:
        p = todo.pop()
        if p not in tree:
            tree.add(p)
            todo.extend(children.get(p, ()))
    return tree


def _runs(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :].split()[0] not in ZOMBIE
