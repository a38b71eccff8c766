"""The receive buffer of Rattan's packet sockets: the host's ``net.core.rmem_default``, raised
while a Rattan process opens its sockets and put back after (also after a crash: teardown puts
it back from the value saved in the link's folder)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

RMEM_DEFAULT = Path("/proc/sys/net/core/rmem_default")
RATTAN_RCVBUF_BYTES = 32 * 1024 * 1024
"""Receive buffer of Rattan's AF_PACKET sockets. Rattan (0.1.1) drops a packet its socket cannot
hold, silently, so the buffer must hold the largest burst the senders make while Rattan's thread
waits for a core. With Linux's default (208 KiB, about 90 full-size packets) a loss-free
100 Mbit/s flow lost 15-300 segments and reached 52-82 Mbit/s (4 MiB: 96.5, ``bench/fidelity.py``).
4 MiB in turn overflowed under seed 002's 40 parallel h2load clients (640 connections starting
at once, up to 6,400 initial-window packets): an unshaped, loss-free ``delay=25ms`` link then
retransmitted 3,568-5,513 segments per load; with 32 MiB, 13-31, the socket's fill peaking at
17.7 MB (skb truesize). The buffer is memory only when it fills."""

RMEM_LOCK = Path("/run/h2lab-rmem_default.lock")
"""Host-wide, as net.core.rmem_default is (not one per state folder)."""
SAVED = "rmem-default.orig"
"""The host's value, in the link's folder while it is raised."""


def raised_after_start(rootless: bool) -> bool:
    """Whether Rattan's sockets get their buffer after it starts (``userns.raise_packet_rcvbuf``)
    instead of through rmem_default: in a user namespace, and wherever this process cannot
    write rmem_default. A network namespace other than the host's shows it read-only (a
    container's own, e.g. ``podman run --network=none``), and container runtimes mount
    /proc/sys read-only (docs/container.md)."""
    return rootless or not os.access(RMEM_DEFAULT, os.W_OK)


@contextmanager
def _rmem_default_lock() -> Iterator[None]:
    """One link at a time between raising rmem_default and putting it back. Without it,
    concurrent labs (``h2lab run --jobs``) put it back while another lab's Rattan was still
    opening its sockets, which then held 208 KiB (found in a Fig. 1 shard: ``ss -0 -m`` in its
    ns-rattan namespace showed rb212992 on both sockets)."""
    with RMEM_LOCK.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@contextmanager
def rmem_default_raised(link_dir: Path) -> Iterator[None]:
    """rmem_default at least :data:`RATTAN_RCVBUF_BYTES` inside the block, the host's value
    saved in ``link_dir`` meanwhile."""
    with _rmem_default_lock():
        _raise_rmem_default(link_dir)
        try:
            yield
        finally:
            _restore_rmem_default(link_dir)


def _raise_rmem_default(link_dir: Path) -> None:
    old = int(RMEM_DEFAULT.read_text())
    if old >= RATTAN_RCVBUF_BYTES:
        return
    (link_dir / SAVED).write_text(str(old))
    RMEM_DEFAULT.write_text(str(RATTAN_RCVBUF_BYTES))


def restore_after_crash(link_dir: Path) -> None:
    """Put the host's value back if a crash left it raised (teardown calls this)."""
    if (link_dir / SAVED).exists():
        with _rmem_default_lock():
            _restore_rmem_default(link_dir)


def _restore_rmem_default(link_dir: Path) -> None:
    saved = link_dir / SAVED
    if saved.exists():
        if int(RMEM_DEFAULT.read_text()) == RATTAN_RCVBUF_BYTES:
            RMEM_DEFAULT.write_text(saved.read_text().strip())
        saved.unlink()
