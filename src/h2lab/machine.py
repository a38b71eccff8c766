"""The machine a trial runs on: what identifies it in the store (the ``machine`` column) and
what a trial's timings depend on besides its factors (CPU model, kernel), as recorded in its
``versions_json``."""

from __future__ import annotations

import functools
import platform
import socket
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")


def cpu_model(cpuinfo: str) -> str:
    """The first ``model name`` of a /proc/cpuinfo text ("unknown" when it has none)."""
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "model name" and value.strip():
            return " ".join(value.split())
    return "unknown"


def machine_id(host: str, node_id: str | None = None) -> str:
    """The ``machine`` of a trial: the host name, and beside it the first 12 hex digits of the
    Ray node that ran it (nodes of one host share the name)."""
    return f"{host}/{node_id[:12]}" if node_id else host


@functools.cache
def _local() -> tuple[str, str, str]:
    try:
        cpu = cpu_model(CPUINFO.read_text())
    except OSError:
        cpu = "unknown"
    return socket.gethostname(), cpu, platform.release()


def machine_info(node_id: str | None = None) -> dict[str, str]:
    """This machine as ``versions_json`` records it: ``machine``, ``host``, ``cpu_model`` and
    ``kernel``."""
    host, cpu, kernel = _local()
    return {"machine": machine_id(host, node_id), "host": host, "cpu_model": cpu, "kernel": kernel}
