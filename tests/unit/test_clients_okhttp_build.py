"""h2lab.clients.okhttp_build: the source hash, the Maven command, the cache lookup. The build
itself: tests/integration/test_okhttp.py and scripts/setup.sh."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from h2lab.clients import okhttp_build
from h2lab.clients.okhttp_build import (
    JAR,
    SOURCE_DIR,
    build_argv,
    ensure_built,
    jar_path,
    source_hash,
)


def _project(tmp_path: Path) -> Path:
    src = tmp_path / "okhttp"
    (src / "src/main/java/h2lab/okhttp").mkdir(parents=True)
    (src / "pom.xml").write_text("<project/>")
    (src / "src/main/java/h2lab/okhttp/Main.java").write_text("class Main {}")
    return src


def test_source_hash_covers_the_pom_and_every_source_file(tmp_path: Path) -> None:
    src = _project(tmp_path)
    before = source_hash(src)
    assert re.fullmatch(r"[0-9a-f]{12}", before)
    (src / "target").mkdir()
    (src / "target/junk.class").write_text("x")  # a stray build folder is not a source
    assert source_hash(src) == before
    (src / "src/main/java/h2lab/okhttp/Main.java").write_text("class Main { }")
    changed = source_hash(src)
    assert changed != before
    (src / "pom.xml").write_text("<project> </project>")
    assert source_hash(src) not in (before, changed)


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


def test_build_writes_outside_the_sources_and_stamps_the_hash(tmp_path: Path) -> None:
    argv = build_argv("/usr/bin/mvn", tmp_path / "b", "abc123def456")
    assert argv[0] == "/usr/bin/mvn" and argv[-1] == "package"
    assert f"-Dh2lab.buildDir={tmp_path / 'b'}" in argv
    assert "-Dh2lab.sourceHash=abc123def456" in argv
    assert "-B" in argv  # batch mode: no colours, no prompts


def test_a_cached_jar_is_used_without_maven(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("H2LAB_CACHE", str(tmp_path / "cache"))
    src = _project(tmp_path)
    target = jar_path(src)
    assert target == tmp_path / "cache" / f"okhttp-{source_hash(src)}" / JAR
    target.parent.mkdir(parents=True)
    target.write_bytes(b"PK")

    def no_maven() -> str:
        raise AssertionError("maven was run")

    monkeypatch.setattr(okhttp_build, "maven_binary", no_maven)
    assert ensure_built(src) == target


def test_a_failed_build_leaves_no_jar_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from h2lab.errors import ProcessFailed

    monkeypatch.setenv("H2LAB_CACHE", str(tmp_path / "cache"))
    src = _project(tmp_path)
    fake = tmp_path / "mvn"
    fake.write_text("#!/bin/sh\necho '[ERROR] COMPILATION ERROR : Main.java' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(okhttp_build, "maven_binary", lambda: str(fake))
    with pytest.raises(ProcessFailed, match="COMPILATION ERROR"):
        ensure_built(src)
    assert not jar_path(src).exists()
    assert [p.name for p in jar_path(src).parent.iterdir()] == []  # no build folder left


def test_java_version_reads_the_runtime() -> None:
    """scripts/setup.sh installs a JDK."""
    v = okhttp_build.java_version()
    assert v is not None and re.match(r"\d+", v)
