"""h2lab.clients.okhttp_build: the pinned project and its jar's place (the build's parts:
tests/unit/test_maven.py). The build itself: tests/integration/test_okhttp.py and
scripts/setup.sh."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from h2lab.clients import okhttp_build
from h2lab.clients.okhttp_build import JAR, SOURCE_DIR, jar_path, source_hash


def test_the_pom_pins_okhttp_5_5_1_and_every_plugin() -> None:
    pom = (SOURCE_DIR / "pom.xml").read_text()
    assert "<okhttp.version>5.5.1</okhttp.version>" in pom
    assert "<artifactId>okhttp-jvm</artifactId>" in pom
    plugins = re.findall(
        r"<plugin>\s*<groupId>[^<]+</groupId>\s*<artifactId>([^<]+)</artifactId>\s*(<version>)?",
        pom,
    )
    assert {p for p, _ in plugins} >= {
        "maven-resources-plugin", "maven-compiler-plugin", "maven-surefire-plugin",
        "maven-jar-plugin", "maven-shade-plugin",
    }  # fmt: skip
    assert all(version for _, version in plugins)


def test_the_jar_is_keyed_by_the_okhttp_folders_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("H2LAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("H2LAB_SYSTEM_CACHE", str(tmp_path / "system"))
    assert jar_path() == tmp_path / "cache" / f"okhttp-{source_hash(SOURCE_DIR)}" / JAR


def test_java_version_reads_the_runtime() -> None:
    """scripts/setup.sh installs a JDK."""
    v = okhttp_build.java_version()
    assert v is not None and re.match(r"\d+", v)
