"""The OkHttp client (okhttp/) in the lab, with the server as the witness of its Dispatcher: 5
calls per host are at most 5 HTTP/2 streams open at once at the Go origin (its frame log, with a
think time that keeps each stream open there) and at most 5 TCP connections accepted over
HTTP/1.1 (the servers' namespace's PassiveOpens). h1c and h2c load; pdt_ms is held against
h2load:per_host=5 on the same cells; a trial whose server is gone fails with the reason and the
next trial runs."""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import threading
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from h2lab import clients
from h2lab.clients import LoadContext, LoadResult
from h2lab.clients.okhttp_build import ensure_built
from h2lab.metrics.counters import parse_snmp
from h2lab.net.lab import Lab, Link
from h2lab.net.netns import read_proc_net
from h2lab.pages import Page, resolve_page
from h2lab.servers import ServeContext
from h2lab.servers import get as get_server
from h2lab.servers.origin import FRAME_LOG
from h2lab.spec.network import parse_network
from h2lab.spec.registry import Entry
from h2lab.spec.tcp import TcpSettings
from h2lab.tls import CertPair, LocalCA
from tests.integration.conftest import run_experiment
from tests.timing import Interval, RecordProperty, assert_within, paired_ratio

PAGE = "synthetic:n=40,size=10KB,origins=1"
PAIRED_REPETITIONS = 8
"""Paired repetitions of the page-time test: with 5, one slow load in a run with idle work
beside it put the interval's end on the bound (1.141 [0.929, 1.4] without Nagle, h2s)."""
NAGLE_RATIO = 1.4
"""Page time against h2load:per_host=5's that tells Nagle's second round trip per request
(above) from the JVM's own time (below): test_pdt_against_h2load_per_host_5. Its inverse is the
bound below: with other work on the machine h2load was the slower (0.855 [0.766, 0.954] on h1s)."""
NAGLE_PAIRED = 1.25
"""OkHttp's page time over h2s against its own with nodelay=1's, below which Nagle's second
round trip per request would be gone (idle 1.628 [1.58, 1.678], n = 8). Paired on the same JVM,
it tells Nagle apart where okhttp:nodelay=1 against h2load cannot on a busy machine: in a fresh
clone's alone run, with the idle lanes beside, the JVM's own time made that 1.343 [1.125,
1.603] times h2load's (idle 1.073 [1.054, 1.093]), on the far side of :data:`NAGLE_RATIO`."""
THINK_MS = 20.0
"""the origin's think time: each request holds its stream open there at least this long"""


@pytest.fixture(scope="module")
def page() -> Page:
    return resolve_page(PAGE)


def max_open(intervals: Iterable[tuple[float, float]]) -> int:
    """The most intervals open at one time (one that ends when another starts does not
    overlap it)."""
    events = sorted((t, kind) for start, end in intervals for t, kind in ((start, 1), (end, -1)))
    most = now = 0
    for _, kind in events:
        now += kind
        most = max(most, now)
    return most


def server_streams(frame_log: str) -> list[tuple[float, float]]:
    """Each HTTP/2 stream's time open at the origin, in ms: from its request's arrival (its
    first frame, the response headers, less the think time) to its last frame."""
    seen: dict[tuple[str, str], list[float]] = defaultdict(list)
    for line in frame_log.splitlines()[1:]:
        t_us, conn, stream, _kind, _size = line.split("\t")
        if stream != "0":
            seen[(conn, stream)].append(int(t_us) / 1000)
    return [(min(ts) - THINK_MS, max(ts)) for ts in seen.values()]


def _load(spec: str, page: Page, protocol: str, lab: Lab, link: Link, out: Path) -> LoadResult:
    ctx = LoadContext(
        link.client_ns, out, 60, hosts=dict(lab.origin_ips), tls_dir=lab.state_dir / "tls"
    )
    return clients.get(spec).load(page, protocol, ctx)


def _client_open(result: LoadResult) -> int:
    return max_open((r.start_ms, r.end_ms) for r in result.resources)


def _mostly_one_connection(result: LoadResult) -> bool:
    """Over h2 every call after the first 5 goes on one connection. The first 5 each open one
    at once (OkHttp's race); a call whose own connection was ready first may use it."""
    used = Counter(r.connection for r in result.resources)
    return len(used) <= 5 and used.most_common(1)[0][1] >= len(result.resources) - 4


def _no_jvm_left() -> None:
    found = subprocess.run(["pgrep", "-af", "h2lab-okhttp.jar"], capture_output=True, text=True)
    assert found.stdout.strip() == ""


@pytest.mark.alone  # the control's streams open at once: 14 and 11 against 15 beside lanes
def test_h2s_keeps_at_most_5_streams_open_at_the_server(page: Page, tmp_path: Path) -> None:
    seen = {}
    with Lab(page.origins) as lab, lab.link(parse_network("rtt=10ms"), 1, TcpSettings()) as link:
        for spec in ("okhttp", "okhttp:per_host=20"):  # the shipped limit, and a control
            name = spec.replace(":", "-").replace("=", "")
            ctx = ServeContext(
                lab.servers_ns, lab.origin_ips, lab.state_dir / name, lab.state_dir / "tls"
            )
            server = get_server(f"origin:framelog=1,think={THINK_MS:g}ms")
            with server.serve(page, ctx):
                result = _load(spec, page, "h2s", lab, link, tmp_path / name)
            streams = server_streams((ctx.state_dir / FRAME_LOG).read_text())
            seen[spec] = (result, streams)
            print(
                f"{spec} h2s: {len(streams)} streams, at most {max_open(streams)} open at the "
                f"origin, {_client_open(result)} by the client's times, pdt {result.pdt_ms:.0f} ms"
            )
    result, streams = seen["okhttp"]
    assert len(streams) == len(result.resources) == 41
    # the cap holds at the server; it is not always reached there: the 5 calls each race a
    # connection of their own, and a call whose own connection is ready first sends its request
    # there (at most 4 and 3 open at once on the busy connection in two full runs). The client
    # does run 5 at once (its own times), and the control shows the witness sees more.
    assert max_open(streams) <= 5
    assert 4 <= _client_open(result) <= 5
    assert {r.protocol for r in result.resources} == {"h2"}
    assert _mostly_one_connection(result)
    assert result.body_bytes == page.total_body_bytes
    _, control = seen["okhttp:per_host=20"]
    # the witness sees more than the cap when the client sends more: 11-14 open quietly, 8 and
    # 10 with idle work beside the alone run (a bound of 15 missed in 2 runs of 3); what shows
    # that the server's count is not itself held to 5 is any count above it
    assert max_open(control) > 5
    _no_jvm_left()


def test_h1s_opens_at_most_5_connections_and_h1c_h2c_load(page: Page, tmp_path: Path) -> None:
    with Lab(page.origins) as lab:
        ctx = ServeContext(
            lab.servers_ns, lab.origin_ips, lab.state_dir / "srv", lab.state_dir / "tls"
        )
        with (
            get_server("nginx").serve(page, ctx),
            lab.link(parse_network("rtt=10ms"), 1, TcpSettings()) as link,
        ):
            loads = {}
            for protocol in ("h1s", "h1c", "h2c"):
                before = parse_snmp(read_proc_net(lab.servers_ns, "snmp"))["PassiveOpens"]
                result = _load("okhttp", page, protocol, lab, link, tmp_path / protocol)
                after = parse_snmp(read_proc_net(lab.servers_ns, "snmp"))["PassiveOpens"]
                loads[protocol] = (result, after - before)
                conns = len({r.connection for r in result.resources})
                print(
                    f"okhttp {protocol}: {after - before} connections accepted by the servers, "
                    f"{conns} used, at most {_client_open(result)} requests open, "
                    f"pdt {result.pdt_ms:.0f} ms"
                )
    for protocol, (result, _) in loads.items():
        assert result.body_bytes == page.total_body_bytes, protocol
        assert _client_open(result) == 5, protocol
    h1s, accepted = loads["h1s"]
    assert accepted == 5 and len({r.connection for r in h1s.resources}) == 5
    assert {r.protocol for r in h1s.resources} == {"http/1.1"}
    h1c, accepted = loads["h1c"]
    assert accepted == 5 and {r.protocol for r in h1c.resources} == {"http/1.1"}
    h2c, accepted = loads["h2c"]
    assert {r.protocol for r in h2c.resources} == {"h2"}
    assert _mostly_one_connection(h2c)
    assert 1 <= accepted <= 5  # OkHttp races a connection per waiting call, keeps one
    _no_jvm_left()


@pytest.mark.alone
def test_pdt_against_h2load_per_host_5(tmp_path: Path, record_property: RecordProperty) -> None:
    """Measured 2026-11-26 (rtt 50 ms, n = 5, 40 x 10 KB): medians h2load:per_host=5 453 / 504
    ms (h1s / h2s), okhttp 509 / 899, okhttp:nodelay=1 487 / 527. OkHttp never sets
    TCP_NODELAY: over h2 Nagle holds each request written while another is unacknowledged, so a
    request takes 2 round trips (99 ms from written to last byte, 52 with nodelay=1).

    Without Nagle, OkHttp is h2load:per_host=5 plus its JVM's own time per request: +4% on
    h2s; +7.5 % to +12.7 % on h1s, where 5 cold TLS connections each add it (docs/okhttp.md,
    "Measured"). A bound of 12 % on medians of 3 sat on that value and failed 2 fresh-clone
    runs of 2, and with other work on the machine the JVM's share grows (1.164 [1.068, 1.269]
    on h1s, n = 6). The bound here sits where the property is decided instead: between the
    JVM's own time and Nagle's second round trip per request (h2s 1.8-2.0 times h2load's), at
    1.4 times h2load's page time: the interval of the paired ratio is below it without Nagle
    (on h1s) and above it with Nagle (h2s); over h2s, where the JVM's time on a busy machine
    reaches past that bound, OkHttp's page time with Nagle is above :data:`NAGLE_PAIRED` times
    its own without, over 8 paired repetitions (tests/timing.py)."""
    records = run_experiment(
        tmp_path,
        "okhttp-vs-h2load",
        {
            "protocol": ["h1s", "h2s"],
            "network": ["rtt=50ms"],
            "page": [PAGE],
            "server": ["nginx"],
            "client": ["okhttp", "okhttp:nodelay=1", "h2load:per_host=5"],
        },
        seed=32,
        repetitions=PAIRED_REPETITIONS,
    )
    assert [r.error for r in records if r.status != "ok"] == []
    pdt: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    conns: dict[tuple[str, str], set[int | None]] = defaultdict(set)
    for r in records:
        client = str(r.cell["client"])
        assert r.pdt_ms is not None
        pdt[(client, r.protocol)][r.repetition] = r.pdt_ms
        conns[(client, r.protocol)].add(r.tcp_connections)

    def ratio(a: str, b: str, protocol: str) -> Interval:
        reps = sorted(pdt[(b, protocol)])
        return paired_ratio(
            [pdt[(a, protocol)][i] for i in reps], [pdt[(b, protocol)][i] for i in reps]
        )

    for protocol in ("h1s", "h2s"):
        jvm = ratio("okhttp:nodelay=1", "h2load:per_host=5", protocol)
        high = NAGLE_RATIO if protocol == "h1s" else None  # h2s: NAGLE_PAIRED decides
        what = f"okhttp:nodelay=1 / h2load pdt, {protocol}"
        assert_within(record_property, what, jvm, 1 / NAGLE_RATIO, high)
        nagle = ratio("okhttp", "okhttp:nodelay=1", protocol)
        what = f"okhttp / okhttp:nodelay=1 pdt, {protocol}"  # Nagle never saves a round trip
        assert_within(record_property, what, nagle, 1 / NAGLE_RATIO)
    # over h2 Nagle's round trip is there without nodelay=1 and gone with it
    nagle = ratio("okhttp", "okhttp:nodelay=1", "h2s")
    what = "okhttp / okhttp:nodelay=1 pdt, h2s (Nagle)"
    assert_within(record_property, what, nagle, NAGLE_PAIRED)
    h2 = ratio("okhttp", "h2load:per_host=5", "h2s")
    assert_within(record_property, "okhttp / h2load pdt, h2s (Nagle)", h2, NAGLE_RATIO)
    assert conns[("okhttp", "h1s")] == conns[("h2load:per_host=5", "h1s")] == {5}


class _KillsItsServerFirst(clients.ClientAdapter):
    """okhttp, except that before its first load it kills its lab's origin server (SIGKILL, by
    pid: the origin whose configuration is in the lab's state folder), as a crash."""

    name = "okhttp"

    def __init__(self) -> None:
        self.inner = clients.get("okhttp")
        self.protocols = self.inner.protocols
        self.loads = 0

    def version(self) -> str:
        return self.inner.version()

    def load(self, page: Page, protocol: str, ctx: LoadContext) -> LoadResult:
        self.loads += 1
        if self.loads == 1:
            assert ctx.tls_dir is not None
            os.kill(_origin_pid(ctx.tls_dir.parent), signal.SIGKILL)
        return self.inner.load(page, protocol, ctx)

    def close(self) -> None:
        self.inner.close()


def _origin_pid(state_dir: Path) -> int:
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[0].endswith(b"h2lab-origin") and any(str(state_dir).encode() in a for a in argv):
            return int(proc.name)
    raise AssertionError(f"no h2lab-origin serving from {state_dir}")


def test_a_trial_whose_server_is_gone_fails_with_the_reason_and_the_next_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    crashy = Entry(lambda _: _KillsItsServerFirst())
    monkeypatch.setitem(clients.REGISTRY.entries, "okhttp-crashy", crashy)
    first, second = run_experiment(
        tmp_path,
        "okhttp-server-gone",
        {
            "protocol": ["h2s"],
            "network": ["rtt=2ms"],
            "page": ["synthetic:n=2,size=1KB,origins=1"],
            "server": ["origin"],
            "client": ["okhttp-crashy"],
        },
        seed=5,
        repetitions=2,
    )
    print(first.error)
    assert first.status == "failed" and first.error is not None
    assert first.error.startswith("server origin died during the trial")
    assert "the client: okhttp: 3 of 3 requests failed, https://o1.h2lab.test/" in first.error
    assert "java.net.ConnectException: Failed to connect to o1.h2lab.test/" in first.error
    assert second.status == "ok" and second.pdt_ms is not None
    assert second.body_bytes is not None and second.body_bytes >= 2 * 1000
    _no_jvm_left()


class _TlsServer:
    """A loopback TLS server with ``pair``'s certificate: it answers every request ``200 ok``
    (or, when not ``answer``, reads it and says nothing); closed with its ``with`` block."""

    def __init__(self, pair: CertPair, answer: bool) -> None:
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(pair.cert, pair.key)
        self.answer = answer
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)  # a close from another thread does not wake accept()
        self.stopping = threading.Event()
        self.port: int = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _TlsServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.thread.join(timeout=5)
        self.sock.close()
        for conn in self.held:
            conn.close()

    def _run(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            conn.settimeout(10)
            self.held.append(conn)
            try:
                tls = self.ctx.wrap_socket(conn, server_side=True)
                self.held.append(tls)
                tls.recv(4096)
                if self.answer:
                    tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            except OSError:
                continue  # the client refused the certificate


def _run_plan(tmp_path: Path, ca: LocalCA, port: int, n: int, timeout_ms: int) -> dict[str, Any]:
    plan = {
        "protocol": "h1s",
        "urls": [f"https://lo.test:{port}/{i}" for i in range(n)],
        "hosts": {"lo.test": "127.0.0.1"},
        "ca_pem": str(ca.cert_path),
        "timeout_ms": timeout_ms,
    }
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    jar = str(ensure_built())
    subprocess.run(["java", "-jar", jar, f"{tmp_path}/plan.json", f"{tmp_path}/r.json"], check=True)
    result: dict[str, Any] = json.loads((tmp_path / "r.json").read_text())
    return result


@pytest.mark.timing  # a load bounded between 1 and 3.5 s
def test_trusts_only_the_lab_ca_verifies_names_and_bounds_the_load(tmp_path: Path) -> None:
    """The program alone, on loopback: a certificate of another CA and one for another name
    are refused; a server that never answers is reported after the plan's bound, every call
    that was running or waiting marked unfinished."""
    lab, other = LocalCA(tmp_path / "lab"), LocalCA(tmp_path / "other", name="another CA")
    said = {}
    for what, pair in (
        ("lab", lab.leaf("lo.test")),
        ("other CA", other.leaf("lo.test")),
        ("other name", lab.leaf("other.test")),
    ):
        with _TlsServer(pair, answer=True) as server:
            (call,) = _run_plan(tmp_path, lab, server.port, 1, 5000)["requests"]
        said[what] = (call["status"], call["error"])
        print(what, said[what])
    assert said["lab"] == (200, None)
    assert said["other CA"][1].startswith("javax.net.ssl.SSLHandshakeException: PKIX path")
    assert said["other name"][1].startswith(
        "javax.net.ssl.SSLPeerUnverifiedException: Hostname lo.test not verified:"
    )
    assert "\n" not in said["other name"][1]

    with _TlsServer(lab.leaf("lo.test"), answer=False) as server:
        result = _run_plan(tmp_path, lab, server.port, 7, 1000)
    assert result["timed_out"] is True
    assert 1000 <= result["total_ms"] < 1000 + 2500
    errors = [c["error"] for c in result["requests"]]
    assert errors == ["not finished within the trial's 1000 ms"] * 7  # 5 running, 2 queued
    _no_jvm_left()
