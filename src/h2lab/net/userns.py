"""Rootless mode: an ordinary user's h2lab owns one user namespace per lab (docs/rootless.md).

:func:`enter` moves the calling process (h2lab, single-threaded, before any lab work) into a
new user namespace where it is uid 0 (mapped to the user's uid), a private mount namespace
and a fresh network namespace. In there it holds ``CAP_NET_ADMIN`` and ``CAP_SYS_ADMIN`` over
every namespace it creates, so the root mode's code runs unchanged: ``ip netns add/exec``,
``nsenter``, Rattan's own ``ns-left-*``/``ns-rattan-*`` namespaces, per-namespace sysctls.
Nothing of it is visible on the host: ``/run`` is a private tmpfs (with the user's runtime
folder bound back into it), so ``/run/netns`` is the lab's own, and the lab's hosts file is
bound over ``/etc/hosts`` (its resolver's address over ``/etc/resolv.conf``). When the last
process of the lab exits the kernel removes every namespace, veth and mount of it, also after
a ``kill -9``.

What cannot be done in there, measured on Linux 6.18 (docs/rootless.md): the host-wide
``net.core.rmem_default`` (read-only in a namespace owned by a user namespace), hence
:func:`raise_packet_rcvbuf`; adding to ``net.ipv4.tcp_allowed_congestion_control``; and
loading a congestion-control module.
"""

from __future__ import annotations

import ctypes
import errno
import os
import socket
from collections.abc import Callable
from pathlib import Path

from h2lab import procs
from h2lab.errors import H2LabError, HostForbids
from h2lab.net.dns import resolv_conf
from h2lab.net.rmem import RATTAN_RCVBUF_BYTES

ENV = "H2LAB_USERNS"
"""Set to ``<uid>:<gid>`` (the user's, outside) in the lab's process and inherited by its
children (``--jobs`` shards): they are in rootless mode although their uid is 0."""

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
SYS_PIDFD_GETFD = 438  # x86_64 and aarch64
SO_RCVBUFFORCE = 33  # <asm-generic/socket.h>; Python's socket module does not name it
LAB_RUN = Path("/run")
RATTAN_LOCKS = Path("/tmp/rattan")
LAB_HOSTS = LAB_RUN / "h2lab-hosts"
"""The lab's hosts file (origin names), bound over /etc/hosts in the lab's mount namespace."""
LAB_RESOLV = LAB_RUN / "h2lab-resolv.conf"
"""The lab's resolver (:mod:`h2lab.net.dns`), bound over /etc/resolv.conf likewise."""

_libc = ctypes.CDLL(None, use_errno=True)

SWITCHES: tuple[tuple[str, str, str], ...] = (
    # (sysctl, value that forbids, what to do)
    (
        "kernel.unprivileged_userns_clone",
        "0",
        "as root: sysctl -w kernel.unprivileged_userns_clone=1 (Debian kernels), "
        "or run h2lab as root",
    ),
    (
        "user.max_user_namespaces",
        "0",
        "as root: sysctl -w user.max_user_namespaces=15000, or run h2lab as root",
    ),
    (
        "kernel.apparmor_restrict_unprivileged_userns",
        "1",
        "as root: sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (Ubuntu 23.10+), "
        "or an AppArmor profile with 'userns,' for h2lab's python, or run h2lab as root",
    ),
)


def active() -> bool:
    """This process runs in a lab's user namespace (rootless mode)."""
    return bool(os.environ.get(ENV))


def outside_ids() -> tuple[int, int]:
    """The user's (uid, gid) outside the lab's user namespace (the current ones before
    :func:`enter`)."""
    value = os.environ.get(ENV)
    if value:
        uid, gid = value.split(":")
        return int(uid), int(gid)
    return os.getuid(), os.getgid()


def sysctl_path(key: str) -> Path:
    return Path("/proc/sys") / key.replace(".", "/")


def read_sysctl(key: str) -> str | None:
    try:
        return sysctl_path(key).read_text().strip()
    except OSError:
        return None


def blocker(read: Callable[[str], str | None] = read_sysctl) -> str | None:
    """One line naming the switch that forbids unprivileged user namespaces on this host and
    what to do, or None if none of the known switches does. ``read``: a sysctl's value
    (None when the kernel has no such switch)."""
    for key, forbidding, remedy in SWITCHES:
        if read(key) == forbidding:
            return (
                f"rootless mode needs unprivileged user namespaces, and {key} = {forbidding} "
                f"forbids them ({remedy})"
            )
    return None


def probe() -> str | None:
    """Try what rootless mode needs, in a throw-away child: a user namespace, a network
    namespace in it and a veth pair. None if that works, else one line saying why not."""
    if why := blocker():
        return why
    argv = ["unshare", "--user", "--map-root-user", "--net", "--mount"]
    argv += ["ip", "link", "add", "h2lab-probe0", "type", "veth", "peer", "name", "h2lab-probe1"]
    try:
        procs.run(argv, timeout_s=10)
    except H2LabError as exc:
        return (
            "rootless mode: this host refused an unprivileged user namespace with a veth "
            f"({exc.line()}); run h2lab as root"
        )
    return None


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    _check(
        _libc.mount(
            source.encode(),
            target.encode(),
            fstype.encode() if fstype else None,
            flags,
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def kept_under_run(paths: list[Path]) -> list[Path]:
    """Pure: the folders below /run that must stay visible in the lab when a private tmpfs
    covers /run: each given path's ancestor just below ``/run/user`` or ``/run`` (the user's
    runtime folder, where the state lives)."""
    kept: list[Path] = []
    for p in paths:
        p = Path(os.path.abspath(p))
        if LAB_RUN not in p.parents:
            continue
        parts = p.relative_to(LAB_RUN).parts
        depth = 2 if parts[0] == "user" and len(parts) > 1 else 1
        top = LAB_RUN.joinpath(*parts[:depth])
        if top not in kept:
            kept.append(top)
    return kept


def require() -> None:
    """Stop with :class:`HostForbids` unless rootless mode works here (:func:`probe`)."""
    if why := probe():
        raise HostForbids(why)


def enter(keep: list[Path]) -> None:
    """Move this process into a fresh user, mount and network namespace (see the module's
    docstring). ``keep``: folders under /run that the lab must still see (its state)."""
    if active():
        return
    if _threads() != 1:
        raise H2LabError("rootless mode: h2lab must enter its user namespace before any thread")
    uid, gid = os.getuid(), os.getgid()
    kept = [p for p in kept_under_run(keep) if p.is_dir()]
    if _libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        why = blocker() or f"unshare: {os.strerror(err)}"
        if err in (errno.EPERM, errno.ENOSPC, errno.EUSERS, errno.EINVAL):
            raise HostForbids(why)
        raise OSError(err, why)
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"0 {uid} 1")
    Path("/proc/self/gid_map").write_text(f"0 {gid} 1")
    _mount("none", "/", None, MS_REC | MS_PRIVATE)
    fds = [os.open(p, os.O_PATH | os.O_DIRECTORY) for p in kept]
    try:
        _mount("h2lab", str(LAB_RUN), "tmpfs", 0, "mode=755")
        for p, fd in zip(kept, fds, strict=True):
            p.mkdir(parents=True, exist_ok=True)
            _mount(f"/proc/self/fd/{fd}", str(p), None, MS_BIND | MS_REC)
    finally:
        for fd in fds:
            os.close(fd)
    (LAB_RUN / "netns").mkdir()
    # Rattan locks the addresses it hands out in files under /tmp/rattan/ip_lock, a folder
    # of the host (root's, once a root-mode lab ran): the lab takes a private one.
    if not RATTAN_LOCKS.is_dir():
        RATTAN_LOCKS.mkdir()
        RATTAN_LOCKS.chmod(0o1777)
    _mount("h2lab", str(RATTAN_LOCKS), "tmpfs", 0, "mode=755")
    LAB_HOSTS.write_text("127.0.0.1 localhost\n")
    _mount(str(LAB_HOSTS), "/etc/hosts", None, MS_BIND)
    if Path("/etc/resolv.conf").exists():  # without one, glibc asks 127.0.0.1: refused at once
        LAB_RESOLV.write_text(resolv_conf())
        _mount(str(LAB_RESOLV), "/etc/resolv.conf", None, MS_BIND)
    os.environ[ENV] = f"{uid}:{gid}"
    procs.run(["ip", "link", "set", "lo", "up"])


def publish_hosts(text: str) -> None:
    """The lab's origin names for every process of the lab (written in place: the bind mount
    over /etc/hosts follows the file's inode)."""
    with LAB_HOSTS.open("r+") as f:
        f.seek(0)
        f.write(text)
        f.truncate()


def as_user_argv(argv: list[str]) -> list[str]:
    """``argv`` run as the user's own uid and gid (a nested user namespace mapping them back
    to the lab's uid 0), without capabilities: for programs that refuse uid 0 or keep a
    sandbox only when not root (Chromium, Firefox, Apache)."""
    uid, gid = outside_ids()
    return ["unshare", "--user", f"--map-user={uid}", f"--map-group={gid}", *argv]


def unprivileged(argv: list[str]) -> list[str]:
    """``argv`` as it runs in this mode: as the user's own uid (:func:`as_user_argv`) in
    rootless mode, unchanged in root mode. For the servers (their user switch needs
    ``setgroups``, which an unprivileged user namespace denies) and the browsers (whose own
    sandbox needs a non-root uid)."""
    return as_user_argv(argv) if active() else argv


def packet_buffer_short(rmem_max_bytes: int, wanted_bytes: int = RATTAN_RCVBUF_BYTES) -> bool:
    """Rattan's packet sockets hold less in rootless mode than in root mode on a host whose
    net.core.rmem_max is ``rmem_max_bytes`` (the kernel caps SO_RCVBUF at twice that)."""
    return 2 * rmem_max_bytes < wanted_bytes


def packet_buffer_note(rmem_max_bytes: int, wanted_bytes: int = RATTAN_RCVBUF_BYTES) -> str:
    """What Rattan's packet sockets hold in rootless mode on a host whose net.core.rmem_max
    is ``rmem_max_bytes``, and, when it is less than root mode's ``wanted_bytes``, what that
    cost here and the host-wide remedy."""
    held = min(2 * rmem_max_bytes, wanted_bytes)
    line = f"Rattan's packet sockets {held / 2**20:g} MiB"
    if not packet_buffer_short(rmem_max_bytes, wanted_bytes):
        return line + " (as in root mode)"
    return (
        f"{line} (root mode {wanted_bytes / 2**20:g} MiB: 8 MiB dropped 2,600-3,400 packets "
        "per load under seed 002's 40 parallel h2load clients, docs/rootless.md; as root, "
        f"once: sysctl -w net.core.rmem_max={wanted_bytes // 2})"
    )


def _pidfd_getfd(pidfd: int, fd: int) -> int:
    _libc.syscall.restype = ctypes.c_long
    new = int(_libc.syscall(SYS_PIDFD_GETFD, pidfd, fd, 0))
    if new < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"pidfd_getfd: {os.strerror(err)}")
    return new


def _socket_fds(pid: int) -> list[int]:
    """File descriptors of ``pid`` that are sockets."""
    fds = []
    for entry in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{entry}")
        except OSError:
            continue
        if target.startswith("socket:["):
            fds.append(int(entry))
    return fds


def raise_packet_rcvbuf(pid: int, wanted_bytes: int, force: bool = False) -> list[int]:
    """Give the packet sockets of Rattan (``pid``) the largest receive buffer the namespace
    allows, up to ``wanted_bytes``: root mode raises net.core.rmem_default while Rattan opens
    them, which a user namespace cannot; here each socket is fetched (pidfd_getfd) and set
    with SO_RCVBUF, which the kernel caps at 2 x net.core.rmem_max. ``force``: root in a
    container's network namespace (rmem_default read-only there too) sets SO_RCVBUFFORCE,
    which needs CAP_NET_ADMIN and is not capped. Returns each packet socket's receive buffer
    after (bytes)."""
    option = SO_RCVBUFFORCE if force else socket.SO_RCVBUF
    pidfd = os.pidfd_open(pid)
    sizes = []
    try:
        for fd in _socket_fds(pid):
            sock = socket.socket(fileno=_pidfd_getfd(pidfd, fd))
            try:
                if sock.family == socket.AF_PACKET:
                    sock.setsockopt(socket.SOL_SOCKET, option, wanted_bytes // 2)
                    sizes.append(sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))
            finally:
                sock.close()
    finally:
        os.close(pidfd)
    return sizes
