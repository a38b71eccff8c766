"""Removing what a lab instance left on the host: its namespaces (ours and Rattan's), its
processes and its state folder. Idempotent, and needs nothing but the instance id and what the
instance wrote in its state folder, so that :meth:`h2lab.net.lab.Lab.close`,
:meth:`h2lab.net.lab.Link.close` and ``h2lab clean`` (:mod:`h2lab.net.clean`, for instances whose
process was killed) all use it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

from h2lab import procs
from h2lab.net import netns, rmem
from h2lab.paths import netns_etc, owners_root, state_root

PREFIX = "h2lab-"
"""Instance ids are ``h2lab-<6 hex>``; every namespace and state folder of one starts with it."""


def teardown_link(lab_id: str, link_dir: Path) -> None:
    """Remove a link's client namespace and whatever Rattan left (idempotent)."""
    client_ns = f"{lab_id}-client"
    rmem.restore_after_crash(link_dir)
    # Whatever a client left in the namespace (a browser kept across trials) goes first.
    if netns.netns_path(client_ns).exists():
        ours = {procs.read_int_file(link_dir / n) for n in ("holder.pid", "rattan.pid")}
        for pid in netns.pids_in(client_ns):
            if pid not in ours:
                _kill(pid)
    pid_file = link_dir / "rattan.pid"
    if pid_file.exists():
        pid = int(pid_file.read_text())
        if procs.pid_alive(pid):
            _kill(pid, first=signal.SIGINT)
    # If Rattan died without its own cleanup, its left command (our holder) outlives it and
    # keeps the client namespace alive: stop it too.
    holder_file = link_dir / "holder.pid"
    if holder_file.exists():
        holder = int(holder_file.read_text())
        if procs.pid_alive(holder) and not _is_zombie(holder):
            _kill(holder)
    leftovers: list[str] = []
    names_file = link_dir / "rattan-netns.json"
    before_file = link_dir / "netns-before.json"
    if names_file.exists():
        leftovers = json.loads(names_file.read_text())
    elif before_file.exists():
        leftovers = _new_rattan_netns(set(json.loads(before_file.read_text())))
    for ns in [client_ns, *leftovers]:
        if netns.netns_path(ns).exists():
            for pid in netns.pids_in(ns):
                _kill(pid)
            netns.delete(ns)
    shutil.rmtree(netns_etc(client_ns), ignore_errors=True)
    shutil.rmtree(link_dir, ignore_errors=True)


def teardown_lab(lab_id: str) -> None:
    """Remove everything of one instance (idempotent; used by close and by clean)."""
    state = state_root() / lab_id
    teardown_link(lab_id, state / "link")
    servers_ns = f"{lab_id}-servers"
    if netns.netns_path(servers_ns).exists():
        for pid in netns.pids_in(servers_ns):
            _kill(pid)
        netns.delete(servers_ns)
    at_start = state / "netns-at-start.json"
    if at_start.exists():
        for ns in _new_rattan_netns(set(json.loads(at_start.read_text()))):
            netns.delete(ns)
    shutil.rmtree(netns_etc(servers_ns), ignore_errors=True)
    shutil.rmtree(state, ignore_errors=True)
    (owners_root() / lab_id).unlink(missing_ok=True)


def _new_rattan_netns(before: set[str]) -> list[str]:
    """Rattan namespaces created since ``before`` whose left side holds no process (ours:
    a running Rattan of someone else always has its left command inside)."""
    names = []
    for name in netns.list_netns():
        if name.startswith("ns-left-") and name not in before and not netns.pids_in(name):
            names += [name, "ns-rattan-" + name.removeprefix("ns-left-")]
    return names


def _kill(pid: int, first: signal.Signals = signal.SIGTERM) -> None:
    """``first``, then SIGKILL after 3 s; returns when the process is gone."""
    for sig in (first, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            if not procs.pid_alive(pid) or _is_zombie(pid):
                return
            time.sleep(0.02)


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except (OSError, IndexError):
        return True
