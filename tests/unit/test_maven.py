"""h2lab.maven: the source hash, the Maven command, the cache lookup, a failed build. The
builds themselves: scripts/setup.sh, tests/integration/test_okhttp.py and test_jetty.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from h2lab import maven
from h2lab.errors import MissingTool, ProcessFailed

PROJECT = maven.Project("demo", "h2lab-demo.jar", timeout_s=60.0)


def _project(tmp_path: Path) -> Path:
    src = tmp_path / "demo"
    (src / "src/main/java/h2lab/demo").mkdir(parents=True)
    (src / "pom.xml").write_text("<project/>")
    (src / "src/main/java/h2lab/demo/Main.java").write_text("class Main {}")
    return src


@pytest.fixture
def src(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project's folder, with the caches in ``tmp_path`` (the user's and the system's)."""
    monkeypatch.setenv("H2LAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("H2LAB_SYSTEM_CACHE", str(tmp_path / "system"))
    return _project(tmp_path)


def test_source_hash_covers_the_pom_and_every_source_file(tmp_path: Path) -> None:
    src = _project(tmp_path)
    before = maven.source_hash(src)
    assert re.fullmatch(r"[0-9a-f]{12}", before)
    (src / "target").mkdir()
    (src / "target/junk.class").write_text("x")  # a stray build folder is not a source
    assert maven.source_hash(src) == before
    (src / "src/main/java/h2lab/demo/Main.java").write_text("class Main { }")
    changed = maven.source_hash(src)
    assert changed != before
    (src / "pom.xml").write_text("<project> </project>")
    assert maven.source_hash(src) not in (before, changed)


def test_build_writes_outside_the_sources_and_stamps_the_hash(tmp_path: Path) -> None:
    argv = maven.build_argv("/usr/bin/mvn", tmp_path / "b", "abc123def456")
    assert argv[0] == "/usr/bin/mvn" and argv[-1] == "package"
    assert f"-Dh2lab.buildDir={tmp_path / 'b'}" in argv
    assert "-Dh2lab.sourceHash=abc123def456" in argv
    assert "-B" in argv  # batch mode: no colours, no prompts


def test_a_cached_jar_is_used_without_maven(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, src: Path
) -> None:
    target = PROJECT.jar_path(src)
    assert target == tmp_path / "cache" / f"demo-{maven.source_hash(src)}" / "h2lab-demo.jar"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"PK")

    def no_maven(name: str) -> str:
        raise AssertionError(f"{name} was run")

    monkeypatch.setattr(maven, "tool", no_maven)
    assert PROJECT.ensure_built(src) == target


def test_a_build_puts_what_goes_beside_the_jar_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, src: Path
) -> None:
    fake = tmp_path / "mvn"  # writes the jar where -Dh2lab.buildDir says
    fake.write_text(
        '#!/bin/sh\nfor a; do case "$a" in -Dh2lab.buildDir=*) d="${a#*=}";; esac; done\n'
        'mkdir -p "$d" && echo jar > "$d/h2lab-demo.jar"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setattr(maven, "tool", lambda name: str(fake))
    seen: list[bool] = []

    def beside(jar: Path, folder: Path) -> None:
        seen.append(PROJECT.jar_path(src).exists())  # the jar is not in place yet
        (folder / "lib.so").write_text(jar.read_text())

    target = PROJECT.ensure_built(src, beside=beside)
    assert seen == [False] and target.read_text() == "jar\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["h2lab-demo.jar", "lib.so"]


def test_a_failed_build_leaves_no_jar_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, src: Path
) -> None:
    fake = tmp_path / "mvn"
    fake.write_text("#!/bin/sh\necho '[ERROR] COMPILATION ERROR : Main.java' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(maven, "tool", lambda name: str(fake))
    with pytest.raises(ProcessFailed, match="COMPILATION ERROR"):
        PROJECT.ensure_built(src)
    assert not PROJECT.jar_path(src).exists()
    assert [p.name for p in PROJECT.jar_path(src).parent.iterdir()] == []  # no build folder


def test_a_missing_tool_names_its_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(MissingTool, match=r"apt-get install maven"):
        maven.tool("mvn")
    with pytest.raises(MissingTool, match=r"apt-get install default-jdk-headless"):
        maven.tool("java")
