"""`h2lab run --cluster`: a Ray cluster of lab nodes on this machine (each its own `h2lab
cluster worker` process, lab state folder and page folder) runs an experiment into the
driver's store; the store matches a local run's, a run moves between executors without
re-running a trial, a client without the token is refused (these share one cluster; what goes
wrong is test_cluster_faults.py).
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from h2lab.cluster.local import LocalCluster
from tests.integration.conftest import H2LAB, h2lab_netns, lab_processes
from tests.integration.test_interrupt import _ok_keys
from tests.timing import RecordProperty, assert_within, paired_ratio

QUICK = """
name = "cluster-quick"
seed = 30
repetitions = 2
timeout_s = 60
[factors]
protocol = ["h1s", "h2s"]
network = ["rtt=40ms,rate=4Mbps"]
page = ["synthetic:n=8,size=20KB,origins=1"]
client = ["h2load", "chromium"]
"""
QUICK_TRIALS = 8

RESUME = """
name = "cluster-resume"
seed = 31
repetitions = 3
timeout_s = 60
[factors]
protocol = ["h1s", "h2s"]
network = ["rtt=40ms,rate=4Mbps"]
page = ["synthetic:n=4,size=20KB,origins=1", "synthetic:n=2,size=60KB,origins=1"]
client = ["h2load"]
"""
RESUME_TRIALS = 12


def _rows(out: Path, sql: str) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` on the store at ``out`` (SQLite values: typed by the query)."""
    db = sqlite3.connect(out / "results.sqlite")
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def _run(
    exp: Path, out: Path, *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [H2LAB, "run", str(exp), "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _on(cluster: LocalCluster) -> list[str]:
    return ["--cluster", cluster.address, "--cluster-secrets", str(cluster.secrets)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path_factory.mktemp("cluster"), workers=2, port=6390) as c:
        yield c


# Beside lanes the two runs' medians once came 749 ms against 599 ms (1 run in 6): the
# comparison is now the interval of the paired ratio over all 8 keys, marked timing (it may run
# again alone, tests/suite.py); marked alone it cost 77 s a run.
@pytest.mark.timing
def test_a_cluster_run_stores_what_a_local_run_stores(
    cluster: LocalCluster, tmp_path: Path, record_property: RecordProperty
) -> None:
    exp = tmp_path / "quick.toml"
    exp.write_text(QUICK)
    on_cluster, local = tmp_path / "cluster", tmp_path / "local"
    done = _run(exp, on_cluster, *_on(cluster))
    assert done.returncode == 0, done.stderr[-3000:]
    assert _run(exp, local).returncode == 0
    sql = "SELECT trial_key, status, pdt_ms, machine, body_bytes FROM trials ORDER BY trial_key"
    remote, here = _rows(on_cluster, sql), _rows(local, sql)
    assert [r[:2] for r in remote] == [r[:2] for r in here]  # key for key, all ok
    assert len(remote) == QUICK_TRIALS and {r[1] for r in remote} == {"ok"}
    assert [r[4] for r in remote] == [r[4] for r in here]  # the same bytes of the same page
    # outcomes agree key for key: the geometric mean of the paired ratios, its interval within
    # a factor 2 either way (tests/timing.py), where the property is decided: a node that ran
    # the page without the link's 4 Mbit/s would load it in about a third of the time (160 KB
    # take 320 ms of the link's ~450). Beside three lanes the two runs meet different load
    # (1.1 [0.967, 1.252], then 1.149 [0.8776, 1.506] against the factor 1.5 it had, n = 8)
    agree = paired_ratio([float(r[2]) for r in remote], [float(r[2]) for r in here])
    assert_within(record_property, "page time on the cluster / here", agree, 1 / 2, 2)
    # the machine column tells the nodes apart: host name and node id
    machines = {str(r[3]) for r in remote}
    assert machines == {f"{os.uname().nodename}/{n}" for n in cluster.node_ids.values()}
    assert {str(r[3]) for r in here} == {os.uname().nodename}
    # artifacts came back: the same files per trial as a local run's
    for key_dir in (local / "artifacts").iterdir():
        assert sorted(p.name for p in (on_cluster / "artifacts" / key_dir.name).iterdir()) == (
            sorted(p.name for p in key_dir.iterdir())
        )
    # each node fetched the page once from the driver, by its id, into its own page folder
    (page_id,) = {str(r[0]) for r in _rows(on_cluster, "SELECT DISTINCT page_digest FROM trials")}
    for name in ("node-1", "node-2"):
        assert (cluster.node_dir(name) / "pages" / page_id / "manifest.json").is_file()
    assert "2 machines ran" in (on_cluster / "report.html").read_text()
    assert h2lab_netns() == [] and lab_processes() == []


def test_a_run_moves_between_executors_without_running_a_trial_twice(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    exp = tmp_path / "resume.toml"
    exp.write_text(RESUME)
    out = tmp_path / "out"
    half = _run(exp, out, "--only", "page=synthetic:n=4,size=20KB,origins=1")
    assert half.returncode == 0, half.stderr[-2000:]
    assert len(_ok_keys(out)) == RESUME_TRIALS // 2
    with (tmp_path / "cluster.stderr").open("w") as stderr:
        proc = subprocess.Popen(
            [H2LAB, "run", str(exp), "--out", str(out), *_on(cluster)],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
    deadline = time.monotonic() + 120
    while len(_ok_keys(out)) < RESUME_TRIALS // 2 + 1 and time.monotonic() < deadline:
        assert proc.poll() is None, (tmp_path / "cluster.stderr").read_text()[-2000:]
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGINT)  # Ctrl-C: the nodes finish their trial and stop
    assert proc.wait(timeout=120) != 0
    after_cluster = _ok_keys(out)
    assert RESUME_TRIALS // 2 < len(after_cluster) < RESUME_TRIALS
    rest = _run(exp, out)
    assert rest.returncode == 0, rest.stderr[-2000:]
    rows = _rows(out, "SELECT trial_key, status, machine FROM trials")
    keys = [str(r[0]) for r in rows]
    assert len(keys) == RESUME_TRIALS == len(set(keys))  # 0 re-run, 0 missing
    assert {r[1] for r in rows} == {"ok"}
    host = os.uname().nodename
    assert any(str(r[2]).startswith(f"{host}/") for r in rows)  # some ran on the cluster
    assert sum(r[2] == host for r in rows) >= RESUME_TRIALS // 2  # the rest here
    assert h2lab_netns() == [] and lab_processes() == []


def test_a_client_without_the_token_is_refused(cluster: LocalCluster, tmp_path: Path) -> None:
    exp = tmp_path / "quick.toml"
    exp.write_text(QUICK)
    out = tmp_path / "out"
    # the cluster's CA but another token: Ray's token authentication refuses it
    wrong_token = tmp_path / "wrong-token"
    shutil.copytree(cluster.secrets, wrong_token)
    (wrong_token / "token").write_text("0" * 64 + "\n")
    done = _run(exp, out, "--cluster", cluster.address, "--cluster-secrets", str(wrong_token))
    assert done.returncode == 2, done.stderr
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith(f"h2lab: command line: --cluster: cannot join {cluster.address}")
    )
    # another cluster's secrets: its TLS is refused before Ray is asked
    other = tmp_path / "other"
    subprocess.run([H2LAB, "cluster", "secrets", str(other)], check=True, capture_output=True)
    done = _run(exp, out, "--cluster", cluster.address, "--cluster-secrets", str(other))
    assert done.returncode == 2
    assert "refused this secrets folder's TLS" in done.stderr.strip().splitlines()[-1]
    assert not out.exists()
    # Ray's own client: the right token but no certificate (no TLS) is refused as well
    probe = (
        "import ray\n"
        "try:\n"
        f"    ray.init(address='{cluster.address}', log_to_driver=False)\n"
        "    print('JOINED')\n"
        "except Exception as exc:\n"
        "    print('REFUSED', type(exc).__name__)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_TLS", "RAY_USE_TLS"))}
    env |= {
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": (cluster.secrets / "token").read_text().strip(),
    }
    python = str(Path(H2LAB).parent / "python")
    try:
        answer = subprocess.run(
            [python, "-c", probe], capture_output=True, text=True, timeout=20, env=env
        ).stdout
    except subprocess.TimeoutExpired as exc:  # Ray keeps trying (joining takes 2-5 s): never in
        answer = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else ""
    assert "JOINED" not in answer, answer
