"""Where h2lab keeps things on disk. Every folder h2lab names itself starts with ``h2lab-``
(instance state) or lives under the cache root."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """Survives reruns: Rattan build, generated pages. ``H2LAB_CACHE`` overrides."""
    return Path(os.environ.get("H2LAB_CACHE", Path.home() / ".cache" / "h2lab"))


SYSTEM_CACHE = "/var/cache/h2lab"
"""The shared, read-only installation: ``make setup`` run as root publishes its builds here
(Rattan, the Go origin, the OkHttp jar, Debian 13's servers) for every user of the machine."""


def system_cache_root() -> Path:
    """:data:`SYSTEM_CACHE`; ``H2LAB_SYSTEM_CACHE`` overrides."""
    return Path(os.environ.get("H2LAB_SYSTEM_CACHE", SYSTEM_CACHE))


def build_places(relative: str) -> list[Path]:
    """Where a build is looked for, in order: the user's cache, then the system's."""
    places = [cache_root() / relative, system_cache_root() / relative]
    return list(dict.fromkeys(places))


def find_build(relative: str) -> Path | None:
    """The first of :func:`build_places` that exists, or None."""
    return next((p for p in build_places(relative) if p.exists()), None)


def looked_in(relative: str) -> str:
    """``not in A or B`` for a message that says where a build was looked for."""
    return "not in " + " or ".join(str(p) for p in build_places(relative))


def rootless() -> bool:
    """h2lab runs as an ordinary user, or in the user namespace it made for a lab
    (:mod:`h2lab.net.userns` sets ``H2LAB_USERNS`` there)."""
    return os.geteuid() != 0 or bool(os.environ.get("H2LAB_USERNS"))


def user_runtime_root() -> Path:
    """An ordinary user's tmpfs folder: ``$XDG_RUNTIME_DIR``, else ``/tmp/h2lab-<uid>``."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime)
    outside = os.environ.get("H2LAB_USERNS")
    uid = int(outside.split(":")[0]) if outside else os.getuid()
    return Path(f"/tmp/h2lab-{uid}")


def state_root() -> Path:
    """Per-instance state (pids, configs, certificates, logs) on tmpfs: ``/run/h2lab`` (root),
    ``$XDG_RUNTIME_DIR/h2lab`` (rootless). ``H2LAB_STATE`` overrides."""
    default = user_runtime_root() / "h2lab" if rootless() else Path("/run/h2lab")
    return Path(os.environ.get("H2LAB_STATE", default))


def cluster_root() -> Path:
    """A lab node's Ray folder (``ray-PID``) and its actors' working folders
    (``actor-PID-*``), PID being their owner's, in the lab state folder: ``h2lab clean``
    removes those whose owner is gone."""
    return state_root() / "cluster"


def owners_root() -> Path:
    """Which process owns each running lab, for every state folder at once (a lab's id ->
    its owner's pid): namespaces are machine-wide, and a clean that looks in its own state
    folder only must not take a lab of another one (a Ray node beside another, each with its
    ``H2LAB_STATE``) for a stale one. ``H2LAB_OWNERS`` overrides."""
    default = user_runtime_root() / "h2lab-owners" if rootless() else Path("/run/h2lab-owners")
    return Path(os.environ.get("H2LAB_OWNERS", default))


def netns_etc(ns_name: str) -> Path:
    """``ip netns exec`` bind-mounts files from here over /etc (hosts for origin names). In
    rootless mode a folder of the lab's private /run that nothing reads: the lab's hosts file
    is bound over /etc/hosts for all of it instead (:mod:`h2lab.net.userns`)."""
    if os.environ.get("H2LAB_USERNS"):
        return Path("/run/h2lab-etc-netns") / ns_name
    return Path("/etc/netns") / ns_name
