"""Kernel counters: ``/proc/net/snmp`` (TCP) and ``/proc/net/dev`` (interface bytes)."""

from __future__ import annotations

from dataclasses import dataclass


def parse_snmp(text: str, proto: str = "Tcp") -> dict[str, int]:
    """``/proc/net/snmp`` -> {"ActiveOpens": n, "RetransSegs": n, ...} for ``proto``."""
    lines = [ln.split() for ln in text.splitlines() if ln.startswith(proto + ":")]
    if len(lines) < 2:
        raise ValueError(f"no {proto} rows in /proc/net/snmp text")
    names, values = lines[0][1:], lines[1][1:]
    return {k: int(v) for k, v in zip(names, values, strict=True)}


@dataclass(frozen=True)
class IfBytes:
    rx_bytes: int
    tx_bytes: int


def parse_dev(text: str) -> dict[str, IfBytes]:
    """``/proc/net/dev`` -> interface name -> received/sent bytes (L2, with Ethernet headers)."""
    out = {}
    for line in text.splitlines()[2:]:
        name, _, rest = line.partition(":")
        fields = rest.split()
        if len(fields) >= 9:
            out[name.strip()] = IfBytes(rx_bytes=int(fields[0]), tx_bytes=int(fields[8]))
    return out


@dataclass(frozen=True)
class CpuTimes:
    busy_ticks: int
    total_ticks: int


def parse_cpu_times(text: str) -> CpuTimes:
    """``/proc/stat`` -> the machine's CPU time, all cores: busy (everything but idle and
    iowait) and total, in clock ticks."""
    for line in text.splitlines():
        if line.startswith("cpu "):
            ticks = [int(x) for x in line.split()[1:]]
            # user nice system idle iowait irq softirq steal (guest time is inside user)
            total = sum(ticks[:8])
            return CpuTimes(busy_ticks=total - ticks[3] - ticks[4], total_ticks=total)
    raise ValueError("no aggregate 'cpu' row in /proc/stat text")


def busy_pct(before: CpuTimes, after: CpuTimes) -> float | None:
    """Busy share of the CPU time between two samples, in percent (None if no tick passed)."""
    total = after.total_ticks - before.total_ticks
    if total <= 0:
        return None
    return 100.0 * (after.busy_ticks - before.busy_ticks) / total
