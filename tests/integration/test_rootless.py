"""Rootless mode for real (docs/rootless.md): ``h2lab net check``, ``h2lab run`` (h2load and
Chromium over h1s/h2s/h3 on a lossy link, against the same run as root) and kill -9 then
``clean`` then resume, each run by an ordinary user; and a host that forbids unprivileged
user namespaces.

The tests run as root (like every integration test) and start h2lab with ``setpriv`` as an
ordinary user: ``H2LAB_TEST_USER`` (a name, or a bare uid), else the machine's first user with
uid >= 1000, else uid and gid :data:`SPARE_ID` (no entry in /etc/passwd needed: a fresh CI
machine). Rattan is linked into a folder of that user's: root's cache is private."""

from __future__ import annotations

import csv
import fcntl
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from h2lab.artifacts import CAPTURE_KEYLOG, CAPTURE_LOG, CAPTURE_PCAP
from h2lab.net import netns
from h2lab.net.capture import dumpcap_counts, whole_records_bytes
from h2lab.net.rattan import rattan_binary
from h2lab.net.rmem import RMEM_LOCK
from h2lab.servers.origin import ensure_built as origin_binary
from tests.integration.conftest import ROOT
from tests.integration.test_capture import client_headers_frames
from tests.integration.test_interrupt import EXPERIMENT as INTERRUPTED
from tests.integration.test_interrupt import TOTAL_TRIALS as INTERRUPTED_TRIALS

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
        # hard links of root's binaries (root's, mode 755: the user may run them, not change
        # them): Rattan and the Go origin, which the user's cache would otherwise build
        origin = origin_binary()
        (self.cache / origin.parent.name).mkdir()
        os.chown(self.cache / origin.parent.name, user.pw_uid, user.pw_gid)
        for binary, link in (
            (rattan_binary(), self.cache / "rattan-0.1.1" / "bin" / "rattan"),
            (origin, self.cache / origin.parent.name / origin.name),
        ):
            try:
                os.link(binary, link)
            except OSError:
                shutil.copy2(binary, link)
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

    def argv(self, args: list[str], wrapper: tuple[str, ...] = ()) -> list[str]:
        """``h2lab args`` as the user, with no capability and none of root's groups."""
        u = self.user
        argv = ["setpriv", f"--reuid={u.pw_uid}", f"--regid={u.pw_gid}", "--clear-groups"]
        return [*argv, *self.env(), *wrapper, PYTHON, "-m", "h2lab", *args]

    def h2lab(
        self, args: list[str], wrapper: tuple[str, ...] = (), timeout_s: float = 300
    ) -> subprocess.CompletedProcess[str]:
        argv = self.argv(args, wrapper)
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout_s, cwd=self.root
        )

    def stored_keys(self, out: Path) -> list[str]:
        """The keys of the ok trials in the user's store at ``out``, read as the user (sqlite
        run as root would leave files of root's beside a store being written)."""
        db = out / "results.sqlite"
        if not db.exists():
            return []
        u = self.user
        argv = ["setpriv", f"--reuid={u.pw_uid}", f"--regid={u.pw_gid}", "--clear-groups"]
        argv += ["sqlite3", "-cmd", ".timeout 5000", "-readonly", str(db)]
        argv += ["SELECT trial_key FROM trials WHERE status = 'ok'"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        return done.stdout.splitlines() if done.returncode == 0 else []

    def write(self, name: str, text: str) -> Path:
        """A file of the user's in the home."""
        path = self.root / name
        path.write_text(text)
        os.chown(path, self.user.pw_uid, self.user.pw_gid)
        return path

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
    # under the lock a lab holds while rmem_default is raised (net/rmem.py): the host's own
    # value, not another lane's lab's for the moment its Rattan opens its sockets
    with RMEM_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
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


def _settled_state(uid: int) -> dict[str, list[str]]:
    """:func:`_host_state` once the user's processes are gone: a browser's last processes are
    zombies for a moment after h2lab exits, until init reaps them (bounded: 10 s)."""
    deadline = time.monotonic() + 10
    while _user_processes(uid) and time.monotonic() < deadline:
        time.sleep(0.2)
    return _host_state(uid)


def _user_processes(uid: int) -> list[str]:
    out = subprocess.run(["ps", "-u", str(uid), "-o", "pid=,args="], capture_output=True,
                         text=True).stdout  # fmt: skip
    return out.splitlines()


@pytest.mark.alone
def test_net_check_as_an_ordinary_user_passes_every_row_and_leaves_nothing(
    home: UserHome,
) -> None:
    before = _host_state(home.user.pw_uid)
    proc = home.h2lab(["net", "check", "rtt=100ms,rate=10mbit,loss=1%", "--json"])
    after = _settled_state(home.user.pw_uid)
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


QUICK = """
name = "rootless-quick-{client}"
seed = 34
repetitions = 2
timeout_s = 60
[factors]
protocol = [{protocols}]
network = ["rtt=40ms,rate=20Mbps,loss=1%"]
page = ["synthetic:n=8,size=20KB,origins=1"]
server = ["origin"]
client = ["{client}"]
"""
QUICK_RUNS = {"h2load": '"h1s", "h2s"', "chromium": '"h1s", "h2s", "h3"'}
"""h2load speaks no h3; the origin serves all three."""
OUTCOME = ("status", "failed_requests", "body_bytes", "tcp_connections", "emulator_drops")
"""What a trial's outcome is: the same in root and rootless mode, trial by trial."""


def _rows(out: Path) -> dict[str, dict[str, str]]:
    """The trials of a results folder by key, from its trials.csv (read without writing: the
    store is the user's, and sqlite would leave files of root's beside it)."""
    path = out / "trials.csv"
    if not path.exists():
        return {}
    with path.open(newline="") as f:
        return {r["trial_key"]: r for r in csv.DictReader(f) if r["status"] == "ok"}


def _quick_runs(run: Callable[[Path, Path], subprocess.CompletedProcess[str]], where: Path,
                write: Callable[[str, str], Path]) -> dict[str, dict[str, str]]:  # fmt: skip
    rows: dict[str, dict[str, str]] = {}
    for client, protocols in QUICK_RUNS.items():
        exp = write(f"{client}.toml", QUICK.format(client=client, protocols=protocols))
        done = run(exp, where / client)
        assert done.returncode == 0, done.stderr[-3000:]
        rows |= _rows(where / client)
    return rows


def test_a_quick_run_as_a_user_has_root_modes_outcomes_and_leaves_nothing(
    home: UserHome, tmp_path: Path
) -> None:
    """The same experiments (h2load h1s/h2s, Chromium h1s/h2s/h3, origin, 1% loss) as root
    and as the user: every trial ok in both, with the same outcome (:data:`OUTCOME`)."""

    def as_root(exp: Path, out: Path) -> subprocess.CompletedProcess[str]:
        argv = [PYTHON, "-m", "h2lab", "run", str(exp), "--out", str(out)]
        return subprocess.run(argv, capture_output=True, text=True, timeout=600)

    def as_user(exp: Path, out: Path) -> subprocess.CompletedProcess[str]:
        return home.h2lab(["run", str(exp), "--out", str(out)], timeout_s=600)

    def write_root(name: str, text: str) -> Path:
        (tmp_path / name).write_text(text)
        return tmp_path / name

    root = _quick_runs(as_root, tmp_path / "root", write_root)
    before = _host_state(home.user.pw_uid)
    user = _quick_runs(as_user, home.root / "user", home.write)
    after = _settled_state(home.user.pw_uid)
    assert len(root) == 10 and sorted(user) == sorted(root)
    for key, r in sorted(root.items()):
        u = user[key]
        assert {c: u[c] for c in OUTCOME} == {c: r[c] for c in OUTCOME}, key
        metric = "plt_ms" if r["client"] == "chromium" else "pdt_ms"
        # times differ as two runs of one mode do (1% loss: one RTO more is +200 ms): shown
        print(f"{key}: {metric} root {float(r[metric]):.1f} rootless {float(u[metric]):.1f}")
    assert after == before
    assert home.files_left() == []
    owners = {p.stat().st_uid for p in (home.root / "user").rglob("*")}
    assert owners == {home.user.pw_uid}


def test_kill9_as_a_user_then_clean_then_resume(home: UserHome) -> None:
    """kill -9 of a user's run: the lab's processes go with it (or `h2lab clean` ends them),
    nothing stays on the host, and a rerun stores only the missing trials."""
    exp, out = home.write("interrupt.toml", INTERRUPTED), home.root / "out"
    before = _host_state(home.user.pw_uid)
    argv = home.argv(["run", str(exp), "--out", str(out)])
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, cwd=home.root)  # fmt: skip
    deadline = time.monotonic() + 90
    while not home.stored_keys(out):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    cleaned = home.h2lab(["clean"], timeout_s=60)
    assert cleaned.returncode == 0, cleaned.stderr
    print("clean:", cleaned.stdout, cleaned.stderr)
    assert _settled_state(home.user.pw_uid) == before
    stored = home.stored_keys(out)
    assert 1 <= len(stored) < INTERRUPTED_TRIALS
    done = home.h2lab(["run", str(exp), "--out", str(out)], timeout_s=600)
    assert done.returncode == 0, done.stderr[-3000:]
    keys = home.stored_keys(out)  # one ok row per key: no stored trial was run again
    assert len(keys) == INTERRUPTED_TRIALS == len(set(keys)) and set(stored) <= set(keys)
    assert _settled_state(home.user.pw_uid) == before
    assert home.files_left() == []


SANDBOXED = {"chromium": "--type=renderer", "firefox": "-isForBrowser"}
"""How each browser's page processes are named on their command line (Firefox's fork server,
``-contentproc … -signalPipe``, forks them and keeps no sandbox itself, by design)."""


def _proc(pid: int) -> tuple[str, dict[str, str], int] | None:
    """A process's command line, /proc status fields and user namespace (inode); None when
    it is gone."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        status = dict(
            ln.split(":\t", 1) for ln in Path(f"/proc/{pid}/status").read_text().splitlines()
        )
        return cmd, status, os.stat(f"/proc/{pid}/ns/user").st_ino
    except (OSError, ValueError):
        return None


@pytest.mark.parametrize("browser", ["chromium", "firefox"])
def test_a_users_browser_keeps_its_own_sandbox_and_its_capture_decodes(
    home: UserHome, browser: str
) -> None:
    """Rootless mode starts the browsers as the user without --no-sandbox: while they load,
    each page process runs under a seccomp filter (Seccomp 2) with no new privileges, and
    Chromium's in a user namespace of its sandbox's own. Each trial's capture (dumpcap, in
    rootless mode) holds every packet, and decodes with its keylog to one HEADERS frame per
    request."""
    out = home.root / browser
    argv = home.argv(["load", "synthetic:n=8,size=20KB,origins=1", "--client", browser,
                      "--protocol", "h2s", "--network", "rtt=100ms,rate=10Mbps",
                      "--repeat", "3", "--capture", "pcap", "--out", str(out)])  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            cwd=home.root, text=True)  # fmt: skip
    # each page process as last read, once it had run 0.5 s (its sandbox is set up by then)
    seen: dict[int, tuple[str, dict[str, str], int]] = {}
    first_s: dict[int, float] = {}
    browser_ns: set[int] = set()  # the user namespaces of the browser processes themselves
    deadline = time.monotonic() + 240
    while proc.poll() is None and time.monotonic() < deadline:
        for line in _user_processes(home.user.pw_uid):
            pid = int(line.split()[0])
            if not (found := _proc(pid)):
                continue
            if SANDBOXED[browser] in found[0]:
                if time.monotonic() - first_s.setdefault(pid, time.monotonic()) >= 0.5:
                    seen[pid] = found
            elif found[0].startswith("/usr/lib/chromium/chromium") and "--type=" not in found[0]:
                browser_ns.add(found[2])
        time.sleep(0.05)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr[-3000:]
    assert seen, f"no {browser} page process seen"
    for cmd, status, _ in seen.values():
        print(browser, status["Seccomp"], status["NoNewPrivs"], status["Uid"], cmd[:80])
    for _cmd, status, _ in seen.values():
        assert status["Seccomp"].strip() == "2" and status["NoNewPrivs"].strip() == "1"
        assert status["CapEff"].strip() == "0000000000000000"
    print(f"{browser}: {len(seen)} page processes; browser user namespaces {browser_ns}")
    if browser == "chromium":  # its namespace sandbox: a user namespace below the browser's
        assert browser_ns and {ns for *_, ns in seen.values()}.isdisjoint(browser_ns)
    pcaps = sorted(out.rglob(CAPTURE_PCAP))
    assert len(pcaps) == 3
    for pcap in pcaps:
        with pcap.open("rb") as f:
            packets = whole_records_bytes(f).packets
        log = (pcap.parent / CAPTURE_LOG).read_text()
        assert dumpcap_counts(log) == {"captured": packets, "dropped by kernel": 0}, log
        streams = client_headers_frames(pcap, pcap.parent / CAPTURE_KEYLOG)
        print(f"{pcap.parent.name}: {packets} packets, {len(streams)} client HEADERS frames")
        assert len(streams) == 9  # the document and its 8 images


@pytest.mark.parametrize("server", ["nginx", "h2o", "apache", "haproxy:backend=nginx,buffer=1MB"])
def test_every_server_serves_as_a_user(home: UserHome, server: str) -> None:
    """Each server runs as the user (no user switch) and binds 80/443 in the servers
    namespace (ip_unprivileged_port_start=0 there): h2load's h1s and h2s trials get every
    byte (the origin serves the quick run above)."""
    out = home.root / server.split(":")[0]
    done = home.h2lab(["load", "synthetic:n=4,size=10KB,origins=2", "--server", server,
                       "--protocol", "h1s,h2s", "--network", "rtt=20ms,rate=20Mbps",
                       "--json", "--out", str(out)])  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(done.stdout)
    assert sorted(r["protocol"] for r in rows) == ["h1s", "h2s"]
    for r in rows:
        assert r["status"] == "ok" and not r["failed_requests"], r
        assert r["body_bytes"] >= 4 * 10_000, r
