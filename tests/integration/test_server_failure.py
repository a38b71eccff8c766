"""Issue #6: a server that fails to start fails its trials with the server's own error line,
the run goes on with the other servers, and nothing is left running; a rerun gives up a trial
that failed every attempt of two runs. A server that dies during a trial fails that trial by
name, leaves its log in the trial's artifacts, and is started again for the next one."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
from pathlib import Path

import pytest

from h2lab import clients
from h2lab.clients import LoadContext, LoadResult
from h2lab.pages import Page
from h2lab.spec.registry import Entry
from tests.integration.conftest import H2LAB, lab_processes, run_experiment

EXPERIMENT = """
name = "server-failure"
seed = 3
[factors]
protocol = ["h1s", "h2s"]
network = ["rtt=2ms"]
page = ["synthetic:n=2,size=1KB,origins=1"]
server = ["h2o", "nginx"]
"""


def _path_without(tmp_path: Path, missing: str) -> str:
    """A PATH with every program of the system's but ``missing``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for folder in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        if not Path(folder).is_dir():
            continue
        for exe in Path(folder).iterdir():
            link = bin_dir / exe.name
            if exe.name != missing and not link.exists():
                link.symlink_to(exe)
    return str(bin_dir)


def test_missing_server_binary_fails_its_trials_and_the_run_goes_on(tmp_path: Path) -> None:
    exp = tmp_path / "exp.toml"
    exp.write_text(EXPERIMENT)
    out = tmp_path / "out"
    env = {**os.environ, "PATH": _path_without(tmp_path, "h2o")}
    done = subprocess.run(
        [H2LAB, "run", str(exp), "--out", str(out)], env=env, capture_output=True, timeout=300
    )
    assert done.returncode == 0, done.stderr.decode()
    db = sqlite3.connect(out / "results.sqlite")
    rows = db.execute("SELECT server, protocol, status, error FROM trials").fetchall()
    for row in rows:
        print(row)
    h2o = [r for r in rows if r[0] == "h2o"]
    assert len(h2o) == 2 and all(r[2] == "failed" for r in h2o)
    assert all(r[3].startswith("server h2o did not start: ") and "h2o" in r[3][26:] for r in h2o)
    assert [r[2] for r in rows if r[0] == "nginx"] == ["ok", "ok"]
    assert lab_processes() == []

    # Resumed: the h2o trials are attempted once more (nginx's are done); resumed again, they
    # have failed every attempt of two runs and are given up, by name, without a new row.
    stderr = []
    for _ in range(2):
        again = subprocess.run(
            [H2LAB, "run", str(exp), "--out", str(out)], env=env, capture_output=True, timeout=300
        )
        assert again.returncode == 0, again.stderr.decode()
        stderr.append(again.stderr.decode())
    rows = db.execute("SELECT server, status FROM trials").fetchall()
    assert sorted(rows) == [("h2o", "failed")] * 4 + [("nginx", "ok")] * 2
    assert "trial given up" not in stderr[0]
    given_up = [ln for ln in stderr[1].splitlines() if "trial given up" in ln]
    assert len(given_up) == 2 and all(
        "h2o" in ln and "failed all 2 attempts" in ln for ln in given_up
    )
    assert lab_processes() == []


class _KillsTheServerFirst(clients.ClientAdapter):
    """h2load, except that before its first load it kills the server (SIGKILL), as a crash."""

    name = "h2load"

    def __init__(self) -> None:
        self.inner = clients.get("h2load")
        self.protocols = self.inner.protocols
        self.loads = 0

    def version(self) -> str:
        return self.inner.version()

    def load(self, page: Page, protocol: str, ctx: LoadContext) -> LoadResult:
        self.loads += 1
        if self.loads == 1:
            subprocess.run(["pkill", "-KILL", "-x", "h2lab-origin"], check=True)
        return self.inner.load(page, protocol, ctx)

    def close(self) -> None:
        self.inner.close()


def test_a_server_dying_fails_its_trial_by_name_keeps_its_log_and_is_restarted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(clients.REGISTRY.entries, "crashy", Entry(lambda _: _KillsTheServerFirst()))
    records = run_experiment(
        tmp_path,
        "server-dies",
        {
            "protocol": ["h2s"],
            "network": ["rtt=2ms"],
            "page": ["synthetic:n=2,size=1KB,origins=1"],
            "server": ["origin"],
            "client": ["crashy"],
        },
        seed=5,
        repetitions=2,
    )
    first, second = records
    print(first.error)
    assert first.status == "failed"
    assert first.error is not None
    assert first.error.startswith(
        "server origin died during the trial (h2lab-origin exited with signal SIGKILL"
    )
    [kept] = tmp_path.glob("artifacts/*.1/server-origin.out")  # the failed trial's alone
    assert "h2lab-origin ready" in kept.read_text()
    # and the link's state at the end (a link that carried nothing would show it)
    [state] = tmp_path.glob("artifacts/*.1/link-state.txt")
    text = state.read_text()
    assert "rattan running: True" in text and "emulator drops: 0" in text
    assert re.search(r"RX:.*\n\s+[1-9]\d*\s+[1-9]\d*", text), text  # bytes and packets came in
    # the client's sockets at the end (none here: the server was gone before h2load connected)
    assert "$ ss -t -a -n -i (client namespace)\nState" in text
    assert (state.parent / "link-rattan.log").is_file()
    # started again: the next trial loads the page
    assert second.status == "ok" and second.body_bytes is not None
    assert second.body_bytes >= 2 * 1000
    assert lab_processes() == []
