"""h2lab.cluster.local's start, with fake nodes: a node (the head or a lab node) whose Ray died
while starting is started again (as a supervisor would), anything else that exits is reported
with its last words, and start-ups of the machine's local clusters take turns."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from h2lab.cluster import local
from h2lab.cluster.local import LocalCluster
from h2lab.errors import H2LabError

DIED = "h2lab: Ray's raylet (pid 41) died: node_manager.cc:9: lost the GCS"


def _cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[LocalCluster, list[int]]:
    """A cluster whose node-1 is a process that has exited, its log ending in ``DIED``; the
    head knows one lab node once node-1 was started again."""
    c = LocalCluster(tmp_path / "c", workers=1)
    started: list[int] = []

    def start_worker(k: int) -> None:
        started.append(k)
        c.procs[f"node-{k}"] = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True
        )

    monkeypatch.setattr(c, "start_worker", start_worker)
    monkeypatch.setattr(c, "lab_nodes", lambda: ["0123456789ab"] if started else [])
    c.node_dir("node-1").mkdir(parents=True)
    (c.node_dir("node-1") / "node.log").write_text(f"lab node: doctor ok\n{DIED}\n")
    c.procs["node-1"] = subprocess.Popen(["true"], start_new_session=True)
    c.procs["node-1"].wait()
    return c, started


def test_a_lab_node_whose_ray_died_starting_is_started_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    c, started = _cluster(tmp_path, monkeypatch)
    try:
        c.wait_for(nodes=2)
        assert started == [1] and c.restarts["node-1"] == 1
        assert c.node_ids == {"node-1": "0123456789ab"}
        assert capsys.readouterr().err == f"local cluster: node-1 started again: {DIED}\n"
    finally:
        c.stop()


def test_a_head_whose_ray_died_starting_is_started_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """CI lost a cluster test to a head whose raylet died starting beside four lanes."""
    c = LocalCluster(tmp_path / "c", workers=0)
    started: list[str] = []

    def start_head() -> None:
        started.append("head")
        c.procs["head"] = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True
        )

    monkeypatch.setattr(c, "start_head", start_head)
    monkeypatch.setattr(c, "_head_listens", lambda: bool(started))
    monkeypatch.setattr(c, "_head_joined", lambda: bool(started))
    c.node_dir("head").mkdir(parents=True)
    (c.node_dir("head") / "node.log").write_text(f"head: doctor ok\n{DIED}\n")
    c.procs["head"] = subprocess.Popen(["true"], start_new_session=True)
    c.procs["head"].wait()
    try:
        c.wait_for(nodes=1)
        assert started == ["head"] and c.restarts["head"] == 1 and c.head_up
        assert capsys.readouterr().err == f"local cluster: head started again: {DIED}\n"
        c.procs["head"].kill()
        c.procs["head"].wait()
        with pytest.raises(H2LabError, match="cluster node head exited"):
            c.wait_for(nodes=1)  # once up, a head that dies is the caller's
        assert started == ["head"]
    finally:
        c.stop()


def test_a_node_that_exits_otherwise_is_reported_with_its_last_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c, started = _cluster(tmp_path, monkeypatch)
    refused = "h2lab: this machine cannot be a lab node: not root"
    (c.node_dir("node-1") / "node.log").write_text(f"{refused}\n")
    logs = c.temp_dir / "n1" / "session_latest" / "logs"
    logs.mkdir(parents=True)
    (logs / "raylet.out").write_text(
        "[2026-01-01 00:00:00,000 I 41 41] (raylet) main.cc:1: starting\n"
        "[2026-01-01 00:00:01,000 W 41 41] (raylet) agent_manager.cc:2: agent slow\n"
    )
    try:
        with pytest.raises(H2LabError) as exc:
            c.wait_for(nodes=2)
        assert started == []
        said = str(exc.value)
        assert refused in said and "agent_manager.cc:2: agent slow" in said
        assert "main.cc:1" not in said  # only warnings and errors
    finally:
        c.stop()


def test_a_node_is_started_again_at_most_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c, started = _cluster(tmp_path, monkeypatch)
    c.restarts["node-1"] = local.RESTARTS_AT_MOST
    try:
        with pytest.raises(H2LabError, match="cluster node node-1 exited"):
            c.wait_for(nodes=2)
        assert started == []
    finally:
        c.stop()


def test_start_ups_take_turns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "START_LOCK", tmp_path / "start.lock")
    monkeypatch.setattr(local, "START_TIMEOUT_S", 0.5)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys, time\n"
         f"fd = os.open({str(tmp_path / 'start.lock')!r}, os.O_RDONLY | os.O_CREAT)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(30)\n"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        t0 = time.monotonic()
        with local.starting_alone():  # waits its bound, then starts anyway
            waited = time.monotonic() - t0
        assert 0.5 <= waited < 5
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    naps: list[float] = []  # free: taken at once, without a wait (a wall clock would measure
    monkeypatch.setattr(time, "sleep", naps.append)  # the idle class's scheduler)
    with local.starting_alone():
        assert naps == []


def test_the_head_is_up_once_its_raylet_joined_not_when_its_port_listens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = LocalCluster(tmp_path / "c", workers=0)
    c.procs["head"] = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True
    )
    answers = iter([[], [("node", "00000000000a")], [("head", "0123456789ab")]])
    asked: list[int] = []

    def nodes() -> list[tuple[str, str]]:
        asked.append(1)
        return next(answers)

    monkeypatch.setattr(c, "_head_listens", lambda: True)
    monkeypatch.setattr(c, "nodes", nodes)
    monkeypatch.setattr(time, "sleep", lambda s: None)
    try:
        c.wait_for(nodes=1)
        assert len(asked) == 3
    finally:
        c.stop()


def test_status_lines_are_read_as_kind_and_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    said = "head\t127.0.0.2\t0123456789ab\nlab\t127.0.0.2\tba9876543210\nnoise\n"
    monkeypatch.setattr(
        subprocess, "run",
        lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout=said, stderr=""),
    )  # fmt: skip
    c = LocalCluster(tmp_path / "c", workers=0)
    assert c.nodes() == [("head", "0123456789ab"), ("lab", "ba9876543210")]
    assert c.lab_nodes() == ["ba9876543210"]

    def too_slow(*a: object, **k: object) -> None:
        raise subprocess.TimeoutExpired("h2lab", local.STATUS_TIMEOUT_S)

    monkeypatch.setattr(subprocess, "run", too_slow)
    assert c.nodes() == []
