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


def netns_etc(ns_name: str) -> Path:
    """``ip netns exec`` bind-mounts files from here over /etc (hosts for origin names)."""
    return Path("/etc/netns") / ns_name
