"""One ``h2lab run`` at a time per results folder (issue #44): a second is refused at once, in
one line naming the folder and the holder, with nothing written; the lock goes with its holder,
``kill -9`` included."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from h2lab.errors import SpecError
from h2lab.store.lock import RUN_LOCK, run_lock

H2LAB = Path(sys.executable).parent / "h2lab"
HOLD = """
import sys, time
from pathlib import Path
from h2lab.store.lock import run_lock
with run_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(60)
"""
EXPERIMENT = """name = "busy"
seed = 1
[factors]
protocol = ["h2s"]
network = ["cable"]
page = ["synthetic:n=2,size=1KB"]
"""


def test_a_second_lock_of_a_folder_is_refused_until_the_first_ends(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with run_lock(out):
        assert (out / RUN_LOCK).read_text() == f"{os.getpid()}\n"
        with pytest.raises(SpecError) as refused, run_lock(out):
            pass
        assert str(refused.value) == (
            f"command line: --out: {out} is being written by another h2lab run "
            f"(pid {os.getpid()}); wait for it to end or choose another folder"
        )
    with run_lock(out):  # released with the first
        pass


def test_a_file_is_not_a_results_folder(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(SpecError, match=r"--out: .* is not a folder"), run_lock(tmp_path / "f"):
        pass


def _holder(out: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(out)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def test_h2lab_run_into_a_folder_another_run_holds_is_refused_and_writes_nothing(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    exp = tmp_path / "busy.toml"
    exp.write_text(EXPERIMENT)
    holder = _holder(out)
    try:
        t0 = time.monotonic()
        done = subprocess.run(
            [str(H2LAB), "run", str(exp), "--out", str(out)],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        elapsed_s = time.monotonic() - t0
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and f"--out: {out} is being written by another h2lab run" in lines[0]
        assert f"(pid {holder.pid})" in lines[0]
        assert sorted(p.name for p in out.iterdir()) == [RUN_LOCK]  # nothing written
        assert elapsed_s < 30
    finally:
        holder.send_signal(signal.SIGKILL)  # the lock goes with its holder, kill -9 included
        holder.wait(10)
        assert holder.stdout is not None
        holder.stdout.close()
    with run_lock(out):
        assert (out / RUN_LOCK).read_text() == f"{os.getpid()}\n"


def test_a_reader_testing_the_lock_does_not_refuse_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader of the store takes the lock shared for an instant (store.tables.opening): a
    run that meets it waits for it instead of being refused as if by another run."""
    import fcntl
    import threading

    from h2lab.store import lock

    monkeypatch.setattr(lock, "READERS_WAIT_S", 5.0)  # a loaded machine fires the timer late
    out = tmp_path / "out"
    out.mkdir()
    fd = os.open(out / RUN_LOCK, os.O_RDONLY | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_SH)
    threading.Timer(0.2, os.close, (fd,)).start()  # the reader is done in 0.2 s
    t0 = time.monotonic()
    with run_lock(out):
        waited = time.monotonic() - t0
    assert waited > 0.15  # it waited for the reader, and then ran
    monkeypatch.setattr(lock, "READERS_WAIT_S", 0.3)
    fd = os.open(out / RUN_LOCK, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_SH)  # a shared lock that stays: refused after the wait
    try:
        with pytest.raises(SpecError, match="another h2lab run"), run_lock(out):
            pass
    finally:
        os.close(fd)
