"""The network model for real: net check, seeded loss, bursts, CoDel, traces, cellular, shell."""

from __future__ import annotations

import itertools
import json
import statistics
import subprocess
from pathlib import Path

import pytest

from h2lab.net.check import check, check_static
from h2lab.net.check.probes import udp_probe
from h2lab.net.lab import Lab
from h2lab.spec.network import parse_network
from h2lab.spec.tcp import TcpSettings
from tests.integration.conftest import H2LAB, h2lab_netns

ORIGIN = "o1.h2lab.test"


def _lost(spec: str, seed: int, count: int = 2000) -> tuple[int, ...]:
    profile = parse_network(spec)
    with Lab((ORIGIN,)) as lab, lab.link(profile, seed, TcpSettings()) as link:
        probe = udp_probe(link.client_ns, lab.servers_ns, lab.origin_ips[ORIGIN], count, 1000.0)
    return probe.lost_seq


def test_same_seed_same_packets_dropped_different_seed_different() -> None:
    spec = "rtt=10ms,loss=5%"
    first, again, other = _lost(spec, 7), _lost(spec, 7), _lost(spec, 8)
    print(f"seed 7: {len(first)} lost, again {len(again)}, seed 8: {len(other)}")
    assert len(first) > 50
    assert first == again
    assert first != other


def _mean_burst(lost: tuple[int, ...]) -> float:
    runs, run = [], 1
    for a, b in itertools.pairwise(lost):
        if b == a + 1:
            run += 1
        else:
            runs.append(run)
            run = 1
    runs.append(run)
    return statistics.fmean(runs)


def test_gilbert_bursts_have_the_asked_mean_length() -> None:
    bernoulli = _lost("rtt=10ms,loss=5%", 3, 4000)
    bursty = _lost("rtt=10ms,loss=5%,loss_burst=4", 3, 4000)
    b1, b4 = _mean_burst(bernoulli), _mean_burst(bursty)
    print(f"mean burst: bernoulli {b1:.2f}, gilbert(4) {b4:.2f}; losses {len(bursty) / 40:.2f}%")
    assert b1 < 1.3
    assert 2.8 <= b4 <= 5.5
    assert 3.0 <= len(bursty) / 4000 * 100 <= 7.5


def _net_check(profile: str, *extra: str) -> tuple[int, list[dict[str, object]]]:
    done = subprocess.run(
        [H2LAB, "net", "check", profile, "--json", *extra],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


@pytest.mark.alone
def test_net_check_json_rows_pass_for_a_static_profile() -> None:
    profile = "rtt=40ms,down=10Mbps,up=2Mbps,loss=1%"
    rc, rows = _net_check(profile, "--quick")
    for row in rows:
        print(row)
    if any(r["metric"] == "rtt" and r["pass"] is False for r in rows):
        # --quick judges RTT on 10 probes in 0.5 s. Once in CI, a busy neighbour of the 2-core VM
        # delayed all of them by 0.7 ms: RTT 40.911 ms, yet 40.0 ms under load a second later
        # (queueing delay -0.92 ms); here it measures 40.14-40.24 ms (net/calibration.py takes
        # Rattan's own latency off, as measured on the machine). Measure once more; a second miss
        # is the emulator's.
        rc, rows = _net_check(profile, "--quick")
        for row in rows:
            print("again:", row)
    assert rc in (0, 1)
    assert all(
        list(r) == ["metric", "direction", "asked", "measured", "unit", "tolerance", "pass"]
        for r in rows
    )
    metrics = {(r["metric"], r["direction"]) for r in rows}
    assert {("rtt", "both"), ("goodput", "down"), ("goodput", "up"), ("loss", "up")} <= metrics
    assert ("queueing_delay", "down") in metrics
    # each loss row is a 99% interval: it misses 1% of the time by chance, so judge it loosely
    for r in rows:
        if r["metric"] == "loss":
            assert isinstance(r["measured"], float) and 0.2 <= r["measured"] <= 3.0, r
        else:
            assert r["pass"] is not False, r


@pytest.mark.alone
def test_jitter_spreads_each_packets_delay_and_reorders_as_asked() -> None:
    """The reordering knob: every datagram's one-way delay spreads with the standard deviation
    asked, and as many arrive after a later one as that spread gives at their spacing (the
    rows ``net check`` judges; its TCP flows are shortened here, they are info under jitter)."""
    profile = parse_network("rtt=100ms,rate=10Mbps,up_jitter=2ms,down_jitter=5ms")
    with Lab((ORIGIN,)) as lab, lab.link(profile, 3, TcpSettings()) as link:
        rows = check_static(
            lab, link, profile, lab.origin_ips[ORIGIN], quick=True, queueing=False, flow_s=1.0
        )
    for row in rows:
        print(row)
    by = {(r.metric, r.direction): r for r in rows}
    assert by[("rtt", "both")].passed
    assert by[("delay_jitter", "up")].asked == 2.0 and by[("delay_jitter", "up")].passed
    assert by[("delay_jitter", "down")].asked == 5.0 and by[("delay_jitter", "down")].passed
    for direction in ("up", "down"):
        reordered = by[("reordered", direction)]
        assert reordered.passed, reordered
        assert isinstance(reordered.measured, float) and 30 <= reordered.measured <= 70


@pytest.mark.timing  # queueing delays against 25 ms
def test_codel_keeps_the_queue_short_where_droptail_fills_it() -> None:
    _, droptail = _net_check("rtt=20ms,rate=10Mbps,queue=200", "--quick")
    _, codel = _net_check("rtt=20ms,rate=10Mbps,queue=200,aqm=codel", "--quick")
    q_tail = next(r["measured"] for r in droptail if r["metric"] == "queueing_delay")
    q_codel = next(r["measured"] for r in codel if r["metric"] == "queueing_delay")
    print(f"queueing delay under load: droptail {q_tail} ms, codel {q_codel} ms")
    assert isinstance(q_tail, float) and isinstance(q_codel, float)
    assert q_codel < 25 < q_tail


@pytest.mark.timing  # a measured rate
def test_mahimahi_trace_sets_the_rate(tmp_path: Path) -> None:
    trace = tmp_path / "12mbps.trace"  # one 1500-byte packet per ms = 12 Mbit/s
    trace.write_text("".join(f"{ms}\n" for ms in range(1, 1001)))
    profile = parse_network(f"rtt=20ms,trace={trace}")
    with Lab((ORIGIN,)) as lab:
        rows = check(lab, profile, 1, TcpSettings(), quick=True)
    goodput = {r.direction: r for r in rows if r.metric == "goodput"}
    print({d: (r.asked, r.measured) for d, r in goodput.items()})
    assert set(goodput) == {"up", "down"}
    assert all(r.passed for r in goodput.values())


@pytest.mark.alone
def test_cellular_good_follows_its_traces() -> None:
    """Every row is a statistical judgement over 14 s of 70 ms steps (the RTT-per-step share's
    bound is the static link's floor on this machine kind: judge.STEP_RTT_CLOSE_SHARE)."""
    rc, rows = _net_check("cell-good")
    for row in rows:
        print(row)
    by = {r["metric"]: r for r in rows}
    assert by["rate_per_step_correlation"]["pass"] is True
    assert by["rate_per_step_error"]["pass"] is True
    assert by["rtt_per_step_within_2ms"]["pass"] is True
    assert by["loss_in_episodes"]["pass"] is True
    assert rc == 0


def test_bad_profiles_exit_2_naming_field_or_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.trace"
    empty.write_text("")
    cases = {
        "nosuch": "PROFILE: unknown profile 'nosuch'",
        "rtt=100": "PROFILE.rtt",
        "rtt=10ms,loss=150%": "PROFILE.loss",
        "trace=/nonexistent/x.trace": "/nonexistent/x.trace",
        f"trace={empty}": str(empty),
        "cell-good,loss=1%": "PROFILE.loss",
        "rtt=20ms,jitter=5ms": "PROFILE.jitter: 5 ms cannot be emulated over a 10 ms one-way",
    }
    for spec, expected in cases.items():
        done = subprocess.run([H2LAB, "net", "check", spec], capture_output=True, text=True)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2, (spec, done.stderr)
        assert len(lines) == 1 and expected in lines[0], (spec, lines)
    assert h2lab_netns() == []


def test_net_shell_runs_commands_in_the_client_namespace() -> None:
    done = subprocess.run(
        [H2LAB, "net", "shell", "rtt=30ms"],
        input="getent hosts server.h2lab.test; ip -4 -o addr show | grep -c vL1; exit\n",
        capture_output=True, text=True, timeout=60,
        env={"SHELL": "/bin/bash", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "10.2.0.1" in done.stdout and "server.h2lab.test" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "1"  # the Rattan veth is there
    assert h2lab_netns() == []
