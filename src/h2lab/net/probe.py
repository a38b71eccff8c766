"""Measurements of the emulated path from inside the client namespace (used by tests, and by
``h2lab net check`` later)."""

from __future__ import annotations

import errno
import socket
import statistics
import time

from h2lab.errors import H2LabError
from h2lab.net import netns

# A port nothing listens on: the servers' kernel answers a SYN with a RST, one round trip
# later, so no server is needed and nothing is left open.
CLOSED_PORT = 9


def _syn_rst_rtt_ms(host: str, port: int, timeout_s: float) -> float:
    """One round trip: SYN out, RST (or SYN-ACK) back, timed with the monotonic clock."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout_s)
    try:
        t0 = time.perf_counter()
        code = s.connect_ex((host, port))
        t1 = time.perf_counter()
    finally:
        s.close()
    if code not in (0, errno.ECONNREFUSED):
        raise H2LabError(f"RTT probe to {host}:{port} failed: {errno.errorcode.get(code, code)}")
    return (t1 - t0) * 1000


def rtt_series(
    client_ns: str, ip: str, count: int = 20, interval_s: float = 0.05, port: int = CLOSED_PORT
) -> list[tuple[float, float]]:
    """(send time s, RTT ms) of ``count`` TCP SYN round trips to ``ip``; send times count from
    a warm-up probe sent first (not returned). Probes are ``interval_s`` apart (start to start)
    unless a round trip takes longer."""

    def probe() -> list[tuple[float, float]]:
        samples = []
        t0 = time.perf_counter()
        for i in range(count + 1):
            sent = time.perf_counter() - t0
            rtt = _syn_rst_rtt_ms(ip, port, timeout_s=10)
            if i:
                samples.append((sent, rtt))
            pause = (i + 1) * interval_s - (time.perf_counter() - t0)
            if pause > 0:
                time.sleep(pause)
        return samples

    return netns.run_in_netns(client_ns, probe)


def rtt_samples_ms(
    client_ns: str, ip: str, count: int = 20, interval_s: float = 0.05, port: int = CLOSED_PORT
) -> list[float]:
    """``count`` TCP SYN round trips to ``ip`` (one warm-up first, not returned).

    Microsecond resolution, unlike ``ping``, which prints 3 significant digits (101 ms).
    """
    return [rtt for _, rtt in rtt_series(client_ns, ip, count, interval_s, port)]


def median_rtt_ms(client_ns: str, ip: str, count: int = 20) -> float:
    return statistics.median(rtt_samples_ms(client_ns, ip, count))
