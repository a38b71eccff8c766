"""The OkHttp client's jar (``okhttp/``, Java 17, Maven): built once per source hash into
``<cache>/okhttp-<hash>/h2lab-okhttp.jar``, like the Go origin (:mod:`h2lab.servers.origin`).

The first build downloads OkHttp, Okio, the Kotlin stdlib, Gson and the pinned Maven plugins
from Maven Central into Maven's local repository (``~/.m2``); later builds, after a source
change, are offline. ``scripts/setup.sh`` builds it, so that no trial waits for Maven.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from h2lab import procs, programs
from h2lab.errors import MissingTool, ProcessFailed
from h2lab.paths import cache_root, find_build

SOURCE_DIR = Path(__file__).resolve().parents[3] / "okhttp"
"""The Maven project (``pom.xml``, ``src/main/``)."""
JAR = "h2lab-okhttp.jar"
# A first build on the 2-core machine, plugins and libraries downloaded, took 9 s
# (docs/okhttp.md, "Build"): the bound leaves room for a slow registry.
BUILD_TIMEOUT_S = 600.0
JAVA_HINT = "apt-get install default-jdk-headless (scripts/setup.sh)"


def source_hash(src: Path = SOURCE_DIR) -> str:
    """12 hex digits over ``pom.xml`` and every file under ``src/`` (names and bytes)."""
    h = hashlib.sha256()
    files = [src / "pom.xml", *sorted(p for p in (src / "src").rglob("*") if p.is_file())]
    for f in files:
        h.update(str(f.relative_to(src)).encode() + b"\0")
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()[:12]


def java_binary() -> str:
    found = shutil.which("java")
    if not found:
        raise MissingTool("java", JAVA_HINT)
    return found


def maven_binary() -> str:
    found = shutil.which("mvn")
    if not found:
        raise MissingTool("mvn", "apt-get install maven (scripts/setup.sh)")
    return found


def build_argv(mvn: str, build_dir: Path, digest: str) -> list[str]:
    """The Maven command, run in :data:`SOURCE_DIR`: it writes only into ``build_dir``."""
    return [
        mvn, "-B", "-q", f"-Dh2lab.buildDir={build_dir}", f"-Dh2lab.sourceHash={digest}",
        "package",
    ]  # fmt: skip


def jar_path(src: Path = SOURCE_DIR) -> Path:
    """Where the jar of the current sources is: the user's cache or the system's (make setup),
    else where it will be built, in the user's."""
    relative = f"okhttp-{source_hash(src)}/{JAR}"
    return find_build(relative) or cache_root() / relative


def ensure_built(src: Path = SOURCE_DIR) -> Path:
    """The jar for the current sources, built if missing (atomically: a rename)."""
    target = jar_path(src)
    if target.exists():
        return target
    digest = target.parent.name.removeprefix("okhttp-")
    target.parent.mkdir(parents=True, exist_ok=True)
    build_dir = target.parent / f"build-{os.getpid()}"
    argv = build_argv(maven_binary(), build_dir, digest)
    try:
        proc = subprocess.run(argv, cwd=src, capture_output=True, timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        shutil.rmtree(build_dir, ignore_errors=True)
        raise ProcessFailed(argv, None, f"mvn package timed out after {BUILD_TIMEOUT_S} s") from exc
    try:
        if proc.returncode != 0:
            out = (proc.stdout + proc.stderr).decode(errors="replace")
            raise ProcessFailed(argv, proc.returncode, out[-2000:])
        os.replace(build_dir / JAR, target)
    finally:
        shutil.rmtree(build_dir, ignore_errors=True)
    return target


def jar_version(jar: Path) -> str:
    """``h2lab-okhttp <source hash> okhttp 5.5.1 java 17.0.15`` (the jar's ``-version``)."""
    return procs.run([java_binary(), "-jar", str(jar), "-version"]).strip()


def java_version() -> str | None:
    """The runtime's version (``17.0.15``), None without a ``java``."""
    if not shutil.which(programs.JAVA.executable):
        return None
    return programs.JAVA.version() or "unknown version"
