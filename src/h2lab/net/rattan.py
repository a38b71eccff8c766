"""The Rattan link: a config generated from a :class:`NetworkProfile` and a seed, and the
``rattan run`` process that holds the client namespace open.

Rattan (crates.io ``rattan``) runs in "Compatible" mode inside h2lab's servers namespace, so
its right side *is* that namespace and its left side is a fresh namespace it creates and names
``ns-left-XXXXXX`` (plus ``ns-rattan-XXXXXX`` for its own veth ends). The left command is a
holder process; h2lab attaches the name ``h2lab-<id>-client`` to its namespace.

Cells per direction, in packet order: bandwidth (droptail queue) -> one-way delay -> loss.
With jitter the delay cell is ``DelayPerPacket``: each packet draws its delay from a normal
distribution (clamped at ±2 standard deviations, seeded per trial and direction) and leaves when
its own delay is over, so packets overtake each other.
Loss uses Rattan's ``LossReplay`` cell because, unlike ``Loss`` (fixed seed 42), it takes a
seed: same seed, same drop decision for the n-th packet of each direction (common random
numbers across the protocols of one block).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from h2lab.errors import MissingTool
from h2lab.net import traces
from h2lab.paths import find_build, looked_in
from h2lab.spec import cellular
from h2lab.spec.network import NetworkProfile

RATTAN_VERSION = "0.1.1"
RATTAN_BUILD = f"rattan-{RATTAN_VERSION}/bin/rattan"
"""Where scripts/setup.sh puts Rattan, under a cache root (:func:`h2lab.paths.build_places`)."""
# Rattan's own latency per direction on top of a Delay cell's setting (AF_PACKET hops, thread
# wake-ups). Links use the value measured on the machine (net/calibration.py); this one, from
# the first machine of this kind (TCP SYN->RST round trips, median of 30: asked 20/100/200 ms
# gave 20.70/100.70/200.66 ms), is the default of the pure config builder and the fallback
# when a calibration cannot be measured. Short delays carry less overhead (asked 2 ms gave
# 2.45 ms: +0.22 per direction), hence the ramp: at most 20% of the delay is taken off.
DELAY_OVERHEAD_MS = 0.35


def calibrated_delay_ms(delay_ms: float, overhead_ms: float = DELAY_OVERHEAD_MS) -> float:
    """The Delay cell setting that yields ``delay_ms`` on the wire, given Rattan's own latency
    per direction ``overhead_ms``."""
    return max(0.0, delay_ms - min(overhead_ms, 0.2 * delay_ms))


# A loss trace segment must have a duration; one day repeats forever in practice.
_LOSS_SEGMENT = "86400s"


def rattan_binary() -> Path:
    """The pinned build in the user's cache or the system's (scripts/setup.sh), else
    ``rattan`` on PATH."""
    override = os.environ.get("H2LAB_RATTAN")
    if override:
        return Path(override)
    cached = find_build(RATTAN_BUILD)
    if cached is not None:
        return cached
    found = shutil.which("rattan")
    if found:
        return Path(found)
    raise MissingTool("rattan", f"{looked_in(RATTAN_BUILD)} nor on PATH: run `make setup`")


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
    files: dict[str, str]
    """file name (in the state folder) -> text: netem-trace JSON the cells read"""


def direction_seed(seed: int, direction: str) -> int:
    """Independent, reproducible streams per direction from one trial seed."""
    return (seed * 2 + (1 if direction == "down" else 0)) % (2**63)


# Rattan clamps a per-packet delay drawn from a normal distribution to the cell's bounds, set
# at ±2 standard deviations; the clamped delays keep 0.9594 of the standard deviation
# (net/check/estimators.py), so the cell's is set that much wider and the packets get the
# jitter asked.
JITTER_CUT_SD = 2.0
CLAMPED_SD_SHARE = 0.9594


def jitter_seed(seed: int, direction: str) -> int:
    """The per-packet delay stream of one direction: reproducible from the trial seed and
    independent of the loss stream."""
    digest = hashlib.sha256(f"{seed}|{direction}|jitter".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def _delay_lines(cell: str, delay_us: float, jitter_us: float, seed: int) -> list[str]:
    """A ``Delay`` cell, or with jitter a ``DelayPerPacket`` cell around the same delay."""
    if jitter_us <= 0:
        return ["", f"[cells.{cell}]", 'type = "Delay"', f'delay = "{delay_us:.0f}us"']
    sd_us = jitter_us / CLAMPED_SD_SHARE
    spread = JITTER_CUT_SD * sd_us
    return [
        "",
        f"[cells.{cell}]",
        'type = "DelayPerPacket"',
        "",
        f"[cells.{cell}.config.delay.NormalizedDelayPerPacketConfig]",
        f'mean = "{delay_us:.0f}us"',
        f'std_dev = "{sd_us:.0f}us"',
        f'lower_bound = "{max(0.0, delay_us - spread):.0f}us"',
        f'upper_bound = "{delay_us + spread:.0f}us"',
        f"seed = {seed}",
    ]


# How long a cellular profile's loss schedule runs; longer than any trial's timeout. After
# it the link is loss-free.
CELLULAR_SCHEDULE_S = 900.0


def _queue_lines(profile: NetworkProfile, rate_bps: int | None) -> list[str]:
    """``queue`` and ``queue_config`` of a Bw/BwReplay cell."""
    limit_bytes = profile.queue.limit_bytes(rate_bps, profile.rtt_ms)
    limit = (
        f"byte_limit = {limit_bytes}"
        if limit_bytes is not None
        else f"packet_limit = {profile.queue.packets}"
    )
    if profile.aqm == "codel":
        return [
            'queue = "CoDel"',
            f"queue_config = {{ {limit}, target = "
            f'"{profile.codel_target_ms * 1000:.0f}us", interval = '
            f'"{profile.codel_interval_ms * 1000:.0f}us", mtu = 1500 }}',
        ]
    return ['queue = "DropTail"', f"queue_config = {{ {limit} }}"]


def _passthrough(lines: list[str], cell: str) -> str:
    """A zero delay cell, so that a direction always has a cell between left and right."""
    lines += ["", f"[cells.{cell}]", 'type = "Delay"', 'delay = "0us"']
    return cell


def _loss_json(pattern: list[float]) -> str:
    return json.dumps(
        {
            "RepeatedLossPatternConfig": {
                "pattern": [{"StaticLossConfig": {"loss": pattern, "duration": _LOSS_SEGMENT}}],
                "count": 0,
            }
        }
    )


def _cellular_files(profile: NetworkProfile, delay_overhead_ms: float) -> dict[str, str]:
    """The rate, delay and loss traces a cellular profile's cells replay."""
    assert profile.cellular is not None
    cell_profile = cellular.cellular_profiles()[profile.cellular]
    rates = [round(kbps * 1000) for kbps in cell_profile.rate_kbps]
    delays = [calibrated_delay_ms(rtt / 2, delay_overhead_ms) for rtt in cell_profile.rtt_ms]
    # The script's episode timing (gaps counted from the start of the previous episode's
    # step, in whole steps), closed-loop: it reproduces the loss averages seed 000 and
    # data/README.md report; the README's literal wording gives up to twice as much loss.
    schedule = traces.loss_schedule(cell_profile, CELLULAR_SCHEDULE_S, timing="script")
    return {
        "cellular-bw.json": traces.bw_trace_json(rates, cellular.STEP_MS),
        "cellular-delay.json": traces.delay_trace_json(delays, cellular.STEP_MS),
        "cellular-loss.json": traces.loss_trace_json(schedule),
    }


def _cellular_chain(
    profile: NetworkProfile, direction: str, seed: int, state_dir: Path, lines: list[str]
) -> list[str]:
    """One direction's cells replaying a cellular profile's traces (those in
    ``profile.cellular_parts``); their TOML is appended to ``lines``."""
    bw, delay_cell, loss_cell = (f"{direction}_bw", f"{direction}_delay", f"{direction}_loss")
    chain: list[str] = []
    parts = profile.cellular_parts
    if "bw" in parts:
        lines += ["", f"[cells.{bw}]", 'type = "BwReplay"']
        lines += [f"trace = {_q(str(state_dir / 'cellular-bw.json'))}"]
        lines += _queue_lines(profile, None)
        chain.append(bw)
    if "delay" in parts:
        lines += ["", f"[cells.{delay_cell}]", 'type = "DelayReplay"']
        lines.append(f"trace = {_q(str(state_dir / 'cellular-delay.json'))}")
        chain.append(delay_cell)
    if "loss" in parts:
        lines += ["", f"[cells.{loss_cell}]", 'type = "LossReplay"']
        lines.append(f"trace = {_q(str(state_dir / 'cellular-loss.json'))}")
        lines.append(f"seed = {direction_seed(seed, direction)}")
        chain.append(loss_cell)
    return chain or [_passthrough(lines, delay_cell)]


def _fixed_chain(
    profile: NetworkProfile,
    direction: str,
    seed: int,
    state_dir: Path,
    delay_overhead_ms: float,
    lines: list[str],
    files: dict[str, str],
) -> list[str]:
    """One direction's rate (or trace), delay and loss cells; their TOML is appended to
    ``lines`` and a loss pattern file to ``files``."""
    up = direction == "up"
    rate = profile.up_rate_bps if up else profile.down_rate_bps
    trace = profile.up_trace if up else profile.down_trace
    delay = profile.up_delay_ms if up else profile.down_delay_ms
    jitter = profile.up_jitter_ms if up else profile.down_jitter_ms
    loss = profile.up_loss if up else profile.down_loss
    bw, delay_cell, loss_cell = (f"{direction}_bw", f"{direction}_delay", f"{direction}_loss")
    chain: list[str] = []
    if trace is not None:
        # Rattan reads a BwReplay trace as Mahimahi unless it ends in .json/.toml.
        lines += ["", f"[cells.{bw}]", 'type = "BwReplay"']
        lines += [f"trace = {_q(str(Path(trace).resolve()))}", *_queue_lines(profile, None)]
        chain.append(bw)
    elif rate is not None:
        lines += ["", f"[cells.{bw}]", 'type = "Bw"', f"bandwidth = {_q(_bandwidth(rate))}"]
        lines += _queue_lines(profile, rate)
        chain.append(bw)
    delay_us = calibrated_delay_ms(delay, delay_overhead_ms) * 1000
    lines += _delay_lines(delay_cell, delay_us, jitter * 1000, jitter_seed(seed, direction))
    chain.append(delay_cell)
    if loss.ratio > 0:
        name = f"loss-{direction}.json"
        files[name] = _loss_json(loss.pattern())
        lines += ["", f"[cells.{loss_cell}]", 'type = "LossReplay"']
        lines += [
            f"trace = {_q(str(state_dir / name))}",
            f"seed = {direction_seed(seed, direction)}",
        ]
        chain.append(loss_cell)
    return chain


def build_config(
    profile: NetworkProfile,
    seed: int,
    state_dir: Path,
    holder_pid_file: Path,
    delay_overhead_ms: float = DELAY_OVERHEAD_MS,
) -> LinkFiles:
    """Pure (but for reading a cellular profile): the ``rattan run`` TOML and the trace files
    its cells read, for this profile and seed; every Delay cell ``delay_overhead_ms`` (Rattan's
    own latency per direction) shorter than the delay asked."""
    lines = ["[env]", 'mode = "Compatible"', "left_veth_count = 1", "", "[cells]"]
    files = _cellular_files(profile, delay_overhead_ms) if profile.cellular else {}
    chains: dict[str, list[str]] = {}
    for direction in ("up", "down"):
        if profile.cellular:
            chains[direction] = _cellular_chain(profile, direction, seed, state_dir, lines)
        else:
            chains[direction] = _fixed_chain(
                profile, direction, seed, state_dir, delay_overhead_ms, lines, files
            )
    lines += ["", "[links]"]
    up = ["left", *chains["up"], "right"]
    down = ["right", *chains["down"], "left"]
    for a, b in [*itertools.pairwise(up), *itertools.pairwise(down)]:
        lines.append(f"{a} = {_q(b)}")
    tmp = f"{holder_pid_file}.tmp"
    holder = f"echo $$ > {tmp} && mv {tmp} {holder_pid_file} && exec sleep infinity"
    lines += ["", "[commands]", f"left = {json.dumps(['/bin/sh', '-c', holder])}", ""]
    return LinkFiles(config_toml="\n".join(lines), files=files)
