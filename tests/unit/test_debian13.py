"""h2lab.debian13: Debian 13's programs, run from a root filesystem through its own loader."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from h2lab import debian13


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("H2LAB_CACHE", str(tmp_path))
    return tmp_path


def test_a_program_runs_through_the_folders_own_loader_and_libraries(cache: Path) -> None:
    root = debian13.root()
    assert root.parent == cache and root.name.startswith("debian13-")
    root.mkdir()
    (root / debian13.READY).write_text("nginx 1.26.3\nhaproxy 3.0.11-1+deb13u4\ncurl 8.14.1\n")
    assert debian13.argv("nginx") == [
        f"{root}/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
        "--library-path",
        f"{root}/usr/lib/x86_64-linux-gnu",
        f"{root}/usr/sbin/nginx",
    ]
    assert debian13.versions() == {
        "nginx": "1.26.3",
        "haproxy": "3.0.11-1+deb13u4",
        "curl": "8.14.1",
    }


def test_before_setup_a_program_is_not_installed_and_says_what_makes_it(cache: Path) -> None:
    (debian13.root()).mkdir()  # a half-made folder (no ready file) is not installed
    with pytest.raises(debian13.NotInstalled, match=r"nginx is not installed \(scripts/setup.sh"):
        debian13.argv("nginx")
    assert debian13.versions() == {}


def test_versions_are_read_as_each_program_prints_them() -> None:
    assert debian13.version_of("nginx", "nginx version: nginx/1.26.3\n") == "1.26.3"
    said = "HAProxy version 3.0.11-1+deb13u4 2026/10/15 - https://haproxy.org/\n"
    assert debian13.version_of("haproxy", said) == "3.0.11-1+deb13u4"
    said = "curl 8.14.1 (x86_64-pc-linux-gnu) libcurl/8.14.1 OpenSSL/3.5.9\n"
    assert debian13.version_of("curl", said) == "8.14.1"
    assert debian13.version_of("caddy", "2.6.2\n") == "2.6.2"  # Debian's `caddy version`
    assert debian13.version_of("caddy", "v2.6.2 h1:abc=\n") == "2.6.2"  # upstream's
    assert debian13.version_of("nginx", "") is None
    assert all(p.release for p in debian13.PROGRAMS)


def test_the_folder_keeps_its_package_list() -> None:
    """The list names the folder (root()): a reordering would make setup build it again."""
    assert debian13.PACKAGES == ("nginx", "haproxy", "curl", "caddy", "ngtcp2-server")


def test_a_program_that_prints_no_version_is_read_from_its_changelog(tmp_path: Path) -> None:
    """ngtcp2's example server: its package's changelog's first line; a missing or truncated
    one is no version (setup then fails naming it)."""
    server = debian13.program("ngtcp2-server")
    log = tmp_path / server.changelog
    log.parent.mkdir(parents=True)
    log.write_bytes(gzip.compress(b"ngtcp2 (1.11.0-1+deb13u1) trixie-security; urgency=medium\n"))
    assert debian13._changelog_version(tmp_path, server) == "1.11.0-1+deb13u1"
    log.write_bytes(gzip.compress(b"ngtcp2 (1.11.0-1)")[:10])
    assert debian13._changelog_version(tmp_path, server) is None
    log.unlink()
    assert debian13._changelog_version(tmp_path, server) is None
