"""The OkHttp client's jar (``okhttp/``, Java 17, Maven): built once per source hash into
``<cache>/okhttp-<hash>/h2lab-okhttp.jar`` (:mod:`h2lab.maven`). The first build downloads
OkHttp, Okio, the Kotlin stdlib, Gson and the pinned Maven plugins."""

from __future__ import annotations

import shutil
from pathlib import Path

from h2lab import maven, procs, programs

SOURCE_DIR = Path(__file__).resolve().parents[3] / "okhttp"
"""The Maven project (``pom.xml``, ``src/main/``)."""
# A first build on the 2-core machine, plugins and libraries downloaded, took 9 s
# (docs/okhttp.md, "Build"): the bound leaves room for a slow registry.
PROJECT = maven.Project("okhttp", "h2lab-okhttp.jar", timeout_s=600.0)
JAR = PROJECT.jar
JAVA_HINT = maven.JAVA_HINT


def source_hash(src: Path = SOURCE_DIR) -> str:
    return maven.source_hash(src)


def java_binary() -> str:
    return maven.tool("java")


def jar_path(src: Path = SOURCE_DIR) -> Path:
    return PROJECT.jar_path(src)


def ensure_built(src: Path = SOURCE_DIR) -> Path:
    """The jar for the current sources, built if missing (atomically: a rename)."""
    return PROJECT.ensure_built(src)


def jar_version(jar: Path) -> str:
    """``h2lab-okhttp <source hash> okhttp 5.5.1 java 17.0.15`` (the jar's ``-version``)."""
    return procs.run([java_binary(), "-jar", str(jar), "-version"]).strip()


def java_version() -> str | None:
    """The runtime's version (``17.0.15``), None without a ``java``."""
    if not shutil.which(programs.JAVA.executable):
        return None
    return programs.JAVA.version() or "unknown version"
