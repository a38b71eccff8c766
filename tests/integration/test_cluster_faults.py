"""`h2lab run --cluster` when things go wrong: a node killed mid-block costs no trial, bad
clusters are refused in one line (a node of another h2lab commit too), the driver needs no
root, nodes started at once on one host both join, a node whose Ray dies exits saying why, and
SIGTERM stops a node whole (each test starts a Ray cluster of its own, on a port of its own;
test_cluster.py's tests share one).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from h2lab.cluster.local import IP, LocalCluster, starting_alone
from h2lab.cluster.supervise import session_pids
from tests.integration.conftest import H2LAB, h2lab_netns, lab_processes
from tests.integration.test_cluster import QUICK, QUICK_TRIALS, _on, _rows, _run

LINK_BOUND = """
name = "cluster-kill"
seed = 32
repetitions = 5
timeout_s = 60
[factors]
protocol = ["h1s", "h2s"]
network = ["rtt=40ms,rate=1Mbps"]
page = ["synthetic:n=4,size=40KB,origins=1"]
client = ["h2load"]
"""
LINK_BOUND_TRIALS = 10


def test_a_node_killed_mid_block_costs_no_trial(tmp_path: Path) -> None:
    exp = tmp_path / "kill.toml"
    exp.write_text(LINK_BOUND)
    out = tmp_path / "out"
    with LocalCluster(tmp_path / "c", workers=2, port=6392) as c:
        victim = c.node_ids["node-2"]
        with (tmp_path / "run.stderr").open("w") as stderr:
            proc = subprocess.Popen(
                [H2LAB, "run", str(exp), "--out", str(out), *_on(c)],
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,
            )
        _wait_until_mid_block(out, victim, proc)
        c.kill_node("node-2")  # kill -9 of every process of the node
        assert proc.wait(timeout=300) == 0, (tmp_path / "run.stderr").read_text()[-3000:]
        rows = _rows(out, "SELECT trial_key, status, machine, error FROM trials")
        ok = [str(r[0]) for r in rows if r[1] == "ok"]
        assert len(ok) == LINK_BOUND_TRIALS == len(set(ok))  # every block finished once
        lost = [r for r in rows if r[1] == "failed"]
        assert len(lost) == 1 and str(lost[0][2]).endswith(victim), lost
        assert "lost during this attempt" in str(lost[0][3])
        # the lost attempt's trial ran again, on the node that was left
        again = [r for r in rows if r[0] == lost[0][0] and r[1] == "ok"]
        assert len(again) == 1 and not str(again[0][2]).endswith(victim)
        state = c.node_dir("node-2") / "state"
        cleaned = subprocess.run(
            [H2LAB, "clean"], env={**os.environ, "H2LAB_STATE": str(state)},
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert cleaned.returncode == 0, cleaned.stderr
    assert h2lab_netns() == [] and lab_processes() == []
    assert not state.exists() or list(state.iterdir()) == []
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert "h2lab" not in links and "vL1" not in links


def _wait_until_mid_block(out: Path, node: str, proc: subprocess.Popen[bytes]) -> None:
    """Until ``node`` stored the first trial of a block (its second one is running)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the run ended before the node could be killed"
        if (out / "results.sqlite").exists():
            try:
                rows = _rows(out, "SELECT block, machine FROM trials WHERE status = 'ok'")
            except sqlite3.OperationalError:
                rows = []
            blocks = [r[0] for r in rows if str(r[1]).endswith(node)]
            if any(blocks.count(b) == 1 for b in blocks):
                return
        time.sleep(0.05)
    raise AssertionError(f"node {node} never stored half a block")


def test_bad_clusters_are_refused_in_one_line(tmp_path: Path) -> None:
    exp = tmp_path / "quick.toml"
    exp.write_text(QUICK)
    out = tmp_path / "out"
    with LocalCluster(tmp_path / "c", workers=0, port=6393) as c:
        # nothing listens there
        done = _run(exp, out, "--cluster", f"{IP}:6394", "--cluster-secrets", str(c.secrets))
        assert done.returncode == 2 and "cannot reach" in done.stderr, done.stderr
        # a head without lab nodes
        done = _run(exp, out, *_on(c))
        assert done.returncode == 2, done.stderr
        assert "has no live node offering h2lab_lab" in done.stderr.strip().splitlines()[-1]
        # a lab node that is not root refuses to start
        worker = subprocess.run(
            ["runuser", "-u", "nobody", "--", H2LAB, "cluster", "worker", "--address",
             c.address, "--ip", IP, "--secrets", str(c.secrets)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert worker.returncode == 2
        assert worker.stderr.strip().splitlines() == [
            "h2lab: this machine cannot be a lab node: not root: labs need network namespaces "
            "(run h2lab cluster worker as root)"
        ]
        # a node that offers a lab (plain `ray start`) but fails h2lab doctor: refused by the
        # driver with its reason before it gets a block
        _start_node_without_nginx(c, tmp_path)
        done = _run(exp, out, *_on(c))
        assert done.returncode == 2, done.stderr
        last = done.stderr.strip().splitlines()[-1]
        assert re.search(r"no lab node may run trials: h2lab doctor: nginx missing", last), last
    assert not out.exists()


def _start_node_without_nginx(c: LocalCluster, tmp_path: Path) -> None:
    from h2lab.cluster.nodes import NODE_ENV, worker_argv
    from h2lab.cluster.secrets import ray_env

    venv_bin = str(Path(H2LAB).parent)
    env = {**ray_env(c.secrets, IP), **NODE_ENV, "PATH": f"{venv_bin}:/usr/bin:/bin"}  # no sbin
    env["H2LAB_STATE"] = str(tmp_path / "bare-state")
    c.node_dir("bare").mkdir(parents=True)
    with (c.node_dir("bare") / "node.log").open("ab") as log:
        c.procs["bare"] = subprocess.Popen(
            worker_argv(c.address, IP),
            env={**os.environ, **env},
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    c.wait_for(nodes=2)


def test_the_driver_needs_no_root() -> None:
    # outside pytest's folders, which only root may enter
    top = Path(tempfile.mkdtemp(prefix="h2lab-user-"))
    try:
        _run_as_nobody(top)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    assert h2lab_netns() == [] and lab_processes() == []


def _run_as_nobody(top: Path) -> None:
    from h2lab.cluster.secrets import make_secrets

    home = top / "user"
    (home / "cache").mkdir(parents=True)
    (home / "quick.toml").write_text(QUICK)
    c = LocalCluster(top / "c", workers=1, port=6395, head_user="nobody")
    make_secrets(c.secrets)
    top.chmod(0o755)
    subprocess.run(["chown", "-R", "nobody", str(home), str(c.folder)], check=True)
    with c:
        done = subprocess.run(
            ["runuser", "-u", "nobody", "--", "env", f"HOME={home}",
             f"H2LAB_CACHE={home / 'cache'}", H2LAB, "run", str(home / "quick.toml"),
             "--out", str(home / "out"), *_on(c)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = _rows(home / "out", "SELECT status, machine FROM trials")
    assert len(rows) == QUICK_TRIALS and {r[0] for r in rows} == {"ok"}
    assert {r[1] for r in rows} == {f"{os.uname().nodename}/{c.node_ids['node-1']}"}
    nobody = int(subprocess.run(["id", "-u", "nobody"], capture_output=True, text=True).stdout)
    assert (home / "out" / "results.sqlite").stat().st_uid == nobody


# Alone: two raylets starting at once on a machine at a load of 8 died on their own (twice, in
# fresh clones of 6c5472f and 38fefc4, the second with Ray's agents given 180 s to register):
# Ray's start-up under a starved CPU, not the race this test is about, and this test starts its
# nodes itself (no restart, as LocalCluster's start does).
@pytest.mark.alone
def test_nodes_started_at_once_join_and_a_node_whose_ray_dies_exits_saying_why(
    tmp_path: Path,
) -> None:
    # issue #44: two lab nodes of one host (one lab state folder, each its default Ray folder
    # in it) started at the same moment: the second one's raylet died (its socket's name was
    # the first one's), and its `h2lab cluster worker` ran on, silent
    with LocalCluster(tmp_path / "c", workers=0, port=6388) as c:
        c.node_ray_dirs = False
        c.node_env = {f"node-{k}": {"H2LAB_STATE": "/run/h2lab"} for k in (1, 2)}
        with starting_alone():  # no other local cluster of the machine starts meanwhile
            c.start_worker(1)
            c.start_worker(2)
            deadline = time.monotonic() + 60
            while len(c.lab_nodes()) < 2:
                assert time.monotonic() < deadline, "two lab nodes started at once did not join"
                assert all(p.poll() is None for p in c.procs.values()), _logs(c)
                time.sleep(1)
        folders = [Path(f"/run/h2lab/cluster/ray-{c.procs[f'node-{k}'].pid}") for k in (1, 2)]
        assert all((f / "session_latest").is_dir() for f in folders)
        # the raylet of node 1 killed: its node stops whole, exit 1, one line saying so
        node = c.procs["node-1"]
        raylet = [pid for pid, name in session_pids(node.pid).items() if name == "raylet"]
        assert len(raylet) == 1
        os.kill(raylet[0], signal.SIGKILL)
        assert node.wait(timeout=15) == 1
        last = (c.node_dir("node-1") / "node.log").read_text().strip().splitlines()[-1]
        assert re.match(r"h2lab: (Ray's raylet \(pid \d+\) died|ray start exited with 1)", last)
        assert "raylet" in last
        assert session_pids(node.pid) == {} and not folders[0].exists()
        # SIGTERM to the head (as systemd or a pod sends it): every process of it stops
        print("head stopped in", _stop_whole(c.procs["head"], "head"))
        # node 2, its head gone (Ray's agents outlived `ray start` then): the same
        print("node-2 stopped in", _stop_whole(c.procs["node-2"], "node-2"))
        assert not folders[1].exists()
    assert h2lab_netns() == [] and lab_processes() == []


def _stop_whole(proc: subprocess.Popen[bytes], name: str) -> float:
    """SIGTERM to a node's `h2lab cluster` process; seconds until every process of its session
    is gone (bounded: 15 s); it exits 0."""
    t0 = time.monotonic()
    os.kill(proc.pid, signal.SIGTERM)
    while session_pids(proc.pid):
        assert time.monotonic() - t0 < 15, f"{name}: {session_pids(proc.pid)} left after 15 s"
        time.sleep(0.1)
    assert proc.wait(timeout=5) == 0
    return round(time.monotonic() - t0, 1)


def _logs(c: LocalCluster) -> str:
    return "\n".join((c.node_dir(n) / "node.log").read_text()[-1500:] for n in c.procs)


def test_a_node_of_another_h2lab_commit_is_refused_naming_both(tmp_path: Path) -> None:
    from h2lab.version import short_commit

    exp = tmp_path / "quick.toml"
    exp.write_text(QUICK)
    out = tmp_path / "out"
    other = "0123456789ab" + "0" * 28
    c = LocalCluster(tmp_path / "c", workers=1, port=6389)
    c.node_env = {"node-1": {"H2LAB_COMMIT": other}}
    with c:
        done = _run(exp, out, *_on(c))
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "no lab node may run trials: this node runs h2lab " in last, last
    assert "(commit 0123456789ab), the driver h2lab " in last, last
    assert f"(commit {short_commit()}): run the same h2lab commit" in last, last
    assert not (out / "results.sqlite").exists()
