"""The CPU quota of option ``cores`` (h2lab.clients.cpu): which cgroup tree it is made in, what
it writes there, how its throttled time is read, and a real group (this machine's v1 cpu
controller, as root) holding a process tree, found outside when moved out."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from h2lab.clients import cpu
from h2lab.clients.browser.options import MACHINE_CORES
from h2lab.clients.browser.pool import wrapper_script


def _v1(root: Path) -> Path:
    (root / "cpu").mkdir(parents=True)
    (root / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    return root


def test_v2_is_taken_where_the_unified_tree_has_the_cpu_controller(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    _v1(tmp_path)  # a v1 mount beside it is not used
    assert cpu.hierarchy(tmp_path) == cpu.Hierarchy(tmp_path, True)
    group = cpu.CpuGroup(0.25, tmp_path)
    assert (group.path / "cpu.max").read_text() == f"2500 {cpu.PERIOD_US}\n"
    assert group.path.parent == tmp_path and group.path.name.startswith("h2lab-cpu-")


def test_v1_where_the_unified_tree_is_empty(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("\n")  # this machine kind: v2 with nothing
    _v1(tmp_path)
    group = cpu.CpuGroup(1.5, tmp_path)
    assert group.v2 is False and group.path.parent == tmp_path / "cpu"
    assert (group.path / "cpu.cfs_period_us").read_text() == "10000\n"
    assert (group.path / "cpu.cfs_quota_us").read_text() == "15000\n"
    assert group.enter_line() == f"echo $$ > {group.path / 'cgroup.procs'}\n"


def test_no_cpu_controller_is_said_in_one_line(tmp_path: Path) -> None:
    reason = cpu.hierarchy(tmp_path)
    assert isinstance(reason, str) and "no cgroup with a cpu controller" in reason
    with pytest.raises(OSError, match="no cgroup with a cpu controller"):
        cpu.CpuGroup(1, tmp_path)


def test_a_tree_this_user_cannot_write_is_not_delegated(tmp_path: Path) -> None:
    _v1(tmp_path)
    os.chmod(tmp_path / "cpu", 0o555)
    try:
        # as root the mode does not stop a write; as a user it is the delegation missing
        reason = cpu.hierarchy(tmp_path)
        if os.geteuid() == 0:
            assert reason == cpu.Hierarchy(tmp_path / "cpu", False)
        else:
            assert isinstance(reason, str) and "not delegated" in reason
    finally:
        os.chmod(tmp_path / "cpu", 0o755)


@pytest.mark.parametrize(
    ("stat", "ms"),
    [
        ("nr_periods 10\nnr_throttled 4\nthrottled_time 7500000\n", 7.5),  # v1, ns
        ("usage_usec 9\nnr_throttled 4\nthrottled_usec 1250\n", 1.25),  # v2, µs
        ("nr_periods 10\n", None),
    ],
)
def test_throttled_time_from_either_versions_cpu_stat(
    tmp_path: Path, stat: str, ms: float | None
) -> None:
    group = cpu.CpuGroup(1, _v1(tmp_path))
    (group.path / "cpu.stat").write_text(stat)
    assert group.throttled_ms() == ms


def test_the_browsers_wrapper_enters_the_group_before_it_starts_anything() -> None:
    script = wrapper_script("exec-browser", Path("/p"), Path("/s"), "", "echo $$ > /g/procs\n")
    lines = script.splitlines()
    assert lines[1] == "echo $$ > /g/procs" and lines[2].startswith("exec-browser")


def test_machine_cores_bound_the_option() -> None:
    assert os.cpu_count() == MACHINE_CORES


def test_a_real_group_holds_a_process_tree_and_sees_one_moved_out() -> None:
    """As root on this machine (cgroup v1's cpu controller): a shell started in the group and
    its child are inside; the child moved to the root group is found outside; the group
    throttles a busy loop at a quarter of a core; it is removed."""
    group = cpu.CpuGroup(0.25)
    shell = subprocess.Popen(["sh", "-c", f"{group.enter_line()}sleep 30 & wait"])
    child = 0
    try:
        deadline = time.monotonic() + 5
        while len(cpu.process_tree(shell.pid)) < 2:
            assert time.monotonic() < deadline, "the shell's child never started"
            time.sleep(0.01)
        assert group.outside(shell.pid) == []
        assert cpu.process_tree(shell.pid) <= group.members()
        (child,) = cpu.process_tree(shell.pid) - {shell.pid}
        (group.path.parent / "cgroup.procs").write_text(f"{child}\n")
        assert group.outside(shell.pid) == [child]
        # a quarter of a core throttles 50 ms of work: waiting is counted (how long is a
        # matter of time, tests/integration/test_cpu_quota.py's, on a free machine)
        assert cpu.calibration_ms(group.enter_line()) > 0 and group.throttled_ms()
        assert group.calibrate().ms > 0  # in a group of its own, beside
    finally:
        for pid in cpu.process_tree(shell.pid) | ({child} if child else set()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shell.wait()
        group.remove()
    assert not group.path.exists()


@pytest.mark.parametrize("v2", [True, False])
def test_a_group_made_at_the_idle_class_takes_the_least_weight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, v2: bool
) -> None:
    """A group competes with its siblings by weight, not by its processes' class: made by an
    idle-class run, it must not take a core's share from the work beside it."""
    root = _v1(tmp_path)
    if v2:
        root = tmp_path / "v2"
        root.mkdir()
        (root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
        (root / "cgroup.subtree_control").write_text("cpu\n")
    monkeypatch.setattr(cpu, "idle_class", lambda: True)
    group = cpu.CpuGroup(1, root)
    name = "cpu.weight" if v2 else "cpu.shares"
    assert (group.path / name).read_text() == f"{cpu.LEAST_WEIGHT[v2]}\n"
    monkeypatch.setattr(cpu, "idle_class", lambda: False)
    assert not (cpu.CpuGroup(1, root).path / name).exists()


def test_clean_removes_only_the_empty_groups_of_runs_that_are_gone(tmp_path: Path) -> None:
    """``h2lab clean``: a killed run's quota group goes; one of a live process, one just made
    and one with a process in it stay."""
    from h2lab.clients.cpu import LEFT_GRACE_S, remove_left_groups

    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    gone = 4_194_301  # above any pid this machine has handed out
    assert not Path(f"/proc/{gone}").exists()
    old = time.time() - LEFT_GRACE_S - 5

    def group(name: str, *, age: float = old, procs: str | None = None) -> Path:
        path = tmp_path / "cpu" / f"h2lab-cpu-{name}"
        path.mkdir()
        if procs is not None:
            (path / "cgroup.procs").write_text(procs)
        os.utime(path, (age, age))
        return path

    left = group(f"{gone}-aaaa")
    alive = group(f"{os.getpid()}-bbbb")
    young = group(f"{gone}-cccc", age=time.time())
    used = group(f"{gone}-dddd", procs="123\n")
    assert remove_left_groups(tmp_path) == [left.name]
    assert not left.exists() and alive.exists() and young.exists() and used.exists()
