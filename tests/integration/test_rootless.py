"""Rootless mode for real (docs/rootless.md): ``h2lab net check`` run by an ordinary user, and
a host that forbids unprivileged user namespaces.

The tests run as root (like every integration test) and start h2lab with ``setpriv`` as an
ordinary user: ``H2LAB_TEST_USER`` (a name, or a bare uid), else the machine's first user with
uid >= 1000, else uid and gid :data:`SPARE_ID` (no entry in /etc/passwd needed: a fresh CI
machine). Rattan is linked into a folder of that user's: root's cache is private."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from h2lab.net import netns
from h2lab.net.rattan import rattan_binary
from tests.integration.conftest import ROOT

PYTHON = sys.executable
PATH = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"


SPARE_ID = 61_000
"""The test user's uid and gid on a machine without an ordinary user (a fresh CI machine)."""


@dataclass(frozen=True)
class User:
    pw_uid: int
    pw_gid: int


def _test_user() -> User:
    name = os.environ.get("H2LAB_TEST_USER")
    if name and name.isdigit():  # a uid without a passwd entry, as its own gid
        return User(int(name), int(name))
    if name:
        u = pwd.getpwnam(name)
        return User(u.pw_uid, u.pw_gid)
    users = [u for u in pwd.getpwall() if 1000 <= u.pw_uid < 65534]
    if not users:
        return User(SPARE_ID, SPARE_ID)
    first = min(users, key=lambda u: u.pw_uid)
    return User(first.pw_uid, first.pw_gid)


class UserHome:
    """A folder of the user's: runtime dir (state), cache (Rattan, calibration)."""

    def __init__(self, user: User) -> None:
        self.user = user
        self.root = Path(tempfile.mkdtemp(prefix="h2lab-rootless-"))
        self.runtime = self.root / "run"
        self.cache = self.root / "cache"
        for d in (self.runtime, self.cache / "rattan-0.1.1" / "bin"):
            d.mkdir(parents=True)
        for p in [self.root, *self.root.rglob("*")]:
            os.chown(p, user.pw_uid, user.pw_gid)
        # a hard link of root's binary (root's, mode 755: the user may run it, not change it)
        rattan = self.cache / "rattan-0.1.1" / "bin" / "rattan"
        try:
            os.link(rattan_binary(), rattan)
        except OSError:
            shutil.copy2(rattan_binary(), rattan)
        self.runtime.chmod(0o700)

    def env(self) -> list[str]:
        return [
            "env",
            "-i",
            f"PATH={PATH}",
            f"HOME={self.root}",
            f"XDG_RUNTIME_DIR={self.runtime}",
            f"H2LAB_CACHE={self.cache}",
            f"PYTHONPATH={ROOT / 'src'}",
        ]

    def h2lab(
        self, args: list[str], wrapper: tuple[str, ...] = ()
    ) -> subprocess.CompletedProcess[str]:
        u = self.user
        argv = ["setpriv", f"--reuid={u.pw_uid}", f"--regid={u.pw_gid}", "--clear-groups"]
        argv += [*self.env(), *wrapper]
        argv += [PYTHON, "-m", "h2lab", *args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=self.root)

    def files_left(self) -> list[str]:
        """Files (not folders) under the runtime dir."""
        return [str(p) for p in self.runtime.rglob("*") if not p.is_dir()]


@pytest.fixture
def home() -> Iterator[UserHome]:
    h = UserHome(_test_user())
    yield h
    shutil.rmtree(h.root)


def _host_state(uid: int) -> dict[str, list[str]]:
    """What must be the same before and after: the host's links, namespaces, the user's
    processes and the host's net sysctls h2lab sets in its namespaces."""
    keys = ["net.core.rmem_default", "net.ipv4.tcp_allowed_congestion_control"]
    keys += ["net.ipv4.tcp_congestion_control", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"]
    sysctls = subprocess.run(["sysctl", *keys], capture_output=True, text=True).stdout
    procs = subprocess.run(["ps", "-u", str(uid), "-o", "pid=,args="], capture_output=True,
                           text=True).stdout  # fmt: skip
    return {
        "links": sorted(
            ln.split()[0]
            for ln in subprocess.run(
                ["ip", "-br", "link"], capture_output=True, text=True
            ).stdout.splitlines()
        ),
        "netns": netns.list_netns(),
        "procs": procs.splitlines(),
        "sysctls": sysctls.splitlines(),
    }


def test_net_check_as_an_ordinary_user_passes_every_row_and_leaves_nothing(
    home: UserHome,
) -> None:
    before = _host_state(home.user.pw_uid)
    proc = home.h2lab(["net", "check", "rtt=100ms,rate=10mbit,loss=1%", "--json"])
    after = _host_state(home.user.pw_uid)
    print(proc.stdout, proc.stderr)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    by = {(r["metric"], r["direction"]): r for r in rows}
    rtt = by[("rtt", "both")]
    assert rtt["pass"] is True
    assert abs(rtt["measured"] - 100.0) < 1.5
    assert by[("loss", "up")]["pass"] is True and by[("loss", "down")]["pass"] is True
    assert 0.3 <= by[("loss", "down")]["measured"] <= 2.0
    assert by[("emulator_drops", "both")]["measured"] == 0
    assert [r for r in rows if r["pass"] is False] == []
    assert after == before
    assert home.files_left() == []


def test_a_host_that_forbids_user_namespaces_stops_with_the_switch(home: UserHome) -> None:
    # user.max_user_namespaces = 0 in a user namespace the user owns (the host's stays as
    # it is), then h2lab runs there as that user with no capabilities left.
    forbid = "echo 0 > /proc/sys/user/max_user_namespaces && exec setpriv --inh-caps=-all "
    forbid += '--ambient-caps=-all "$@"'
    wrapper = ("unshare", "--user", "--map-current-user", "--keep-caps", "sh", "-c", forbid, "-")
    before = _host_state(home.user.pw_uid)
    proc = home.h2lab(["net", "check", "rtt=10ms", "--quick"], wrapper)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "user.max_user_namespaces = 0" in lines[0]
    assert proc.stdout == ""
    assert _host_state(home.user.pw_uid) == before
    assert list(home.runtime.iterdir()) == []
