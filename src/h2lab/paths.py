"""Where h2lab keeps things on disk. Every folder h2lab names itself starts with ``h2lab-``
(instance state) or lives under the cache root."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """Survives reruns: Rattan build, generated pages. ``H2LAB_CACHE`` overrides."""
    return Path(os.environ.get("H2LAB_CACHE", Path.home() / ".cache" / "h2lab"))


def state_root() -> Path:
    """Per-instance state (pids, configs, certificates, logs) on tmpfs: ``/run/h2lab``."""
    return Path(os.environ.get("H2LAB_STATE", "/run/h2lab"))


def owners_root() -> Path:
    """Which process owns each running lab, for every state folder at once (a lab's id ->
    its owner's pid): namespaces are machine-wide, and a clean that looks in its own state
    folder only must not take a lab of another one (a Ray node beside another, each with its
    ``H2LAB_STATE``) for a stale one. ``H2LAB_OWNERS`` overrides."""
    return Path(os.environ.get("H2LAB_OWNERS", "/run/h2lab-owners"))


def netns_etc(ns_name: str) -> Path:
    """``ip netns exec`` bind-mounts files from here over /etc (hosts for origin names)."""
    return Path("/etc/netns") / ns_name
