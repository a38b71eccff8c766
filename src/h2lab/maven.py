"""The lab's Java programs (the OkHttp client, ``okhttp/``; the Jetty server, ``jetty/``): Maven
projects built once per source hash into ``<cache>/<name>-<hash>/<jar>``, like the Go origin.

Both layers that need one (clients, servers) stand side by side, so what building takes lives
here, below both. The first build downloads its libraries and the pinned Maven plugins from
Maven Central into Maven's local repository (``~/.m2``); later builds, after a source change,
are offline. ``scripts/setup.sh`` builds both, so that no trial waits for Maven.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from h2lab.errors import MissingTool, ProcessFailed
from h2lab.paths import cache_root, find_build

PACKAGES = {"java": "default-jdk-headless", "mvn": "maven"}
"""The Debian package of each tool (scripts/setup.sh installs them)."""
JAVA_HINT = f"apt-get install {PACKAGES['java']} (scripts/setup.sh)"


def tool(name: str) -> str:
    """The path of ``java`` or ``mvn``; :class:`MissingTool` naming its package if absent."""
    found = shutil.which(name)
    if not found:
        raise MissingTool(name, f"apt-get install {PACKAGES[name]} (scripts/setup.sh)")
    return found


def source_hash(src: Path) -> str:
    """12 hex digits over ``pom.xml`` and every file under ``src/`` (names and bytes)."""
    h = hashlib.sha256()
    files = [src / "pom.xml", *sorted(p for p in (src / "src").rglob("*") if p.is_file())]
    for f in files:
        h.update(str(f.relative_to(src)).encode() + b"\0")
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()[:12]


def build_argv(mvn: str, build_dir: Path, digest: str) -> list[str]:
    """The Maven command, run in the project's folder: it writes only into ``build_dir``."""
    return [
        mvn, "-B", "-q", f"-Dh2lab.buildDir={build_dir}", f"-Dh2lab.sourceHash={digest}",
        "package",
    ]  # fmt: skip


@dataclass(frozen=True)
class Project:
    """One Maven project of the repository and the jar it packages."""

    name: str
    """the cache folder's prefix (``okhttp``: ``okhttp-<hash>/``)"""
    jar: str
    timeout_s: float
    """a bound on a first build (downloads included), not a wait"""

    def jar_path(self, src: Path) -> Path:
        """Where the jar of the sources in ``src`` is: the user's cache or the system's (make
        setup), else where it will be built, in the user's."""
        relative = f"{self.name}-{source_hash(src)}/{self.jar}"
        return find_build(relative) or cache_root() / relative

    def ensure_built(self, src: Path, beside: Callable[[Path, Path], None] | None = None) -> Path:
        """The jar for the sources in ``src``, built if missing. ``beside(jar, folder)`` puts
        what must sit next to the jar into its folder before the jar is renamed into place
        (last, so that a jar that exists is a whole build)."""
        target = self.jar_path(src)
        if target.exists():
            return target
        digest = target.parent.name.removeprefix(f"{self.name}-")
        target.parent.mkdir(parents=True, exist_ok=True)
        build_dir = target.parent / f"build-{os.getpid()}"
        argv = build_argv(tool("mvn"), build_dir, digest)
        try:
            try:
                proc = subprocess.run(argv, cwd=src, capture_output=True, timeout=self.timeout_s)
            except subprocess.TimeoutExpired as exc:
                said = f"mvn package timed out after {self.timeout_s} s"
                raise ProcessFailed(argv, None, said) from exc
            if proc.returncode != 0:
                out = (proc.stdout + proc.stderr).decode(errors="replace")
                raise ProcessFailed(argv, proc.returncode, out[-2000:])
            if beside is not None:
                beside(build_dir / self.jar, target.parent)
            os.replace(build_dir / self.jar, target)
        finally:
            shutil.rmtree(build_dir, ignore_errors=True)
        return target
