"""Caddy 2.11 built from the Go module proxy (``caddy/``: go.mod and go.sum pin it), for the
``caddy@2.11`` server (:mod:`h2lab.servers.caddy`): Debian 13's Caddy 2.6 writes no qlog, and
2.11's HTTP/3 listener writes one per QUIC connection into ``QLOGDIR`` (quic-go 0.63's).

Built once per source hash into the cache (``caddy-<hash>/caddy``), as the origin is, and
published for every user by ``make setup``. A build takes about 2.5 min of one core here (the
modules about 15 s to download, once).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from h2lab.errors import ProcessFailed
from h2lab.paths import cache_root, find_build
from h2lab.servers.origin import build_env, go_binary

SOURCE_DIR = Path(__file__).resolve().parents[3] / "caddy"
BINARY = "caddy"
BUILD_TIMEOUT_S = 1200
"""A first build on a busy 2-core machine: minutes, not tens of them."""


def source_hash(src: Path = SOURCE_DIR) -> str:
    """12 hex digits over go.mod, go.sum and main.go (names and bytes)."""
    h = hashlib.sha256()
    for f in (src / "go.mod", src / "go.sum", src / "main.go"):
        h.update(f.name.encode() + b"\0" + hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()[:12]


def folder_name(src: Path = SOURCE_DIR) -> str:
    return f"caddy-{source_hash(src)}"


def ensure_built(src: Path = SOURCE_DIR) -> Path:
    """The binary for the current sources, built if missing (atomically: a rename)."""
    relative = f"{folder_name(src)}/{BINARY}"
    built = find_build(relative)  # the user's, or the system's (make setup)
    if built is not None:
        return built
    target = cache_root() / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{BINARY}.tmp-{os.getpid()}")
    go = go_binary()
    steps = ([go, "mod", "download"], [go, "build", "-trimpath", "-o", str(tmp), "."])
    for argv in steps:
        try:
            done = subprocess.run(
                argv, cwd=src, env=build_env(), capture_output=True, timeout=BUILD_TIMEOUT_S
            )
        except subprocess.TimeoutExpired as exc:
            tmp.unlink(missing_ok=True)
            raise ProcessFailed(argv, None, f"timed out after {BUILD_TIMEOUT_S} s") from exc
        if done.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise ProcessFailed(argv, done.returncode, done.stderr.decode(errors="replace")[-2000:])
    os.replace(tmp, target)
    return target
