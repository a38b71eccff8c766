"""h2lab.programs: one record per external program, which setup.sh, doctor, debian13 and the
adapters read."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from h2lab import programs

SETUP = Path(__file__).resolve().parents[2] / "scripts" / "setup.sh"


def setup_packages() -> list[str]:
    """setup.sh's DEB_PACKAGES, as bash reads the array (comments and line breaks dropped)."""
    text = SETUP.read_text()
    assert "\nDEB_PACKAGES=(" in text, "setup.sh has no DEB_PACKAGES=(...)"
    words: list[str] = []
    for line in text.split("\nDEB_PACKAGES=(", 1)[1].splitlines():
        code = line.split("#", 1)[0]
        words += code.split(")", 1)[0].split()
        if ")" in code:
            return words
    raise AssertionError("setup.sh's DEB_PACKAGES=( is not closed")


def test_setup_installs_exactly_the_records_debian_packages() -> None:
    """setup.sh lists its Debian packages itself (it installs them before the venv exists):
    the same packages as the records', each once."""
    listed = setup_packages()
    assert len(listed) == len(set(listed)), listed
    assert sorted(listed) == sorted(programs.debian12_packages())


def test_every_program_is_declared_once_with_a_source_and_a_version_probe() -> None:
    keys = [(p.name, p.source) for p in programs.PROGRAMS]
    assert len(keys) == len(set(keys))
    for p in programs.PROGRAMS:
        assert p.source in (programs.DEBIAN12, programs.DEBIAN13, programs.BUILT), p
        if p.source != programs.BUILT:
            assert p.package, p
        if p.pattern:
            assert re.compile(p.pattern).groups >= 1, p
            assert p.version_args or p.changelog, p
        if p.source == programs.DEBIAN13:
            assert p.executable.startswith("usr/") and p.release, p
    rows = [p.doctor for p in programs.PROGRAMS if p.doctor]
    assert len(rows) == len(set(rows))


def test_versions_are_read_as_each_program_prints_them() -> None:
    assert programs.NGINX.version_in("nginx version: nginx/1.22.1\n") == "1.22.1"
    said = "HAProxy version 2.6.12-1+deb12u1 2023/12/16 - https://haproxy.org/\n"
    assert programs.HAPROXY.version_in(said) == "2.6.12-1+deb12u1"
    assert programs.APACHE.version_in("Server version: Apache/2.4.62 (Debian)\n") == "2.4.62"
    assert programs.H2O.version_in("h2o version 2.2.5\nOpenSSL: OpenSSL 3.0\n") == "2.2.5"
    assert programs.H2LOAD.version_in("h2load nghttp2/1.52.0\n") == "1.52.0"
    assert programs.JAVA.version_in('openjdk version "17.0.15" 2025-04-15\n') == "17.0.15"
    assert programs.RATTAN.version_in("rattan 0.1.1\n") == "0.1.1"
    said = "h2lab-origin 0123456789ab go1.26.8 x/net v0.62.0 quic-go v0.65.0\n"
    assert programs.ORIGIN.version_in(said) == said.strip()
    assert programs.NGINX.version_in("") is None
    assert programs.CERTUTIL.version_in("anything") is None  # no version switch


def test_a_version_is_printed_by_the_command_given_or_the_executable() -> None:
    assert programs.NGINX.version_argv() == ["nginx", "-v"]
    assert programs.NGINX_13.version_argv(["/ld.so", "/root/usr/sbin/nginx"]) == [
        "/ld.so",
        "/root/usr/sbin/nginx",
        "-v",
    ]
    missing = programs.Program("x", programs.DEBIAN12, "x", "/nonexistent/x", ("-v",), r"x (\S+)")
    assert missing.version() is None


def test_the_entry_point_prints_the_package_lists() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "h2lab.programs", "--debian-packages"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.split() == programs.debian12_packages()
    out = subprocess.run(
        [sys.executable, "-m", "h2lab.programs", "--debian13-packages"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.split() == ["nginx", "haproxy", "curl", "caddy", "ngtcp2-server"]
