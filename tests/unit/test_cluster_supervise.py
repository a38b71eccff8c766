"""The watcher of ``ray start --block`` (h2lab.cluster.supervise), with a fake ``ray start``: a
shell script that starts a ``raylet`` (a copy of ``sleep``) and writes Ray's log layout."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from h2lab.cluster.supervise import NodeDied, Watch, group_pids, last_error_line

BIND_ERROR = (
    "[2026-01-01 00:00:00,123 E 41 41] (raylet) grpc_server.cc:137: Failed to start the grpc "
    "server: bind: Address already in use"
)
AT_ONCE_S = 20.0
"""'At once' for the watcher: well before Ray's own 30 s, yet loose enough for a run at the
idle scheduling class beside the alone tests, where a process may wait seconds for a CPU."""

FAKE_RAY = """#!/bin/sh
# $1: Ray's folder; $2: what to do after the raylet started
logs="$1/session_latest/logs"
mkdir -p "$logs"
echo '[2026-01-01 00:00:00,000 I 41 41] (raylet) main.cc:1: starting' > "$logs/raylet.out"
echo '{bind_error}' >> "$logs/raylet.out"
"$1/raylet" 300 &
echo $! > "$1/raylet.pid"
case "$2" in
  exit1) sleep 0.5; exit 1 ;;
  leave) sh -c 'trap "" TERM; exec sleep 300' & trap 'exit 0' TERM; while :; do sleep 0.1; done ;;
  *) trap 'kill $(cat "$1/raylet.pid"); exit 0' TERM; while :; do sleep 0.1; done ;;
esac
""".replace("{bind_error}", BIND_ERROR)


@pytest.fixture
def ray_dir(tmp_path: Path) -> Path:
    (tmp_path / "ray").mkdir()
    shutil.copy(shutil.which("sleep") or "/bin/sleep", tmp_path / "ray" / "raylet")
    script = tmp_path / "ray-start"
    script.write_text(FAKE_RAY)
    script.chmod(0o755)
    return tmp_path / "ray"


def _watch(ray_dir: Path, what: str, said: list[str], stop_s: float = 5.0) -> Watch:
    argv = [str(ray_dir.parent / "ray-start"), str(ray_dir), what]
    return Watch(argv, dict(os.environ), ray_dir, say=said.append, stop_s=stop_s)


def _raylet(ray_dir: Path) -> int:
    deadline = time.monotonic() + 10
    while not (ray_dir / "raylet.pid").exists() or not (ray_dir / "raylet.pid").read_text():
        assert time.monotonic() < deadline, "the fake ray start did not start its raylet"
        time.sleep(0.02)
    return int((ray_dir / "raylet.pid").read_text())


def _later(seconds: float, action: object) -> threading.Timer:
    timer = threading.Timer(seconds, action)  # type: ignore[arg-type]
    timer.start()
    return timer


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _kill_once_seen(watch: Watch) -> None:
    deadline = time.monotonic() + 10
    while watch.raylet is None:
        assert time.monotonic() < deadline, "the watcher never saw the raylet"
        time.sleep(0.02)
    os.kill(watch.raylet, signal.SIGKILL)


def test_a_dead_raylet_ends_the_node_with_its_last_error_line(ray_dir: Path) -> None:
    said: list[str] = []
    watch = _watch(ray_dir, "run", said)
    _later(0.0, lambda: _kill_once_seen(watch))
    t0 = time.monotonic()
    with pytest.raises(NodeDied) as exc:
        watch.run()
    assert time.monotonic() - t0 < AT_ONCE_S
    line = exc.value.line()
    assert line.startswith("Ray's raylet (pid ") and line.endswith(
        f"died: {BIND_ERROR.split('(raylet) ')[1]}"
    ), line
    assert exc.value.exit_code == 1
    assert watch.proc is not None and group_pids(watch.proc.pid) == {}  # the node is gone


def test_a_raylet_dead_during_start_up_ends_the_node_at_once(ray_dir: Path) -> None:
    # as Ray's start-up does, the fake ray start does not look at its raylet: it stays a zombie.
    # It keeps the Popen: one dropped at once polls in __del__, and reaped a raylet already gone
    # (then no process was ever seen to die; the test hung until its timeout, 1 run in 8)
    code = (
        "import subprocess, sys, time\n"
        "raylet = subprocess.Popen([sys.argv[1] + '/raylet', '0'])\n"
        "time.sleep(300)\n"
    )
    watch = Watch([sys.executable, "-c", code, str(ray_dir)], dict(os.environ), None, say=print)
    t0 = time.monotonic()
    with pytest.raises(NodeDied, match=r"^Ray's raylet \(pid \d+\) died$"):
        watch.run()
    assert time.monotonic() - t0 < AT_ONCE_S


def test_ray_start_that_exits_by_itself_ends_the_node_saying_how(ray_dir: Path) -> None:
    said: list[str] = []
    with pytest.raises(NodeDied) as exc:
        _watch(ray_dir, "exit1", said).run()
    assert exc.value.line() == (
        "ray start exited with 1; the raylet's last error: grpc_server.cc:137: Failed to start "
        "the grpc server: bind: Address already in use"
    )


def test_sigterm_stops_ray_start_and_kills_what_it_left(ray_dir: Path) -> None:
    said: list[str] = []
    watch = _watch(ray_dir, "leave", said)

    def stop_once_started() -> None:
        _raylet(ray_dir)
        os.kill(os.getpid(), signal.SIGTERM)

    _later(0.0, stop_once_started)
    t0 = time.monotonic()
    assert watch.run() == 0
    assert time.monotonic() - t0 < AT_ONCE_S
    assert said == ["SIGTERM: stopping the Ray node"]
    assert watch.proc is not None and group_pids(watch.proc.pid) == {}  # raylet, sleep: gone
    assert signal.getsignal(signal.SIGTERM) is not watch._on_signal  # handlers given back


def test_a_node_that_does_not_stop_in_time_is_killed(tmp_path: Path) -> None:
    said: list[str] = []
    argv = ["sh", "-c", "trap '' TERM; exec sleep 300"]
    watch = Watch(argv, dict(os.environ), None, say=said.append, stop_s=0.5)

    def stop_once_deaf() -> None:  # the shell has set its trap and become the sleep
        deadline = time.monotonic() + 10
        while watch.proc is None or _comm(watch.proc.pid) != "sleep":
            assert time.monotonic() < deadline, "the deaf node never started"
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGTERM)

    _later(0.0, stop_once_deaf)
    t0 = time.monotonic()
    assert watch.run() == 0
    assert 0.5 <= time.monotonic() - t0 < AT_ONCE_S
    assert said[-1] == "the Ray node did not stop within 0.5 s: killed"


def test_the_error_line_is_the_last_error_of_the_log(tmp_path: Path) -> None:
    (tmp_path / "raylet.out").write_text(
        f"{BIND_ERROR}\n[2026-01-01 00:00:01,000 F 41 41] (raylet) node_manager.cc:9: lost "
        "the GCS\n[2026-01-01 00:00:01,001 I 41 41] (raylet) main.cc:2: exiting\n"
    )
    assert last_error_line(tmp_path, "raylet") == "node_manager.cc:9: lost the GCS"
    with (tmp_path / "raylet.out").open("a") as out:  # Ray's statistics are no error
        out.write("[2026-01-01 00:00:02,000 I 41 41] (raylet) stats.cc:1: - bytes errored: 0\n")
    assert last_error_line(tmp_path, "raylet") == "node_manager.cc:9: lost the GCS"
    (tmp_path / "raylet.err").write_text("Traceback\nRuntimeError: no room\n")
    assert last_error_line(tmp_path, "raylet") == "RuntimeError: no room"  # .err first
    assert last_error_line(tmp_path, "gcs_server") is None
    assert last_error_line(None, "raylet") is None


def test_a_child_of_the_watcher_gets_sigterm_when_the_watcher_dies(tmp_path: Path) -> None:
    # the watcher is killed -9: its ray start (here: a shell that records SIGTERM) is told
    code = (
        "import subprocess, signal, sys\n"
        "from h2lab import procs\n"
        "p = subprocess.Popen(['sh', '-c', sys.argv[1]], "
        "preexec_fn=procs.death_signal_setup(signal.SIGTERM))\n"
        "print(p.pid, flush=True)\n"
        "signal.pause()\n"
    )
    mark, ready = tmp_path / "got-sigterm", tmp_path / "trap-set"
    child = f"trap 'echo TERM > {mark}; exit 0' TERM; : > {ready}; while :; do sleep 0.05; done"
    watcher = subprocess.Popen(
        [sys.executable, "-c", code, child], stdout=subprocess.PIPE, text=True
    )
    assert watcher.stdout is not None
    with watcher.stdout:
        pid = int(watcher.stdout.readline())
    deadline = time.monotonic() + 5
    while not ready.exists():
        assert time.monotonic() < deadline, "the child never set its trap"
        time.sleep(0.02)
    watcher.kill()
    watcher.wait()
    deadline = time.monotonic() + 5
    while not mark.exists():
        assert time.monotonic() < deadline, f"child {pid} got no SIGTERM"
        time.sleep(0.02)
    assert mark.read_text().strip() == "TERM"
