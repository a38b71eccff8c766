"""Integration tests: real namespaces, Rattan, nginx, h2load. They need root; CI runs as root.

A test that cannot get root fails (it is never skipped)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from h2lab import procs
from h2lab.net import netns
from h2lab.net.lab import Lab, Link
from h2lab.results import TrialRecord
from h2lab.runner.matrix import expand
from h2lab.runner.run import run_trials
from h2lab.spec.experiment import Experiment, validate_factors
from h2lab.spec.network import parse_network
from h2lab.spec.tcp import TcpSettings
from h2lab.store import Store

ROOT = Path(__file__).resolve().parents[2]
H2LAB = str(ROOT / ".venv" / "bin" / "h2lab")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(autouse=True)
def _needs_root_and_leaves_nothing() -> Iterator[None]:
    assert os.geteuid() == 0, "integration tests need root (network namespaces)"
    yield
    left = [n for n in netns.list_netns() if n.startswith("h2lab-")]
    assert left == [], f"namespaces left behind: {left}"


def lab_processes() -> list[str]:
    """Processes of the kinds h2lab starts (servers, load clients, rattan, tcpdump), as 'pid
    cmd' lines."""
    kinds = "nginx|h2o|apache2|haproxy|h2lab-origin|h2load|nghttp|rattan|tcpdump"
    out = subprocess.run(
        ["pgrep", "-a", "-f", rf"(^|/)({kinds})( |$)"], capture_output=True, text=True
    ).stdout
    return [ln for ln in out.splitlines() if ln.strip()]


def h2lab_netns() -> list[str]:
    return [n for n in netns.list_netns() if n.startswith(("h2lab-", "ns-left-", "ns-rattan-"))]


def run_experiment(
    out: Path, name: str, factors: dict[str, list[str]], *, seed: int, repetitions: int
) -> list[TrialRecord]:
    """Run every trial of a small experiment into the store at ``out``; the records written."""
    exp = Experiment(
        name=name, factors=validate_factors("test", factors), seed=seed, repetitions=repetitions
    )
    store = Store(out)
    try:
        return run_trials(expand(exp), store, timeout_s=60)
    finally:
        store.close()


@contextmanager
def slow_origin_lab(host: str, docroot: Path, network: str) -> Iterator[tuple[Lab, Link]]:
    """A lab whose one origin ``host`` is tests/integration/slow_origin.py serving ``docroot``
    over h1c, and its link of ``network``."""
    with Lab((host,)) as lab:
        ip = lab.origin_ips[host]
        script = Path(__file__).parent / "slow_origin.py"
        argv = [sys.executable, str(script), ip, "80", str(docroot)]
        server = procs.spawn(netns.exec_argv(lab.servers_ns, argv))
        try:
            procs.wait_until(
                "slow origin listening",
                lambda: netns.is_listening(lab.servers_ns, ip, 80),
                timeout_s=10,
            )
            with lab.link(parse_network(network), seed=1, tcp=TcpSettings()) as link:
                yield lab, link
        finally:
            procs.stop(server)
