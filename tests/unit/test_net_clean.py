"""h2lab.net.clean: which labs count as stale (state folders faked under a temporary
H2LAB_STATE; tests/integration/test_link.py starts real labs at once)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from h2lab.net import clean, lab, netns


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "run"
    root.mkdir()
    monkeypatch.setenv("H2LAB_STATE", str(root))
    monkeypatch.setenv("H2LAB_OWNERS", str(tmp_path / "owners"))
    monkeypatch.setattr(netns, "list_netns", lambda: [])
    monkeypatch.setattr(clean, "netns_etc", lambda name: tmp_path / "etc-netns" / name)
    return root


def _lab(root: Path, lab_id: str, pid: int | None, age_s: float = 0.0) -> None:
    folder = root / lab_id
    folder.mkdir()
    if pid is not None:
        (folder / "owner.pid").write_text(str(pid))
    then = folder.stat().st_mtime - age_s
    os.utime(folder, (then, then))


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_lab_is_stale_when_its_owner_is_gone_or_it_never_got_one(state: Path) -> None:
    _lab(state, "h2lab-alive1", os.getppid())  # another process, alive
    _lab(state, "h2lab-dead01", _dead_pid())
    _lab(state, "h2lab-nopid1", None, age_s=clean.STARTING_GRACE_S + 5)  # died before writing
    _lab(state, "h2lab-mine01", os.getpid())  # this process's own: left over from a lab before
    assert clean.stale_instances() == ["h2lab-dead01", "h2lab-mine01", "h2lab-nopid1"]
    assert clean.stale_instances(include_live=True) == [
        "h2lab-alive1",
        "h2lab-dead01",
        "h2lab-mine01",
        "h2lab-nopid1",
    ]


def test_a_lab_still_writing_its_owner_pid_is_not_stale(state: Path) -> None:
    """A shard of --jobs makes its state folder, then writes owner.pid: a lab cleaning between
    the two must not tear it down."""
    _lab(state, "h2lab-start1", None)
    assert clean.stale_instances() == []
    (state / "h2lab-start1" / "owner.pid").write_text("")  # half written
    assert clean.stale_instances() == []


def test_namespaces_without_a_state_folder_are_stale(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(netns, "list_netns", lambda: ["h2lab-gone01-servers", "other-ns"])
    assert clean.stale_instances() == ["h2lab-gone01"]


def test_a_lab_of_another_state_folder_is_not_stale_while_its_owner_lives(
    state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two Ray lab nodes on one machine, each with its own H2LAB_STATE: the namespaces are
    machine-wide, and one node starting a lab must not tear down the other's."""
    names = ["h2lab-other1-servers", "h2lab-other2-servers", "h2lab-gone02-servers"]
    monkeypatch.setattr(netns, "list_netns", lambda: names)
    owners = tmp_path / "owners"
    owners.mkdir()
    (owners / "h2lab-other1").write_text(str(os.getppid()))  # alive, in another folder
    (owners / "h2lab-other2").write_text(str(_dead_pid()))
    assert clean.stale_instances() == ["h2lab-gone02", "h2lab-other2"]


def test_a_lab_remakes_its_state_parent_when_another_labs_clean_removed_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two shards of --jobs start at once: one's clean_stale removes the empty state root
    between the other making it and making its own folder in it (a failure seen in CI)."""
    root = tmp_path / "state"
    folder = root / "h2lab-abc123"
    real_mkdir = Path.mkdir
    removed: list[bool] = []

    def racing_mkdir(self: Path, mode: int = 0o777, parents: bool = False, **kw: bool) -> None:
        real_mkdir(self, mode, parents=parents, **kw)
        if self == root and not removed:  # the other lab's clean_stale, just then
            removed.append(True)
            root.rmdir()

    monkeypatch.setattr(Path, "mkdir", racing_mkdir)
    lab._make_state_dir(folder)
    assert removed and folder.is_dir()


# ------------------------------------------------------------------ cluster folders


def test_cluster_folders_whose_owner_is_gone_are_removed(
    state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    root = state / "cluster"
    gone, alive = _dead_pid(), os.getpid()
    folders = {
        n: root / n
        for n in (f"ray-{gone}", f"actor-{gone}-x1", f"ray-{alive}", f"actor-{alive}-x2")
    }
    for folder in folders.values():
        (folder / "results").mkdir(parents=True)
    assert clean.clean_cluster_folders() == [folders[f"actor-{gone}-x1"], folders[f"ray-{gone}"]]
    assert sorted(p.name for p in root.iterdir()) == [f"actor-{alive}-x2", f"ray-{alive}"]
    # a node that stopped removes its own Ray folder (its pid still lives: it is the caller)
    removed = clean.clean_cluster_folders(ended={alive})
    assert sorted(p.name for p in removed) == [f"actor-{alive}-x2", f"ray-{alive}"]
    assert not root.exists()


def test_older_versions_tmp_folders_go_only_when_no_lab_actor_runs(
    state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp = tmp_path / "tmp"
    (tmp / "h2lab-cluster-abc123" / "results").mkdir(parents=True)
    (tmp / "h2lab-other").mkdir()
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp))
    monkeypatch.setattr(clean, "lab_actors_alive", lambda: True)
    assert clean.clean_cluster_folders() == []  # one of them may be a live actor's
    assert (tmp / "h2lab-cluster-abc123").is_dir()
    monkeypatch.setattr(clean, "lab_actors_alive", lambda: False)
    assert clean.clean_cluster_folders() == [tmp / "h2lab-cluster-abc123"]
    assert sorted(p.name for p in tmp.iterdir()) == ["h2lab-other"]


def test_a_lab_actor_is_found_by_its_process_title(tmp_path: Path) -> None:
    assert clean.LAB_ACTOR_TITLE == b"ray::LabActor"
    proc = tmp_path / "proc"
    for pid, cmdline in (("1", b"/sbin/init\0"), ("77", b"ray::IDLE\0"), ("self", b"x\0")):
        (proc / pid).mkdir(parents=True)
        (proc / pid / "cmdline").write_bytes(cmdline)
    assert clean.lab_actors_alive(proc) is False
    (proc / "78").mkdir()
    (proc / "78" / "cmdline").write_bytes(b"ray::LabActor.run\0")
    assert clean.lab_actors_alive(proc) is True
    # exec -a: argv[0] is the title, as Ray's setproctitle makes it ("ray::LabActor.run")
    child = subprocess.Popen(["bash", "-c", "exec -a ray::LabActor.run sleep 30"])
    try:
        title = Path(f"/proc/{child.pid}/cmdline")
        for _ in range(500):  # bounded: bash execs sleep in well under a second
            if title.read_bytes().startswith(b"ray::"):
                break
            subprocess.run(["sleep", "0.01"], check=True)
        assert clean.lab_actors_alive() is True
    finally:
        child.kill()
        child.wait()
