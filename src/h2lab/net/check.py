"""``h2lab net check``: measure the emulated link and compare it with what was asked.

Every probe runs between the lab's own namespaces: sockets are created by threads that entered
the client or servers namespace (:func:`h2lab.net.netns.run_in_netns`) and then used from
ordinary threads. Rows are ``CheckRow(metric, direction, asked, measured, unit, tolerance,
passed)``; ``passed`` is ``None`` for rows that are reported, not judged.

What is measured, and how:

* ``rtt``: TCP SYN -> RST round trips to a closed port, one warm-up, then N samples; judged on
  the 20% trimmed mean (with ``--quick``'s 10 samples, two scheduling hiccups of the 2-core VM
  cannot move it: one of 9 ms moved a 10% trimmed mean by 0.9 ms), tolerance max(0.5 ms, 1%).
* ``goodput``: one TCP bulk flow per direction for a few seconds; goodput over the last 60% of
  it, against rate x 1448/1500 (TCP payload per IP packet with timestamps); +-3%. Judged only
  on a loss-free link (with loss, TCP's own reaction sets the goodput).
* ``loss``: sequence-numbered UDP datagrams, paced well below the rate; the count lost must lie
  in the 99% binomial interval of the asked ratio (exactly 0 when no loss is asked).
* ``queueing_delay``: RTT probes while a downlink bulk flow fills the queue, minus the idle RTT;
  a droptail queue cannot hold more than limit/rate, CoDel aims at its target.
* ``emulator_drops`` (static profiles): packets Rattan's sockets dropped because they were
  full, over the whole check (none asked for, so it must be 0).
* dynamic (cellular) profiles: a downlink UDP flood above the trace's peak for one trace period;
  delivered bytes per 70 ms step against the trace (Pearson correlation, median absolute
  error), and loss episodes seen by an uplink probe against the schedule.
"""

from __future__ import annotations

import dataclasses
import json
import math
import socket
import statistics
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from h2lab import procs
from h2lab.errors import H2LabError
from h2lab.net import netns, traces
from h2lab.net.lab import Lab, Link
from h2lab.net.probe import rtt_samples_ms, rtt_series
from h2lab.spec import cellular
from h2lab.spec.network import NetworkProfile
from h2lab.spec.tcp import TcpSettings

# TCP payload per full IP packet: MSS 1448 = 1500 - 20 (IP) - 20 (TCP) - 12 (timestamps).
PAYLOAD_SHARE = 1448 / 1500
TCP_PORT = 5201
UDP_PORT = 5202


@dataclass(frozen=True)
class CheckRow:
    metric: str
    direction: str
    asked: float | None
    measured: float | None
    unit: str
    tolerance: str
    passed: bool | None

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["pass"] = d.pop("passed")
        return d


# --- pure helpers ----------------------------------------------------------------------------


def binomial_interval(n: int, p: float, confidence: float = 0.99) -> tuple[int, int]:
    """Central interval of Binomial(n, p) holding ``confidence`` of its mass (counts)."""
    if p <= 0:
        return (0, 0)
    if p >= 1:
        return (n, n)
    tail = (1 - confidence) / 2
    log_pmf = [
        math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
        + k * math.log(p) + (n - k) * math.log1p(-p)
        for k in range(n + 1)
    ]  # fmt: skip
    pmf = [math.exp(v) for v in log_pmf]
    acc, lo = 0.0, 0
    for k, v in enumerate(pmf):
        acc += v
        if acc > tail:
            lo = k
            break
    acc, hi = 0.0, n
    for k in range(n, -1, -1):
        acc += pmf[k]
        if acc > tail:
            hi = k
            break
    return (lo, hi)


def goodput_bps(samples: list[tuple[float, int]], skip_share: float = 0.4) -> float:
    """Bytes received per second over the part of a transfer after ``skip_share`` of its time.

    ``samples`` are (seconds since start, total bytes so far), in time order.
    """
    if len(samples) < 2:
        return 0.0
    t_end, b_end = samples[-1]
    t_from = t_end * skip_share
    t0, b0 = next((t, b) for t, b in samples if t >= t_from)
    if t_end <= t0:
        return 0.0
    return (b_end - b0) * 8 / (t_end - t0)


# The RTT probe's packets: SYN with MSS, SACK, timestamps and window scale options (IP 20 +
# TCP 40 bytes) and the RST answering it (IP 20 + TCP 20).
SYN_IP_BYTES = 60
RST_IP_BYTES = 40


def effective_rate_bps(profile: NetworkProfile, direction: str) -> int | None:
    """The fixed rate, or a Mahimahi trace's mean rate, of one direction (None: unlimited)."""
    rate = profile.up_rate_bps if direction == "up" else profile.down_rate_bps
    trace = profile.up_trace if direction == "up" else profile.down_trace
    if trace is None:
        return rate
    return round(cellular.read_mahimahi(Path(trace)).mean_rate_bps)


def probe_rtt_ms(profile: NetworkProfile) -> float:
    """What an RTT probe should measure: the path's RTT plus the time to serialise the SYN
    on the uplink and the RST on the downlink (0.8 ms at 1 Mbit/s)."""
    up = SYN_IP_BYTES * 8 / profile.up_rate_bps * 1000 if profile.up_rate_bps else 0.0
    down = RST_IP_BYTES * 8 / profile.down_rate_bps * 1000 if profile.down_rate_bps else 0.0
    return profile.rtt_ms + up + down


def trimmed_mean(values: list[float], share: float = 0.1) -> float:
    """Mean without the lowest and highest ``share`` of the values (a scheduling hiccup of
    the 2-core VM is not the emulator's error)."""
    ordered = sorted(values)
    k = int(len(ordered) * share)
    return statistics.fmean(ordered[k : len(ordered) - k] if len(ordered) > 2 * k else ordered)


RTT_TRIM_SHARE = 0.2
"""Share of RTT samples left out at each end before the mean is judged."""


def rtt_tolerance_ms(asked_ms: float) -> float:
    """max(0.5 ms, 1%): the fidelity target of issue #3."""
    return max(0.5, 0.01 * asked_ms)


def pearson(xs: list[float], ys: list[float]) -> float:
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else 0.0


# --- probes ----------------------------------------------------------------------------------


def _socket_in(ns: str, kind: int) -> socket.socket:
    return netns.run_in_netns(ns, lambda: socket.socket(socket.AF_INET, kind))


def bulk_tcp(
    sender_ns: str, receiver_ns: str, receiver_ip: str, seconds: float
) -> list[tuple[float, int]]:
    """Send as fast as TCP allows for ``seconds``; return the receiver's (time, bytes) samples.

    Both ends stop at the deadline (the sender resets the connection rather than draining its
    buffers, which would take tens of seconds on a slow link).
    """
    listener = _socket_in(receiver_ns, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((receiver_ip, TCP_PORT))
    listener.listen(1)
    sender = _socket_in(sender_ns, socket.SOCK_STREAM)
    samples: list[tuple[float, int]] = []
    deadline = time.monotonic() + seconds + 5  # set again once connected

    def receive() -> None:
        conn, _ = listener.accept()
        conn.settimeout(0.2)
        buf = bytearray(1 << 20)
        total = 0
        t0 = time.perf_counter()
        with conn:
            while time.perf_counter() - t0 < seconds:
                try:
                    n = conn.recv_into(buf)
                except TimeoutError:
                    continue
                except OSError:
                    break
                if n == 0:
                    break
                total += n
                samples.append((time.perf_counter() - t0, total))

    rx = threading.Thread(target=receive)
    rx.start()
    try:
        sender.settimeout(10)
        sender.connect((receiver_ip, TCP_PORT))
        sender.settimeout(0.2)
        deadline = time.monotonic() + seconds
        chunk = memoryview(b"\0" * (1 << 16))
        while time.monotonic() < deadline:
            try:
                sender.send(chunk)
            except TimeoutError:
                continue
            except OSError:
                break
    finally:
        # linger 0: close with RST, dropping what is still buffered
        sender.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sender.close()
        rx.join(timeout=seconds + 30)
        listener.close()
    return samples


def iperf_goodput_bps(
    client_ns: str, servers_ns: str, server_ip: str, seconds: float, *, download: bool
) -> float:
    """TCP goodput of one iperf3 flow (``download``: servers -> client), excluding the first
    40% of the flow (slow start), as iperf3 received it."""
    omit = max(1, round(seconds * 0.4))
    server = procs.spawn(
        netns.exec_argv(servers_ns, ["iperf3", "-s", "-1", "-B", server_ip, "-p", str(TCP_PORT)])
    )
    try:
        procs.wait_until(
            "iperf3 server listening",
            lambda: netns.is_listening(servers_ns, server_ip, TCP_PORT),
            timeout_s=10,
        )
        argv = ["iperf3", "-c", server_ip, "-p", str(TCP_PORT), "-J", "-t", f"{seconds:g}"]
        argv += ["-O", str(omit), *(["-R"] if download else [])]
        out = procs.run(netns.exec_argv(client_ns, argv), timeout_s=seconds + omit + 30)
    finally:
        procs.stop(server, grace_s=2)
    result = json.loads(out)
    if "error" in result or "sum_received" not in result.get("end", {}):
        raise H2LabError(f"iperf3 failed: {result.get('error', 'no result')}")
    return float(result["end"]["sum_received"]["bits_per_second"])


def drain_s(profile: NetworkProfile, rate_bps: int | None) -> float:
    """Time for a full bottleneck queue to empty, plus one RTT: wait this long after a bulk
    flow before probing, or the probes meet its backlog."""
    if not rate_bps:
        return profile.rtt_ms / 1000 + 0.1
    limit = profile.queue.limit_bytes(rate_bps, profile.rtt_ms)
    if limit is None:
        limit = (profile.queue.packets or 0) * 1500
    return limit * 8 / rate_bps + profile.rtt_ms / 1000 + 0.1


@dataclass(frozen=True)
class UdpProbe:
    sent: int
    lost_seq: tuple[int, ...]
    send_times_s: tuple[float, ...]
    """send time of each sequence number, seconds since the probe started"""


@contextmanager
def _udp_pair(
    sender_ns: str,
    receiver_ns: str,
    receiver_ip: str,
    on_datagram: Callable[[bytes], None],
    rcvbuf_bytes: int,
) -> Iterator[socket.socket]:
    """A UDP receiver bound in ``receiver_ns`` (each datagram to ``on_datagram``, on its own
    thread) and a sender socket in ``sender_ns``; both closed on exit."""
    rx = _socket_in(receiver_ns, socket.SOCK_DGRAM)
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf_bytes)
    rx.bind((receiver_ip, UDP_PORT))
    rx.settimeout(0.2)
    tx = _socket_in(sender_ns, socket.SOCK_DGRAM)
    done = threading.Event()

    def receive() -> None:
        while not done.is_set():
            try:
                on_datagram(rx.recv(2048))
            except TimeoutError:
                continue

    t = threading.Thread(target=receive)
    t.start()
    try:
        yield tx
    finally:
        done.set()
        t.join(timeout=5)
        rx.close()
        tx.close()


def _pace_until(target: float, slice_s: float) -> float:
    """Sleep in slices until ``time.perf_counter()`` reaches ``target``; return the time."""
    while (now := time.perf_counter()) < target:
        time.sleep(min(slice_s, target - now))
    return now


def udp_probe(
    sender_ns: str,
    receiver_ns: str,
    receiver_ip: str,
    count: int,
    pps: float,
    payload_bytes: int = 64,
    settle_s: float = 1.5,
) -> UdpProbe:
    """``count`` numbered datagrams at ``pps``; which never arrived."""
    received: set[int] = set()
    times: list[float] = []

    def on_datagram(data: bytes) -> None:
        received.add(struct.unpack_from("!I", data)[0])

    with _udp_pair(sender_ns, receiver_ns, receiver_ip, on_datagram, 4 << 20) as tx:
        pad = b"\0" * max(0, payload_bytes - 4)
        t0 = time.perf_counter()
        for seq in range(count):
            times.append(_pace_until(t0 + seq / pps, 0.002) - t0)
            tx.sendto(struct.pack("!I", seq) + pad, (receiver_ip, UDP_PORT))
        time.sleep(settle_s)
    return UdpProbe(
        sent=count,
        lost_seq=tuple(s for s in range(count) if s not in received),
        send_times_s=tuple(times),
    )


def udp_flood_receive(
    sender_ns: str, receiver_ns: str, receiver_ip: str, rate_bps: float, seconds: float
) -> tuple[float, list[tuple[float, int]]]:
    """Send 1200-byte datagrams at ``rate_bps`` for ``seconds``.

    Returns (monotonic start time, [(arrival s since start, IP bytes)]).
    """
    arrivals: list[tuple[float, int]] = []
    start = time.perf_counter()
    start_mono = time.monotonic()

    def on_datagram(data: bytes) -> None:
        arrivals.append((time.perf_counter() - start, len(data) + 28))  # + IP/UDP headers

    with _udp_pair(sender_ns, receiver_ns, receiver_ip, on_datagram, 8 << 20) as tx:
        payload = b"\0" * 1200
        interval = (len(payload) + 28) * 8 / rate_bps
        for i in range(int(seconds / interval)):
            _pace_until(start + i * interval, 0.001)
            tx.sendto(payload, (receiver_ip, UDP_PORT))
        time.sleep(1.0)
    return start_mono, arrivals


def delivered_per_step_bps(
    arrivals: list[tuple[float, int]],
    trace_offset_s: float,
    step_s: float,
    delays_s: list[float],
    first_step: int,
    n_steps: int,
) -> list[float]:
    """Rate delivered by the bandwidth cell in each trace step, seen at the receiver.

    Trace time = measurement time + ``trace_offset_s``. Rattan's delay cell follows the
    bandwidth cell and keeps packets in order: a packet leaving the bandwidth cell at t arrives
    at max(t + d(t), the previous packet's arrival). So the last packet of step k-1 arrives at
    T_k + d_{k-1} and every packet of step k after it: step k's bytes are those that arrived in
    [T_k + d_{k-1}, T_{k+1} + d_k), whether the delay rose or fell between the steps.
    """
    period = len(delays_s)
    edges = []
    for k in range(first_step, first_step + n_steps):
        lo = k * step_s + delays_s[(k - 1) % period] - trace_offset_s
        hi = (k + 1) * step_s + delays_s[k % period] - trace_offset_s
        edges.append((lo, hi))
    out = [0.0] * n_steps
    times = [a for a, _ in arrivals]
    import bisect

    prefix = [0]
    for _, b in arrivals:
        prefix.append(prefix[-1] + b)
    for i, (lo, hi) in enumerate(edges):
        a, b = bisect.bisect_left(times, lo), bisect.bisect_left(times, hi)
        out[i] = (prefix[b] - prefix[a]) * 8 / step_s
    return out


def _process_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime + stime
    return ticks / 100.0  # USER_HZ is 100 on Linux


# --- the check -------------------------------------------------------------------------------


def _row(
    metric: str, direction: str, asked: float | None, measured: float | None, unit: str,
    tolerance: str, passed: bool | None,
) -> CheckRow:  # fmt: skip
    return CheckRow(metric, direction, asked, measured, unit, tolerance, passed)


def check_static(
    lab: Lab,
    link: Link,
    profile: NetworkProfile,
    origin_ip: str,
    *,
    quick: bool = False,
    queueing: bool = True,
    flow_s: float | None = None,
    rtt_count: int | None = None,
) -> list[CheckRow]:
    """RTT, goodput and loss per direction, and queueing delay under load (``queueing``).

    ``flow_s`` and ``rtt_count`` override the bulk flow length and the number of RTT probes.
    """
    rows: list[CheckRow] = []
    # RTT: one warm-up inside rtt_samples_ms
    samples = rtt_samples_ms(link.client_ns, origin_ip, count=rtt_count or (10 if quick else 30))
    # A lost SYN or RST is retried after the 1 s initial RTO (RFC 6298): not a path RTT.
    kept = [x for x in samples if x < profile.rtt_ms + 900] or samples
    mean = trimmed_mean(kept, RTT_TRIM_SHARE)
    asked = probe_rtt_ms(profile)
    tol = rtt_tolerance_ms(asked)
    rows.append(
        _row("rtt", "both", round(asked, 3), round(mean, 3), "ms",
             f"±{tol:g} ms ({RTT_TRIM_SHARE:.0%} trimmed mean; plain mean "
             f"{statistics.fmean(kept):.3f}; asked includes the probe's serialisation)",
             abs(mean - asked) <= tol)
    )  # fmt: skip
    seconds = flow_s or (3.0 if quick else 6.0)
    down_rate, up_rate = effective_rate_bps(profile, "down"), effective_rate_bps(profile, "up")
    for direction, rate, loss in (
        ("down", down_rate, profile.down_loss_ratio),
        ("up", up_rate, profile.up_loss_ratio),
    ):
        if rate is None:
            continue
        cpu0 = _process_cpu_s(link.rattan_pid) if link.rattan_pid else None
        t0 = time.monotonic()
        got = iperf_goodput_bps(
            link.client_ns, lab.servers_ns, origin_ip, seconds, download=direction == "down"
        )
        elapsed = time.monotonic() - t0
        time.sleep(drain_s(profile, rate))
        expected = rate * PAYLOAD_SHARE
        judged = loss == 0
        rows.append(
            _row("goodput", direction, round(expected / 1e6, 4), round(got / 1e6, 4), "Mbit/s",
                 "±3%" if judged else "info (TCP under loss)",
                 abs(got - expected) <= 0.03 * expected if judged else None)
        )  # fmt: skip
        if cpu0 is not None and link.rattan_pid:
            cpu = (_process_cpu_s(link.rattan_pid) - cpu0) / elapsed * 100
            rows.append(
                _row("emulator_cpu", direction, None, round(cpu, 1), "% of a core", "info", None)
            )
    for direction, sender, receiver, ip, rate, loss in (
        ("up", link.client_ns, lab.servers_ns, origin_ip, up_rate, profile.up_loss_ratio),
        ("down", lab.servers_ns, link.client_ns, link.client_ip, down_rate,
         profile.down_loss_ratio),
    ):  # fmt: skip
        count = 1000 if quick else 3000
        # 64-byte payload = 92 IP bytes; stay under 30% of the link and at most 2000/s
        pps = 2000.0 if rate is None else max(50.0, min(2000.0, 0.3 * rate / (92 * 8)))
        probe = udp_probe(sender, receiver, ip, count, pps)
        lo, hi = binomial_interval(count, loss)
        lost = len(probe.lost_seq)
        rows.append(
            _row("loss", direction, loss * 100, round(lost / count * 100, 3), "%",
                 f"99% binomial [{lo}, {hi}] of {count}", lo <= lost <= hi)
        )  # fmt: skip
    if queueing and profile.down_rate_bps is not None:
        rows.append(_queueing_row(lab, link, profile, origin_ip, mean, quick))
    return rows


def _queueing_row(
    lab: Lab, link: Link, profile: NetworkProfile, origin_ip: str, idle_rtt_ms: float, quick: bool
) -> CheckRow:
    rate = profile.down_rate_bps
    assert rate is not None
    limit_bytes = profile.queue.limit_bytes(rate, profile.rtt_ms)
    if limit_bytes is None:
        limit_bytes = (profile.queue.packets or 0) * 1500
    if profile.aqm == "codel":
        asked = profile.codel_target_ms
        tolerance = "≤ 4 × target (CoDel keeps the standing queue near target)"
        bound = 4 * asked
    else:
        asked = limit_bytes * 8 / rate * 1000
        tolerance = "≤ limit/rate + 10%"
        bound = asked * 1.1 + 1
    seconds = 6.0 if quick else 12.0
    loaded: list[float] = []
    flow = threading.Thread(
        target=bulk_tcp, args=(lab.servers_ns, link.client_ns, link.client_ip, seconds)
    )
    flow.start()
    try:
        time.sleep(seconds / 2)
        loaded = rtt_samples_ms(link.client_ns, origin_ip, count=10, interval_s=0.1)
    finally:
        flow.join(timeout=seconds + 60)
    measured = statistics.median(loaded) - idle_rtt_ms
    return _row("queueing_delay", "down", round(asked, 2), round(measured, 2), "ms", tolerance,
                measured <= bound)  # fmt: skip


def _best_offset(
    score: Callable[[float], float], nominal_s: float, span_s: float = 0.2, step_s: float = 0.005
) -> tuple[float, float]:
    """(best score, offset) over offsets nominal +- span."""
    n = int(span_s / step_s)
    return max((score(nominal_s + k * step_s), nominal_s + k * step_s) for k in range(-n, n + 1))


def check_cellular(
    lab: Lab, profile: NetworkProfile, seed: int, tcp: TcpSettings
) -> list[CheckRow]:
    """Each trace of a cellular profile on a link of its own, over one trace period (14 s).

    Rattan (feature ``first-packet``) starts a trace's clock at the first packet through the
    cell, which here is the first probe packet: the offset searched is only +-200 ms.
    """
    assert profile.cellular is not None
    cell = cellular.cellular_profiles()[profile.cellular]
    rate_rows, offset = _check_cellular_rate(lab, profile, seed, tcp, cell)
    return [
        *rate_rows,
        *_check_cellular_delay(lab, profile, seed, tcp, cell),
        _check_cellular_loss(lab, profile, seed, tcp, cell, offset),
    ]


def _check_cellular_rate(
    lab: Lab, profile: NetworkProfile, seed: int, tcp: TcpSettings, cell: cellular.CellularProfile
) -> tuple[list[CheckRow], float]:
    """A downlink UDP flood above the peak; bytes per step against the trace. Also the offset
    of the trace's clock that fits best (the loss check uses it)."""
    step_s = cellular.STEP_MS / 1000
    period_s = cell.steps * step_s
    with lab.link(dataclasses.replace(profile, cellular_parts=("bw",)), seed, tcp) as link:
        _, arrivals = udp_flood_receive(
            lab.servers_ns, link.client_ns, link.client_ip, max(cell.rate_kbps) * 1300, period_s
        )
    trace_bps = [r * 1000 for r in cell.rate_kbps]
    n_steps = cell.steps - 4
    no_delay = [0.0] * cell.steps

    def rate_series(offset: float) -> tuple[list[float], list[float]]:
        first = max(0, int(offset / step_s)) + 1
        measured = delivered_per_step_bps(arrivals, offset, step_s, no_delay, first, n_steps)
        return [trace_bps[(first + i) % cell.steps] for i in range(n_steps)], measured

    r, offset = _best_offset(lambda o: pearson(*rate_series(o)), 0.0)
    asked, measured = rate_series(offset)
    rel = statistics.median(abs(a - m) / a for a, m in zip(asked, measured, strict=True))
    mae = statistics.median(abs(a - m) for a, m in zip(asked, measured, strict=True))
    return [
        _row("rate_per_step_correlation", "down", 1.0, round(r, 3), "pearson r",
             f"≥ 0.9 over {n_steps} steps of 70 ms", r >= 0.9),
        _row("rate_per_step_error", "down", 0.0, round(mae / 1e3, 1), "kbit/s (median abs)",
             f"median relative error {rel * 100:.1f}% ≤ 10%", rel <= 0.10),
    ], offset  # fmt: skip


def _check_cellular_delay(
    lab: Lab, profile: NetworkProfile, seed: int, tcp: TcpSettings, cell: cellular.CellularProfile
) -> list[CheckRow]:
    """SYN round trips at 40 per second against twice the step's one-way delay."""
    step_s = cellular.STEP_MS / 1000
    period_s = cell.steps * step_s
    origin_ip = next(iter(lab.origin_ips.values()))
    with lab.link(dataclasses.replace(profile, cellular_parts=("delay",)), seed, tcp) as link:
        series = rtt_series(link.client_ns, origin_ip, count=int(period_s * 40), interval_s=0.025)
    sent_at = [t for t, _ in series]
    samples = [rtt for _, rtt in series]

    def one_way_ms(t: float) -> float:
        return cell.rtt_ms[int(t / step_s) % cell.steps] / 2

    def rtt_pairs(offset: float) -> tuple[list[float], list[float]]:
        # the SYN meets the delay of its step; the RST the delay of the step it comes back in
        asked = []
        for t in sent_at:
            up = one_way_ms(t + offset)
            asked.append(up + one_way_ms(t + offset + up / 1000))
        return asked, samples

    r_delay, d_offset = _best_offset(lambda o: pearson(*rtt_pairs(o)), 0.0)
    asked_rtt, got_rtt = rtt_pairs(d_offset)
    err = statistics.median(abs(a - m) for a, m in zip(asked_rtt, got_rtt, strict=True))
    close = sum(abs(a - m) <= 2.0 for a, m in zip(asked_rtt, got_rtt, strict=True)) / len(samples)
    return [
        _row("rtt_per_step_within_2ms", "both", 100.0, round(close * 100, 1), "% of probes",
             f"≥ 90% of {len(samples)} probes (pearson r {r_delay:.3f})", close >= 0.9),
        _row("rtt_per_step_error", "both", 0.0, round(err, 2), "ms (median abs)",
             "≤ 1 ms", err <= 1.0),
    ]  # fmt: skip


def _check_cellular_loss(
    lab: Lab,
    profile: NetworkProfile,
    seed: int,
    tcp: TcpSettings,
    cell: cellular.CellularProfile,
    offset: float,
) -> CheckRow:
    """An uplink probe every 4 ms; lost probes must fall in scheduled episodes."""
    step_s = cellular.STEP_MS / 1000
    period_s = cell.steps * step_s
    origin_ip = next(iter(lab.origin_ips.values()))
    with lab.link(profile, seed, tcp) as link:
        probe = udp_probe(link.client_ns, lab.servers_ns, origin_ip, int(period_s * 250), 250.0)
    delays_s = [rtt / 2 / 1000 for rtt in cell.rtt_ms]
    schedule = traces.loss_schedule(cell, period_s + 5, timing="script")
    episodes = [seg for seg in schedule if seg.loss_ratio > 0]

    def in_episode(seq: int, offset: float) -> bool:
        sent = offset + probe.send_times_s[seq]
        at = sent + delays_s[int(sent / step_s) % cell.steps]
        return any(e.start_s - 0.035 <= at <= e.end_s + 0.035 for e in episodes)

    lost = len(probe.lost_seq)
    share = sum(in_episode(q, offset) for q in probe.lost_seq) / lost if lost else 1.0
    fired = sum(1 for e in episodes if e.end_s <= period_s)
    return _row("loss_in_episodes", "up", 100.0, round(share * 100, 1), "% of lost probes",
                f"≥ 90% inside a scheduled episode ±35 ms ({lost} lost, {fired} episodes)",
                share >= 0.9)  # fmt: skip


def check(
    lab: Lab, profile: NetworkProfile, seed: int, tcp: TcpSettings, *, quick: bool = False
) -> list[CheckRow]:
    """Bring up links for ``profile`` in ``lab`` and measure them."""
    if profile.cellular:
        return check_cellular(lab, profile, seed, tcp)
    origin_ip = next(iter(lab.origin_ips.values()))
    with lab.link(profile, seed, tcp) as link:
        rows = check_static(lab, link, profile, origin_ip, quick=quick)
        drops = link.emulator_drops()
        if drops is not None:
            rows.append(
                _row("emulator_drops", "both", 0, drops, "packets",
                     "0: packets Rattan's full sockets dropped during the check", drops == 0)
            )  # fmt: skip
        return rows
