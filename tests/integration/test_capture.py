"""``capture = ["pcap"]`` end to end (issue #33): a trial's packets on the client's side of the
link, with its TLS keys beside them, decode in tshark to the trial's own HTTP/2 requests.

tshark counts the HEADERS frames (``http2.type == 1``) the client sent (source address on
Rattan's client side, 10.1.0.0/16); each opens one request's stream, so there are as many as
the trial stored h2 requests. Over TLS that holds only when the trial's keylog has the keys
of every connection it opened: a Chromium browser is kept between the trials of a block, so
the second trial's keys are the slice its browser logged after the first's. So is Firefox's."""

from __future__ import annotations

import ipaddress
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from h2lab import procs
from h2lab.artifacts import CAPTURE_KEYLOG, CAPTURE_LOG, CAPTURE_PCAP
from h2lab.metrics.counters import parse_dev
from h2lab.net import netns
from h2lab.net.capture import PacketCapture, tcpdump_counts, whole_records_bytes
from h2lab.net.lab import CLIENT_NET, PROBE_IP, Lab
from h2lab.results import TrialRecord
from h2lab.runner.captures import client_iface
from h2lab.runner.matrix import expand
from h2lab.runner.run import run_trials
from h2lab.spec.experiment import Experiment, validate_factors
from h2lab.spec.network import parse_network
from h2lab.spec.tcp import TcpSettings
from h2lab.store import Store
from tests.integration.conftest import h2lab_netns, lab_processes

NETWORK = "rtt=20ms,rate=20Mbps"


def _run(out: Path, name: str, factors: dict[str, list[str]], repetitions: int) -> Store:
    exp = Experiment(
        name=name,
        factors=validate_factors("test", {"network": [NETWORK], "server": ["nginx"], **factors}),
        seed=33,
        repetitions=repetitions,
        capture=("pcap",),
    )
    store = Store(out)
    run_trials(expand(exp), store, timeout_s=60, capture=exp.capture)
    return store


def client_headers_frames(pcap: Path, keylog: Path | None) -> list[int]:
    """The stream ids of the HEADERS frames the client sent, as tshark decodes them."""
    argv = ["tshark", "-r", str(pcap), "-Y", "http2.type == 1", "-T", "fields"]
    argv += ["-e", "ip.src", "-e", "http2.type", "-e", "http2.streamid"]
    if keylog is not None:
        argv += ["-o", f"tls.keylog_file:{keylog}"]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=120).stdout
    streams = []
    for line in out.splitlines():
        src, types, ids = line.split("\t")
        if ipaddress.ip_address(src) not in ipaddress.ip_network(CLIENT_NET):
            continue
        # one packet may carry several frames: their types and stream ids, comma-separated
        streams += [
            int(i) for t, i in zip(types.split(","), ids.split(","), strict=True) if t == "1"
        ]
    return streams


def _check_capture(folder: Path) -> int:
    """The capture is complete (every packet tcpdump captured is in the file, none dropped by
    the kernel, none past the cap); its packet count."""
    with (folder / CAPTURE_PCAP).open("rb") as f:
        records = whole_records_bytes(f)
    log = (folder / CAPTURE_LOG).read_text()
    counts = tcpdump_counts(log)
    assert counts["captured"] == records.packets > 0, log
    assert counts["dropped by kernel"] == 0, log
    assert "size cap" not in log, log
    return records.packets


def _tcpdumps_of(folder: Path) -> list[str]:
    out = subprocess.run(["pgrep", "-a", "-x", "tcpdump"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if str(folder) in line]


def _ok(store: Store, name: str) -> list[TrialRecord]:
    trials = store.trials(experiment=name)
    assert [t.error for t in trials if t.status != "ok"] == []
    return trials


@pytest.mark.parametrize("browser", ["chromium", "firefox"])
def test_browser_h2s_capture_decodes_to_as_many_headers_as_h2_requests(
    tmp_path: Path, browser: str
) -> None:
    page = "synthetic:n=30,size=4KB"
    store = _run(tmp_path, "pcap", {"protocol": ["h2s"], "page": [page], "client": [browser]},
                 repetitions=2)  # fmt: skip
    try:
        trials = _ok(store, "pcap")
        assert len(trials) == 2
        for t in trials:
            assert t.id is not None
            folder = store.artifacts_dir(t.trial_key, t.attempt)
            h2_requests = [r for r in store.resources(t.id) if r["protocol"] == "h2"]
            assert len(h2_requests) == 31  # the document and its 30 images
            packets = _check_capture(folder)
            lines = (folder / CAPTURE_KEYLOG).read_text().splitlines()
            keys = [line for line in lines if not line.startswith("#")]  # NSS's header line
            assert keys and all(len(line.split()) == 3 for line in keys)
            streams = client_headers_frames(folder / CAPTURE_PCAP, folder / CAPTURE_KEYLOG)
            assert len(streams) == len(h2_requests), (t.repetition, packets, streams)
            assert all(s % 2 == 1 for s in streams)  # client-initiated streams are odd
            # without the keys nothing decodes: the frames above came from the keylog
            assert client_headers_frames(folder / CAPTURE_PCAP, None) == []
    finally:
        store.close()
    assert _tcpdumps_of(tmp_path) == []


def test_h2load_captures_decode_for_h2c_without_keys_and_h2s_with_them(tmp_path: Path) -> None:
    store = _run(tmp_path, "pcap-h2load", {"protocol": ["h2c", "h2s"],
                                           "page": ["synthetic:n=12,size=2KB,origins=2"],
                                           "client": ["h2load"]}, repetitions=1)  # fmt: skip
    try:
        trials = _ok(store, "pcap-h2load")
        assert sorted(t.protocol for t in trials) == ["h2c", "h2s"]
        for t in trials:
            assert t.id is not None
            folder = store.artifacts_dir(t.trial_key, t.attempt)
            requests = store.resources(t.id)
            assert len(requests) == 13  # the document and 12 objects
            _check_capture(folder)
            keylog = folder / CAPTURE_KEYLOG
            assert keylog.exists() == (t.protocol == "h2s")
            streams = client_headers_frames(
                folder / CAPTURE_PCAP, keylog if keylog.exists() else None
            )
            assert len(streams) == len(requests), (t.protocol, streams)
    finally:
        store.close()
    assert _tcpdumps_of(tmp_path) == []


def test_a_failed_trial_keeps_its_capture_whole_and_leaves_no_tcpdump(tmp_path: Path) -> None:
    """h2load cannot fetch 8 MB over 1 Mbit/s in the trial's 2 s: the trial fails on its
    timeout, and the capture stops with it, every packet it took written."""
    factors = {
        "protocol": ["h2c"],
        "network": ["rtt=20ms,rate=1Mbps"],
        "server": ["nginx"],
        "page": ["synthetic:n=4,size=2MB"],
        "client": ["h2load"],
    }
    exp = Experiment(
        name="pcap-timeout", factors=validate_factors("test", factors), capture=("pcap",)
    )
    store = Store(tmp_path)
    try:
        [trial] = run_trials(expand(exp), store, timeout_s=2, capture=exp.capture)
        assert trial.status == "failed" and "did not finish within 2 s" in (trial.error or "")
        folder = store.artifacts_dir(trial.trial_key, trial.attempt)
        packets = _check_capture(folder)
        # the transfer was under way when the timeout cut it: more than the handshakes. How
        # far it got is the host's business (2 s at 1 Mbit/s carry some 160 segments; a slow
        # CI host spent most of the 2 s starting up and took 87 packets), so no bound on it
        assert packets > 20
    finally:
        store.close()
    assert _tcpdumps_of(tmp_path) == []


def test_the_size_cap_keeps_a_valid_pcap_of_whole_packets(tmp_path: Path) -> None:
    """100 pings of 1000 bytes each way (some 210 KB of packets) into a capture capped at
    20 000 bytes: the file stops below the cap at a whole packet, tshark reads it without
    complaint, and the log counts the packets not kept."""
    cap_bytes = 20_000
    pcap, log = tmp_path / CAPTURE_PCAP, tmp_path / CAPTURE_LOG
    with Lab() as lab, lab.link(parse_network("rtt=2ms"), 1, TcpSettings()) as link:
        iface = client_iface(parse_dev(netns.read_proc_net(link.client_ns, "dev")))
        with PacketCapture(link.client_ns, iface, pcap, log, cap_bytes=cap_bytes):
            ping = ["ping", "-q", "-c", "100", "-i", "0.005", "-s", "1000", PROBE_IP]
            procs.run(netns.exec_argv(link.client_ns, ping))
    assert pcap.stat().st_size <= cap_bytes
    with pcap.open("rb") as f:
        records = whole_records_bytes(f)
    assert records.whole_bytes == pcap.stat().st_size
    read = subprocess.run(["tshark", "-r", str(pcap)], capture_output=True, text=True)
    assert read.returncode == 0, read.stderr
    assert len(read.stdout.splitlines()) == records.packets
    counts = tcpdump_counts(log.read_text())
    assert counts["captured"] >= 200  # and what else crossed the link (an ARP exchange)
    not_kept = counts["captured"] - records.packets
    assert f"the size cap of {cap_bytes} bytes was reached: {not_kept} not kept" in log.read_text()
    assert _tcpdumps_of(tmp_path) == []


INTERRUPTED = """
name = "pcap-interrupt"
seed = 3
repetitions = 6
capture = ["pcap"]
[factors]
protocol = ["h1s", "h2s"]
network = ["rtt=100ms,down=5Mbps,up=1Mbps"]
page = ["synthetic:n=24,size=20KB,origins=2"]
"""


def _listening(out: Path) -> int:
    """How many trials' tcpdumps have said they listen."""
    logs = out.glob(f"artifacts/*/{CAPTURE_LOG}")
    return sum("listening on" in log.read_text() for log in logs)


def test_an_interrupted_run_stops_its_capture_and_leaves_a_whole_file(tmp_path: Path) -> None:
    """SIGINT while trials run: h2lab tears down as usual, the running trial's tcpdump goes
    with it, and every capture written is a valid pcap of whole packets."""
    exp, out = tmp_path / "exp.toml", tmp_path / "out"
    exp.write_text(INTERRUPTED)
    with (tmp_path / "stderr").open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "h2lab", "run", str(exp), "--out", str(out)],
            stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True,
        )  # fmt: skip
    try:
        procs.wait_until(
            "the second trial's capture listening",
            lambda: _listening(out) >= 2 and _tcpdumps_of(out) != [],
            timeout_s=90,
            poll_s=0.05,
        )
    finally:
        os.kill(proc.pid, signal.SIGINT)
        code = proc.wait(timeout=60)
    assert code == 130, (tmp_path / "stderr").read_text()[-2000:]
    assert _tcpdumps_of(out) == [] and lab_processes() == [] and h2lab_netns() == []
    packets = []
    for pcap in sorted(out.glob(f"artifacts/*/{CAPTURE_PCAP}")):
        with pcap.open("rb") as f:
            records = whole_records_bytes(f)
        assert records.whole_bytes == pcap.stat().st_size
        log = (pcap.parent / CAPTURE_LOG).read_text()
        assert tcpdump_counts(log)["captured"] == records.packets, log
        packets.append(records.packets)
    # the first trial's, and the one the signal stopped (maybe before its client sent a
    # packet: a pcap of its header alone, whole too)
    assert len(packets) >= 2 and max(packets) > 0, packets
