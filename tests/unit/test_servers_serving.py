"""What a serving server reports when one of its processes has exited."""

from __future__ import annotations

import subprocess
from pathlib import Path

from h2lab.servers import Serving, Watched, exit_text


def _proc(script: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(["sh", "-c", script], stdout=out, stderr=subprocess.STDOUT)


def test_running_processes_have_not_exited(tmp_path: Path) -> None:
    proc = _proc("sleep 30", tmp_path / "a.out")
    try:
        assert Serving(Watched("a", proc, (tmp_path / "a.out",))).exited() is None
    finally:
        proc.kill()
        proc.wait()


def test_an_exited_process_is_named_with_its_code_and_telling_log_line(tmp_path: Path) -> None:
    log = tmp_path / "b.out"
    proc = _proc(
        "echo ready; echo 'panic: send on closed channel'; echo 'goroutine 7 [running]:'; exit 2",
        log,
    )
    proc.wait()
    running = _proc("sleep 30", tmp_path / "a.out")
    try:
        serving = Serving(Watched("a", running, (tmp_path / "a.out",))).also(
            Serving(Watched("backend", proc, (log, tmp_path / "missing.log")))
        )
        assert serving.exited() == "backend exited with code 2: panic: send on closed channel"
        assert serving.logs() == [tmp_path / "a.out", log]
    finally:
        running.kill()
        running.wait()


def test_exit_text_names_signals() -> None:
    assert exit_text(-9) == "signal SIGKILL"
    assert exit_text(-11) == "signal SIGSEGV"
    assert exit_text(3) == "code 3"
