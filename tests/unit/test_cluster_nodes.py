"""h2lab.cluster.nodes: the ``ray start`` lines of a head and a lab node, ``HOST:PORT``, and why
a machine may not be a lab node."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from h2lab import doctor
from h2lab.cluster.nodes import (
    AGENT_PORTS,
    LAB_RESOURCE,
    RAY,
    SOCKET_PATH_MAX,
    SOCKET_TAIL,
    check_socket_room,
    doctor_refusal,
    head_argv,
    node_temp_dir,
    split_address,
    worker_argv,
)
from h2lab.doctor import Check
from h2lab.errors import SpecError

# ------------------------------------------------------------------ split_address


@pytest.mark.parametrize(
    ("address", "parts"),
    [
        ("10.0.0.1:6379", ("10.0.0.1", 6379)),
        ("host:123", ("host", 123)),
        ("h:1", ("h", 1)),
        ("h:65535", ("h", 65535)),
        ("[::1]:6379", ("[::1]", 6379)),  # the last colon splits; the brackets stay
    ],
)
def test_split_address_takes_host_and_port_at_the_last_colon(
    address: str, parts: tuple[str, int]
) -> None:
    assert split_address(address) == parts


@pytest.mark.parametrize("address", ["nohost", ":80", "h:0", "h:65536", "h:99999", "h:x", "h:"])
def test_split_address_refuses_anything_but_host_colon_port(address: str) -> None:
    with pytest.raises(SpecError) as exc:
        split_address(address, "here")
    assert str(exc.value) == f"here: --cluster: expected HOST:PORT, got {address!r}"


# ------------------------------------------------------------------ ray start


def test_ray_is_the_one_beside_this_python() -> None:
    assert RAY.name == "ray" and RAY.parent == Path(sys.executable).parent


def test_head_argv_starts_a_blocking_head_with_no_cpu_and_no_dashboard() -> None:
    argv = head_argv("10.20.0.10", 6379)
    assert argv == [
        str(RAY),
        "start",
        "--head",
        "--block",
        "--node-ip-address=10.20.0.10",
        "--port=6379",
        "--num-cpus=0",
        "--resources={}",
        "--include-dashboard=false",
        "--disable-usage-stats",
        "--dashboard-agent-listen-port=0",
    ]
    assert LAB_RESOURCE not in " ".join(argv)  # no lab on the head


def test_head_argv_with_a_temp_dir_names_it_last() -> None:
    argv = head_argv("127.0.0.2", 7000, Path("/tmp/r"))
    assert argv[-1] == "--temp-dir=/tmp/r"
    assert argv[:-1] == head_argv("127.0.0.2", 7000)
    assert "--port=7000" in argv


def test_worker_argv_joins_the_head_offering_one_lab() -> None:
    argv = worker_argv("10.20.0.10:6379", "10.20.0.11")
    assert argv == [
        str(RAY),
        "start",
        "--block",
        "--address=10.20.0.10:6379",
        "--node-ip-address=10.20.0.11",
        "--num-cpus=1",
        '--resources={"h2lab_lab": 1}',
        "--dashboard-agent-listen-port=0",
    ]
    resources = next(a for a in argv if a.startswith("--resources="))
    assert json.loads(resources.split("=", 1)[1]) == {LAB_RESOURCE: 1}
    assert "--head" not in argv
    assert AGENT_PORTS == ("--dashboard-agent-listen-port=0",)


# ------------------------------------------------------------------ doctor_refusal


def _checks_must_not_run() -> list[Check]:
    raise AssertionError("doctor.checks ran for a machine already refused")


def test_a_non_root_machine_is_refused_before_the_doctor_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(doctor, "checks", _checks_must_not_run)
    assert doctor_refusal() == (
        "not root: labs need network namespaces (run h2lab cluster worker as root)"
    )


def test_root_with_a_failing_check_is_refused_naming_the_first_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(
        doctor,
        "checks",
        lambda: [
            Check("rattan", True, "0.1.0"),
            Check("nginx", False, "apt-get install nginx"),
            Check("h2o", False, "apt-get install h2o"),
        ],
    )
    assert doctor_refusal() == "h2lab doctor: nginx missing (apt-get install nginx)"


def test_root_with_every_check_passing_is_not_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(doctor, "checks", lambda: [Check("rattan", True, "0.1.0")])
    assert doctor_refusal() is None


# ------------------------------------------------------------------ a lab node's Ray folder


def test_a_lab_nodes_ray_folder_is_its_own_in_its_lab_state_folder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("H2LAB_STATE", "/run/h2lab")
    assert node_temp_dir(4194304) == Path("/run/h2lab/cluster/ray-4194304")
    assert node_temp_dir() == Path(f"/run/h2lab/cluster/ray-{os.getpid()}")
    argv = worker_argv("10.20.0.10:6379", "10.20.0.11", node_temp_dir(12))
    assert argv[-1] == "--temp-dir=/run/h2lab/cluster/ray-12"
    check_socket_room(node_temp_dir(4194304))  # the longest pid: room left


def test_a_ray_folder_too_long_for_its_sockets_is_refused_saying_so() -> None:
    fits = Path("/" + "d" * (SOCKET_PATH_MAX - SOCKET_TAIL - 1))
    check_socket_room(fits)
    # the longest socket Ray makes there, as Ray 2.60.0 names it, is exactly 107 bytes
    longest = f"{fits}/session_2026-11-28_04-21-36_202213_4194304/sockets/plasma_store"
    assert len(longest) == SOCKET_PATH_MAX
    with pytest.raises(SpecError) as exc:
        check_socket_room(Path(f"{fits}x"))
    assert exc.value.line() == (
        f"command line: --temp-dir: Ray's folder {fits}x is 44 bytes long; its sockets need "
        "it at most 43 (a unix socket's path is at most 107 bytes): give a shorter --temp-dir "
        "or H2LAB_STATE"
    )
