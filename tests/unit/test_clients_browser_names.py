"""A browser of an https-rr cell resolves the lab's names through the lab's resolver: run
under the shell command :func:`own_hosts` makes, it sees a hosts file of localhost only."""

from __future__ import annotations

import subprocess
from pathlib import Path

from h2lab.clients import LoadContext
from h2lab.clients.browser import names


def test_the_cells_that_read_dns_are_https_rr_only(tmp_path: Path) -> None:
    ctx = LoadContext(netns="ns", artifacts_dir=tmp_path, timeout_s=30)
    assert not names.by_dns(ctx)
    for discovery, dns in (("forced", False), ("alt-svc", False), ("https-rr", True)):
        assert names.by_dns(LoadContext("ns", tmp_path, 30, discovery=discovery)) is dns


def test_the_hosts_file_holds_localhost_only(tmp_path: Path) -> None:
    path = names.local_hosts(tmp_path)
    assert path == names.local_hosts(tmp_path) and path.parent == tmp_path
    names_in = {n for line in path.read_text().splitlines() for n in line.split()[1:]}
    assert names_in == {"localhost", "ip6-localhost", "ip6-loopback"}


def test_the_browser_sees_that_hosts_file_and_the_rest_of_the_machine_does_not(
    tmp_path: Path,
) -> None:
    """Run for real (as root, as the suite runs): the command's child reads the new file at
    /etc/hosts, in a UTS namespace named as asked; the machine's /etc/hosts is untouched."""
    hosts = names.local_hosts(tmp_path)
    before = Path("/etc/hosts").read_text()
    command = f"{names.own_hosts(hostname='localhost')} {hosts} sh -c 'cat /etc/hosts; hostname'"
    out = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout == names.LOCAL_ONLY + "localhost\n"
    plain = f"{names.own_hosts()} {hosts} cat /etc/hosts"
    assert subprocess.run(plain, shell=True, capture_output=True, text=True).stdout == (
        names.LOCAL_ONLY
    )
    assert Path("/etc/hosts").read_text() == before
