"""What ``h2lab net check`` expects and how it estimates from samples: pure functions of a
profile or of measured samples (intervals, goodput, the RTT a probe should see, the rate
delivered per trace step), no sockets and no namespaces."""

from __future__ import annotations

import math
import random
import statistics
from pathlib import Path

from h2lab.net.rattan import JITTER_CUT_SD
from h2lab.spec import cellular
from h2lab.spec.network import NetworkProfile

# TCP payload per full IP packet: MSS 1448 = 1500 - 20 (IP) - 20 (TCP) - 12 (timestamps).
PAYLOAD_SHARE = 1448 / 1500


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


def drain_s(profile: NetworkProfile, rate_bps: int | None) -> float:
    """Time for a full bottleneck queue to empty, plus one RTT: wait this long after a bulk
    flow before probing, or the probes meet its backlog."""
    if not rate_bps:
        return profile.rtt_ms / 1000 + 0.1
    limit = profile.queue.limit_bytes(rate_bps, profile.rtt_ms)
    if limit is None:
        limit = (profile.queue.packets or 0) * 1500
    return limit * 8 / rate_bps + profile.rtt_ms / 1000 + 0.1


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


def reordered_share(arrivals: list[float]) -> float:
    """Share of packets (in sending order, with their arrival times) that arrive after a
    packet sent later: RFC 4737's reordered packets."""
    latest = -math.inf
    reordered = 0
    for arrival in arrivals:
        if arrival < latest:
            reordered += 1
        latest = max(latest, arrival)
    return reordered / len(arrivals) if arrivals else 0.0


def reordered_in_arrival_order(seqs: list[int]) -> float:
    """Share of packets (sequence numbers in arrival order) that arrive after a higher
    sequence number: RFC 4737's reordered packets, as the receiver sees them."""
    highest = -1
    reordered = 0
    for seq in seqs:
        if seq < highest:
            reordered += 1
        highest = max(highest, seq)
    return reordered / len(seqs) if seqs else 0.0


def clamped_normal_sd_share(cut_sd: float) -> float:
    """Standard deviation of a standard normal clamped to ±``cut_sd`` (its tails piled on
    the bounds, as Rattan's per-packet delay does)."""
    n = statistics.NormalDist()
    inside = 2 * n.cdf(cut_sd) - 1
    tails = 2 * (1 - n.cdf(cut_sd))
    return math.sqrt(inside - 2 * cut_sd * n.pdf(cut_sd) + tails * cut_sd**2)


NORMAL_IQR_SD = 2 * statistics.NormalDist().inv_cdf(0.75)
"""A normal distribution's interquartile range in standard deviations (1.349)."""


def plain_sd(values: list[float]) -> float:
    """The sample standard deviation of ``values`` (0 for fewer than two)."""
    return statistics.stdev(values) if len(values) > 1 else 0.0


def clamped_sd_from_quartiles(values: list[float]) -> float:
    """The standard deviation of ``values`` drawn from a normal clamped at ±2 of its
    deviations (Rattan's per-packet delay), read from their quartiles, which the clamp leaves
    where they are: the few datagrams the host held up (a sender preempted between reading its
    clock and sending) are not spread the link made. Idle, 1 check in 5 measured 2 ms of
    jitter as 3.5 ms by the plain deviation, beside other work 7.2 and 11.1 ms."""
    if len(values) < 4:
        return plain_sd(values)
    q1, _, q3 = statistics.quantiles(values, n=4)
    return (q3 - q1) / NORMAL_IQR_SD * clamped_normal_sd_share(JITTER_CUT_SD)


JITTER_WINDOWS = 5
HELD_UP_WINDOW_RATIO = 1.5
"""A window of the probe whose spread is past this many times the windows' median was held up
by the host (a burst), not spread by the link."""


def clamped_sd_in_windows(values: list[float]) -> tuple[float, int]:
    """(:func:`clamped_sd_from_quartiles` of ``values``, how many it used): ``values`` in the
    order sent, cut into :data:`JITTER_WINDOWS` windows, without the windows whose own spread
    is past :data:`HELD_UP_WINDOW_RATIO` times their median.

    A busy host holds the link's emulator up in bursts: beside three busy loops one probe of
    2 ms read 2.85 ms whole, its five windows 1.96, 7.49, 5.36, 1.96 and 2.0 ms; without the
    two held up, 1.95 ms. At most two windows go (the median's own stays), and on a clean
    probe none: its precision is the whole probe's (2,000 simulated probes of 1,000: sd of the
    estimate 0.074 ms for 2 ms, as without windows)."""
    size = len(values) // JITTER_WINDOWS
    if size < 4:
        return clamped_sd_from_quartiles(values), len(values)
    windows = [values[k * size : (k + 1) * size] for k in range(JITTER_WINDOWS - 1)]
    windows.append(values[(JITTER_WINDOWS - 1) * size :])
    spreads = [clamped_sd_from_quartiles(w) for w in windows]
    bound = HELD_UP_WINDOW_RATIO * statistics.median(spreads)
    kept = [v for w, sd in zip(windows, spreads, strict=True) if sd <= bound for v in w]
    return clamped_sd_from_quartiles(kept), len(kept)


def expected_reordered_share(
    jitter_ms: float, send_times_ms: list[float], rounds: int = 10
) -> float:
    """The reordered share that packets sent at ``send_times_ms`` get on a link with
    ``jitter_ms`` (Rattan's clamped normal, net/rattan.py): the mean of ``rounds`` simulations
    with a fixed seed (pure, repeatable)."""
    if jitter_ms <= 0 or not send_times_ms:
        return 0.0
    sd = jitter_ms / clamped_normal_sd_share(JITTER_CUT_SD)
    cut = JITTER_CUT_SD * sd
    rng = random.Random(4737)
    shares = []
    for _ in range(rounds):
        arrivals = [t + min(max(rng.gauss(0.0, sd), -cut), cut) for t in send_times_ms]
        shares.append(reordered_share(arrivals))
    return statistics.fmean(shares)
