"""The Rattan link: a config generated from a :class:`NetworkProfile` and a seed, and the
``rattan run`` process that holds the client namespace open.

Rattan (crates.io ``rattan``) runs in "Compatible" mode inside h2lab's servers namespace, so
its right side *is* that namespace and its left side is a fresh namespace it creates and names
``ns-left-XXXXXX`` (plus ``ns-rattan-XXXXXX`` for its own veth ends). The left command is a
holder process; h2lab attaches the name ``h2lab-<id>-client`` to its namespace.

Cells per direction, in packet order: bandwidth (droptail queue) -> one-way delay -> loss.
Loss uses Rattan's ``LossReplay`` cell because, unlike ``Loss`` (fixed seed 42), it takes a
seed: same seed, same drop decision for the n-th packet of each direction (common random
numbers across the protocols of one block).
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from h2lab.errors import MissingTool
from h2lab.paths import cache_root
from h2lab.spec.network import NetworkProfile

RATTAN_VERSION = "0.1.1"
# Rattan's own latency per direction on top of a Delay cell's setting (AF_PACKET hops, thread
# wake-ups). Measured on this machine kind (2 vCPU), TCP SYN->RST round trips, median of 30:
# asked 20/100/200 ms gave 20.70/100.70/200.66 ms, i.e. +0.35 ms per direction. The delay cell
# is set that much shorter so the path's measured RTT is the RTT asked for. Short delays carry
# less overhead (asked 2 ms gave 2.45 ms: +0.22 per direction), hence the ramp below 1.75 ms.
DELAY_OVERHEAD_MS = 0.35


def calibrated_delay_ms(delay_ms: float) -> float:
    """The Delay cell setting that yields ``delay_ms`` on the wire."""
    return max(0.0, delay_ms - min(DELAY_OVERHEAD_MS, 0.2 * delay_ms))


# A loss trace segment must have a duration; one day repeats forever in practice.
_LOSS_SEGMENT = "86400s"


def rattan_binary() -> Path:
    """The pinned build in the cache (scripts/setup.sh), else ``rattan`` on PATH."""
    override = os.environ.get("H2LAB_RATTAN")
    if override:
        return Path(override)
    cached = cache_root() / f"rattan-{RATTAN_VERSION}" / "bin" / "rattan"
    if cached.exists():
        return cached
    found = shutil.which("rattan")
    if found:
        return Path(found)
    raise MissingTool("rattan", "run `make setup` or scripts/setup.sh")


def _bandwidth(bps: int) -> str:
    # Rattan splits rates as "<G>Gbps <rest>bps" with rest < 1e9.
    g, rest = divmod(bps, 10**9)
    if g and rest:
        return f"{g}Gbps {rest}bps"
    if g:
        return f"{g}Gbps"
    return f"{rest}bps"


def _q(s: str) -> str:
    return json.dumps(s)


@dataclass(frozen=True)
class LinkFiles:
    config_toml: str
    loss_traces: dict[str, str]
    """file name -> JSON text of a netem-trace loss config"""


def direction_seed(seed: int, direction: str) -> int:
    """Independent, reproducible streams per direction from one trial seed."""
    return (seed * 2 + (1 if direction == "down" else 0)) % (2**63)


def build_config(
    profile: NetworkProfile, seed: int, state_dir: Path, holder_pid_file: Path
) -> LinkFiles:
    """Pure: the ``rattan run`` TOML and loss trace files for this profile and seed."""
    lines = ["[env]", 'mode = "Compatible"', "left_veth_count = 1", "", "[cells]"]
    traces: dict[str, str] = {}
    chains: dict[str, list[str]] = {}
    for direction in ("up", "down"):
        rate = profile.up_rate_bps if direction == "up" else profile.down_rate_bps
        delay = profile.up_delay_ms if direction == "up" else profile.down_delay_ms
        loss = profile.up_loss_ratio if direction == "up" else profile.down_loss_ratio
        chain: list[str] = []
        if rate is not None:
            cell = f"{direction}_bw"
            lines += ["", f"[cells.{cell}]", 'type = "Bw"', f"bandwidth = {_q(_bandwidth(rate))}"]
            lines.append('queue = "DropTail"')
            limit_bytes = profile.queue.limit_bytes(rate, profile.rtt_ms)
            if limit_bytes is not None:
                lines.append(f"queue_config = {{ byte_limit = {limit_bytes} }}")
            else:
                lines.append(f"queue_config = {{ packet_limit = {profile.queue.packets} }}")
            chain.append(cell)
        cell = f"{direction}_delay"
        delay_us = calibrated_delay_ms(delay) * 1000
        lines += ["", f"[cells.{cell}]", 'type = "Delay"', f'delay = "{delay_us:.0f}us"']
        chain.append(cell)
        if loss > 0:
            cell = f"{direction}_loss"
            trace_name = f"loss-{direction}.json"
            traces[trace_name] = json.dumps(
                {
                    "RepeatedLossPatternConfig": {
                        "pattern": [
                            {"StaticLossConfig": {"loss": [loss], "duration": _LOSS_SEGMENT}}
                        ],
                        "count": 0,
                    }
                }
            )
            lines += [
                "",
                f"[cells.{cell}]",
                'type = "LossReplay"',
                f"trace = {_q(str(state_dir / trace_name))}",
                f"seed = {direction_seed(seed, direction)}",
            ]
            chain.append(cell)
        chains[direction] = chain
    lines += ["", "[links]"]
    up = ["left", *chains["up"], "right"]
    down = ["right", *chains["down"], "left"]
    for a, b in [*itertools.pairwise(up), *itertools.pairwise(down)]:
        lines.append(f"{a} = {_q(b)}")
    tmp = f"{holder_pid_file}.tmp"
    holder = f"echo $$ > {tmp} && mv {tmp} {holder_pid_file} && exec sleep infinity"
    lines += ["", "[commands]", f"left = {json.dumps(['/bin/sh', '-c', holder])}", ""]
    return LinkFiles(config_toml="\n".join(lines), loss_traces=traces)
