"""Work inside a network namespace from Python without spawning a process.

A socket belongs to the namespace its creating thread was in, and ``/proc/thread-self/net``
shows the thread's namespace. So a short-lived thread that calls ``setns(2)`` can open
sockets (readiness probes, RTT pings) and read counters (``/proc/net/snmp``) of any
namespace; the main thread never leaves the host namespace.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from h2lab import procs

T = TypeVar("T")

CLONE_NEWNET = 0x40000000
NETNS_DIR = Path("/run/netns")
_libc = ctypes.CDLL(None, use_errno=True)


def netns_path(name: str) -> Path:
    return NETNS_DIR / name


def list_netns() -> list[str]:
    if not NETNS_DIR.is_dir():
        return []
    return sorted(p.name for p in NETNS_DIR.iterdir())


def run_in_netns(name: str, fn: Callable[[], T]) -> T:
    """Call ``fn`` in a thread that has entered namespace ``name``; return its result."""
    result: list[T] = []
    error: list[BaseException] = []

    def body() -> None:
        fd = os.open(netns_path(name), os.O_RDONLY)
        try:
            if _libc.setns(fd, CLONE_NEWNET) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"setns({name}): {os.strerror(err)}")
        finally:
            os.close(fd)
        try:
            result.append(fn())
        except BaseException as exc:  # re-raised in the caller's thread
            error.append(exc)

    t = threading.Thread(target=body, name=f"netns-{name}")
    t.start()
    t.join()
    if error:
        raise error[0]
    return result[0]


def read_proc_net(name: str, file: str) -> str:
    """Text of ``/proc/net/<file>`` as seen from namespace ``name``."""
    return run_in_netns(name, lambda: Path(f"/proc/thread-self/net/{file}").read_text())


TCP_LISTEN = "0A"
"""The state column of a listening TCP socket in ``/proc/net/tcp``."""


def sockets(proc_net: str, state: str | None = None) -> set[tuple[str, int]]:
    """(local address, port) of every IPv4 socket of ``/proc/net/tcp`` or ``/proc/net/udp``
    text, of those in ``state`` (hex, as the table has it) if given: a bound UDP socket is in
    any state."""
    out = set()
    for line in proc_net.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 3 and (state is None or fields[3] == state):
            addr_hex, port_hex = fields[1].split(":")
            octets = bytes.fromhex(addr_hex)[::-1]
            out.add((".".join(str(b) for b in octets), int(port_hex, 16)))
    return out


def is_listening(name: str, ip: str, port: int) -> bool:
    """True if something in namespace ``name`` listens on ip:port (without connecting to it)."""
    return (ip, port) in sockets(read_proc_net(name, "tcp"), TCP_LISTEN)


def exec_argv(name: str, argv: list[str]) -> list[str]:
    """argv that runs in namespace ``name`` with its /etc/netns files (hosts) mounted."""
    return ["ip", "netns", "exec", name, *argv]


def add(name: str) -> None:
    procs.run(["ip", "netns", "add", name])


def delete(name: str) -> None:
    procs.run(["ip", "netns", "delete", name], check=False)


def pids_in(name: str) -> list[int]:
    out = procs.run(["ip", "netns", "pids", name], check=False)
    return [int(x) for x in out.split()]


def inode(path: Path) -> int:
    return path.stat().st_ino


def sysctl(name: str, key: str, value: str) -> None:
    """Set a per-namespace sysctl (the net.ipv4.tcp_* keys are per namespace)."""
    procs.run(exec_argv(name, ["sysctl", "-q", "-w", f"{key}={value}"]))
