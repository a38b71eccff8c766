"""Programs as deployed today: Debian 13's builds of nginx 1.26 (with its QUIC module), HAProxy
3.0 (with QUIC), curl 8.14 (with HTTP/3) and Caddy 2.6 (with quic-go), which Debian 12, the
lab's host, does not have (Debian 12's Caddy is 2.6.2 too, but built against quic-go 0.29;
Debian 13's against 0.50).

``scripts/setup.sh`` makes a root filesystem of them once (``mmdebstrap --variant=extract``
of :data:`SUITE` with :data:`PACKAGES` and what they depend on: the packages' files, nothing
configured or run), under the cache root. h2lab runs a program from it through the root
filesystem's own dynamic loader and libraries (:func:`argv`): no chroot, so root and rootless
mode alike, and every path the adapters write (the state folder, certificates, page bodies)
stays where it is on the host. Each program's version is checked when the folder is made
(:attr:`h2lab.programs.Program.release`): a mirror that moved to another upstream release
fails ``setup.sh``, it does not change the lab's servers behind a user's back.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
from pathlib import Path

from h2lab import procs, programs
from h2lab.errors import ProcessFailed
from h2lab.paths import build_places, cache_root

SUITE = "trixie"
"""Debian 13"""
MIRROR = "http://deb.debian.org/debian"
PROGRAMS = programs.of(programs.DEBIAN13)
"""The programs it holds (:mod:`h2lab.programs`): their packages, paths, version commands and
the upstream release each must be (Debian 13's, with security updates)."""
PACKAGES = tuple(programs.debian13_packages())
LIBS = "usr/lib/x86_64-linux-gnu"
LOADER = f"{LIBS}/ld-linux-x86-64.so.2"
READY = ".h2lab-ready"
"""Written last, with the programs' versions: a folder without it is a half-made one."""
MAKE_TIMEOUT_S = 900.0


def root() -> Path:
    """The root filesystem's folder: named by the suite and package list, so a change to
    either makes a new one beside the old."""
    digest = hashlib.sha256(f"{SUITE} {' '.join(PACKAGES)}".encode()).hexdigest()[:12]
    name = f"debian13-{digest}"
    made = [p for p in build_places(name) if (p / READY).is_file()]
    return made[0] if made else cache_root() / name


def installed() -> bool:
    return (root() / READY).is_file()


class NotInstalled(RuntimeError):
    """A Debian 13 program was asked for before ``scripts/setup.sh`` made the folder."""


def program(name: str) -> programs.Program:
    """The record of Debian 13's ``name`` (``nginx``, ``haproxy``, ``curl``, ``caddy``)."""
    [found] = [p for p in PROGRAMS if p.name == name]
    return found


def argv(name: str) -> list[str]:
    """The command that runs Debian 13's ``name`` (one of :data:`PROGRAMS`) on this host;
    :class:`NotInstalled` before setup.sh has made the root filesystem."""
    if not installed():
        raise NotInstalled(f"Debian 13's {name} is not installed (scripts/setup.sh makes {root()})")
    return _argv(root(), program(name))


def _argv(base: Path, p: programs.Program) -> list[str]:
    return [str(base / LOADER), "--library-path", str(base / LIBS), str(base / p.executable)]


def version_of(name: str, text: str) -> str | None:
    """``name``'s version in what its version command printed (``text``); None if absent."""
    return program(name).version_in(text)


def versions() -> dict[str, str]:
    """Each program's version, as the folder's :data:`READY` file recorded it when made;
    empty before it is made."""
    ready = root() / READY
    if not ready.is_file():
        return {}
    pairs = (line.split(" ", 1) for line in ready.read_text().splitlines() if " " in line)
    return {name: version for name, version in pairs}


def _check_versions(base: Path) -> dict[str, str]:
    found = {}
    for p in PROGRAMS:
        command = _argv(base, p)
        version = _changelog_version(base, p) if p.changelog else p.version(command)
        if version is None or not version.startswith(p.release):
            raise ProcessFailed(
                command, None, f"{p.name} {version or 'did not run'}: expected {p.release}x"
            )
        found[p.name] = version
    return found


def _changelog_version(base: Path, p: programs.Program) -> str | None:
    """The version the first line of ``p``'s package changelog names (``ngtcp2
    (1.11.0-1+deb13u1) trixie-security; ...``)."""
    try:
        with gzip.open(base / p.changelog, "rt", errors="replace") as f:
            return p.version_in(f.readline(200))
    except (OSError, EOFError):
        return None


def ensure_made() -> Path:
    """The root filesystem, made if missing (into a temporary folder, then renamed: an
    interrupted make leaves nothing that looks made). ``mmdebstrap`` runs as root, or in a
    user namespace of its own for an ordinary user (its ``auto`` mode)."""
    target = root()
    if installed():
        return target
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    argv = ["mmdebstrap", "--quiet", "--variant=extract", f"--include={','.join(PACKAGES)}"]
    try:
        procs.run([*argv, SUITE, str(tmp), MIRROR], timeout_s=MAKE_TIMEOUT_S)
        shutil.rmtree(tmp / "dev")  # its device nodes: nothing runs chrooted in it
        found = _check_versions(tmp)
        (tmp / READY).write_text("".join(f"{k} {v}\n" for k, v in found.items()))
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
