"""Chaos soak on a local Ray cluster (issue #44), beside :mod:`h2lab.cluster.local` which it
drives, for bench/chaos.py and tests/integration/test_chaos.py: one ``h2lab run --cluster`` of
short trials on two lab nodes, a lab node killed (``kill -9`` of its whole session) every
``kill_every`` ok trials and started again, the driver killed once with ``kill -9`` and the
same command run again. At the end every trial key is stored ok exactly once, and after the
cluster stops and ``h2lab clean`` runs on each node, no namespace, veth, lab process, Ray
process, Ray session or temporary folder is left. The driver's open file descriptors and
resident memory are sampled through the run (the first sample after the warm-up against the
last). Needs root.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from h2lab.cluster.local import H2LAB, LocalCluster

EXPERIMENT = """name = "chaos"
seed = 44
repetitions = {reps}
timeout_s = 60
retries = 2
[factors]
protocol = ["h1s", "h2s"]
network = ["rtt=2ms"]
page = ["synthetic:n=4,size=4KB,origins=1"]
client = ["h2load"]
"""
FLAT_TOLERANCE = 0.10
"""Last sample against the first after the warm-up: at most this much more (and 8 fds)."""
WARM_UP = 0.10
"""Share of the trials before the first sample that counts."""
RUN_TIMEOUT_S = 7200.0


@dataclass(frozen=True)
class Sample:
    ok_trials: int
    fds: int
    rss_kib: int


@dataclass
class Soak:
    trials: int
    node_kills: list[tuple[int, str]] = field(default_factory=list)
    """(ok trials stored when killed, node)"""
    driver_kills: list[int] = field(default_factory=list)
    samples: list[list[Sample]] = field(default_factory=list)
    """per driver process, its samples"""
    duration_s: float = 0.0
    ok_keys: int = 0
    keys_ok_twice: int = 0
    failed_attempts: int = 0
    leftovers: list[str] = field(default_factory=list)
    driver_exits: list[int] = field(default_factory=list)

    def warm(self, samples: list[Sample]) -> list[Sample]:
        """A driver's samples once it stored :data:`WARM_UP` of the trials it had to run, and
        while trials were left."""
        if not samples:
            return []
        start = samples[0].ok_trials
        return [
            s
            for s in samples
            if s.ok_trials - start >= WARM_UP * (self.trials - start) and s.ok_trials < self.trials
        ]  # the report written after the last trial is not the run's steady state

    def flat(self) -> list[str]:
        """Why the driver's figures are not flat (empty: they are)."""
        why = []
        for k, samples in enumerate(self.samples):
            counted = self.warm(samples)
            if len(counted) < 2:
                continue
            first, last = counted[0], counted[-1]
            if last.fds > first.fds * (1 + FLAT_TOLERANCE) + 8:
                why.append(f"driver {k + 1}: fds {first.fds} -> {last.fds}")
            if last.rss_kib > first.rss_kib * (1 + FLAT_TOLERANCE):
                why.append(f"driver {k + 1}: rss {first.rss_kib} -> {last.rss_kib} KiB")
        return why

    def lines(self) -> list[str]:
        out = [
            f"trials_total {self.trials}  ok_keys {self.ok_keys}  keys_ok_more_than_once "
            f"{self.keys_ok_twice}  failed_attempts {self.failed_attempts}",
            f"duration_s {self.duration_s:.0f}  node_kills {len(self.node_kills)} at "
            f"{[n for n, _ in self.node_kills]}  driver_kills {self.driver_kills}  "
            f"driver_exits {self.driver_exits}",
        ]
        for k, samples in enumerate(self.samples):
            counted = self.warm(samples) or samples
            if counted:
                first, last = counted[0], counted[-1]
                out.append(
                    f"driver {k + 1}: samples {len(samples)}  fds first {first.fds} last "
                    f"{last.fds} max {max(s.fds for s in samples)}  rss_MiB first "
                    f"{first.rss_kib / 1024:.0f} last {last.rss_kib / 1024:.0f} max "
                    f"{max(s.rss_kib for s in samples) / 1024:.0f}  (at ok trials "
                    f"{first.ok_trials} and {last.ok_trials})"
                )
        out.append(f"leftovers {self.leftovers or 'none'}")
        return out


def ok_trials(out: Path) -> int:
    """Trials stored ok so far (0 before the store exists or while it is locked)."""
    try:
        db = sqlite3.connect(f"file:{out / 'results.sqlite'}?mode=ro", uri=True, timeout=1)
    except sqlite3.OperationalError:
        return 0
    try:
        return int(db.execute("SELECT COUNT(*) FROM trials WHERE status = 'ok'").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        db.close()


def sample(pid: int, ok: int) -> Sample | None:
    try:
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    rss = next((int(ln.split()[1]) for ln in status.splitlines() if ln.startswith("VmRSS:")), 0)
    return Sample(ok, fds, rss)


def soak(
    folder: Path,
    trials: int,
    *,
    kill_every: int,
    driver_kill_at: int | None,
    port: int,
    say: Callable[[str], None] = print,
) -> Soak:
    """Run the soak in ``folder``; the figures."""
    exp = folder / "chaos.toml"
    exp.write_text(EXPERIMENT.format(reps=trials // 2))
    out = folder / "out"
    result = Soak(trials)
    start = time.monotonic()
    with LocalCluster(folder / "cluster", workers=2, port=port) as c:
        argv = [*H2LAB, "run", str(exp), "--out", str(out)]
        argv += ["--cluster", c.address, "--cluster-secrets", str(c.secrets)]
        while True:
            result.samples.append([])
            log = (folder / f"driver-{len(result.samples)}.log").open("wb")
            driver = subprocess.Popen(
                argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True
            )
            killed = _watch(c, driver, out, result, kill_every, driver_kill_at, say)
            log.close()
            if not killed:
                break
        result.duration_s = time.monotonic() - start
        _tally(out, result)
    result.leftovers = leftovers(c)
    return result


def _watch(
    c: LocalCluster,
    driver: subprocess.Popen[bytes],
    out: Path,
    result: Soak,
    kill_every: int,
    driver_kill_at: int | None,
    say: Callable[[str], None],
) -> bool:
    """Sample the driver, kill a node at every ``kill_every`` ok trials (the k-th kill at k
    times it); True when the driver was killed here (to be started again)."""
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while driver.poll() is None:
        if time.monotonic() > deadline:
            os.killpg(driver.pid, signal.SIGKILL)
            raise TimeoutError("the soak did not end in time")
        ok = ok_trials(out)
        s = sample(driver.pid, ok)
        if s is not None:
            result.samples[-1].append(s)
        if driver_kill_at is not None and not result.driver_kills and ok >= driver_kill_at:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()
            result.driver_kills.append(ok)
            say(f"driver killed at {ok} ok trials")
            return True
        if kill_every * (len(result.node_kills) + 1) <= ok < result.trials:
            victim = 1 + len(result.node_kills) % 2  # the two nodes in turn
            name = f"node-{victim}"
            c.kill_node(name)
            c.start_worker(victim)
            result.node_kills.append((ok, name))
            say(f"{name} killed at {ok} ok trials and started again")
        time.sleep(1.0)
    result.driver_exits.append(driver.returncode)
    return False


def _tally(out: Path, result: Soak) -> None:
    db = sqlite3.connect(out / "results.sqlite")
    try:
        per_key = db.execute(
            "SELECT trial_key, SUM(status = 'ok') FROM trials GROUP BY trial_key"
        ).fetchall()
        failed = db.execute("SELECT COUNT(*) FROM trials WHERE status != 'ok'").fetchone()[0]
    finally:
        db.close()
    result.ok_keys = sum(1 for _, n in per_key if n >= 1)
    result.keys_ok_twice = sum(1 for _, n in per_key if n > 1)
    result.failed_attempts = int(failed)


def leftovers(c: LocalCluster) -> list[str]:
    """What is left on the machine once the cluster stopped and ``h2lab clean`` ran on each
    lab node: the names of what should be gone."""
    from h2lab.net import netns

    for k in range(1, c.workers + 1):
        env = {**os.environ, "H2LAB_STATE": str(c.node_dir(f"node-{k}") / "state")}
        subprocess.run([*H2LAB, "clean"], env=env, capture_output=True, timeout=300, check=False)
    left = [f"netns {n}" for n in netns.list_netns() if n.startswith(("h2lab-", "ns-"))]
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    left += [f"link {ln.split(':')[1].strip()}" for ln in links.splitlines() if "vL" in ln]
    kinds = r"(^|/)(nginx|h2o|haproxy|h2lab-origin|h2load|rattan|tcpdump|raylet|gcs_server)( |$)"
    procs = subprocess.run(["pgrep", "-a", "-f", kinds], capture_output=True, text=True).stdout
    left += [f"process {ln}" for ln in procs.splitlines() if ln.strip()]
    left += [f"folder {p}" for p in Path(tempfile.gettempdir()).glob("h2lab-cluster-*")]
    if c.temp_dir.exists():
        left.append(f"ray sessions {c.temp_dir}")
    for k in range(1, c.workers + 1):
        state = c.node_dir(f"node-{k}") / "state"
        if state.exists() and any(state.iterdir()):
            left.append(f"state {state}: {sorted(p.name for p in state.iterdir())}")
    return left
