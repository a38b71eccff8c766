"""Expand an experiment into trials: blocks in random order, protocols interleaved in a block.

A block is one (page, network, server, client, tcp, repetition): every protocol of a block runs
back to back on the same machine state and with the same seed, so the per-block ratio
metric(h2)/metric(h1) is a paired comparison (common random numbers for the loss process).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass

from h2lab.net.lab import TcpSettings
from h2lab.spec.experiment import Experiment
from h2lab.spec.network import NetworkProfile


@dataclass(frozen=True)
class TrialSpec:
    experiment: str
    page: str
    network: NetworkProfile
    server: str
    client: str
    tcp: TcpSettings
    repetition: int
    protocol: str
    seed: int
    """drives the emulator's loss pattern; equal for every protocol of a block"""
    order: int
    """position in the run"""
    warmup: int = 0
    """n > 0: the n-th warm-up trial (stored with ``warmup = 1``, never analysed)"""
    shard: str = ""
    """"K/N" when run as shard K of N concurrent ones (``h2lab run --jobs N``); stored in the
    trial's configuration, not part of its key"""

    @property
    def block(self) -> str:
        return "|".join(
            [
                self.page,
                self.network.name,
                self.server,
                self.client,
                self.tcp.congestion_control,
                f"iw{self.tcp.initcwnd_packets}",
                f"r{self.repetition}",
            ]
        )

    @property
    def key(self) -> str:
        """Stable identity of the trial across reruns (resume skips stored keys)."""
        warm = f"warmup{self.warmup}|" if self.warmup else ""
        return f"{warm}{self.block}|{self.protocol}"

    def config(self) -> dict[str, object]:
        return {
            "experiment": self.experiment,
            "page": self.page,
            "network": self.network.as_dict(),
            "server": self.server,
            "client": self.client,
            "congestion_control": self.tcp.congestion_control,
            "initcwnd_packets": self.tcp.initcwnd_packets,
            "repetition": self.repetition,
            "protocol": self.protocol,
            "seed": self.seed,
            **({"shard": self.shard} if self.shard else {}),
        }


def block_seed(experiment_seed: int, block: str) -> int:
    digest = hashlib.sha256(f"{experiment_seed}|{block}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def pair_block(
    page: str,
    network: NetworkProfile,
    server: str,
    client: str,
    tcp: TcpSettings,
    repetition: int,
    compared: str | None = None,
) -> str:
    """The block of these factors (:attr:`TrialSpec.block`), or with the ``compared`` factor
    (``[compare]``) replaced by ``*``: the trials that run back to back with one seed."""
    parts = {
        "page": page,
        "network": network.name,
        "server": server,
        "client": client,
        "congestion_control": tcp.congestion_control,
        "initcwnd": f"iw{tcp.initcwnd_packets}",
    }
    if compared is not None:
        parts[compared] = "*"
    return "|".join([*parts.values(), f"r{repetition}"])


def expand(exp: Experiment) -> list[TrialSpec]:
    """All trials of ``exp`` in run order (deterministic from ``exp.seed``): the warm-up
    trials first (the first block's first protocol), then every block of every factor table
    (a block listed by two tables runs once) in rounds: every block of repetition 0 in shuffled
    order, then every block of repetition 1, and so on; protocols shuffled per block. A round
    is a complete replicate of the design, so a run stopped at any point (or resumed over
    several days) leaves every cell with the same number of repetitions, give or take one,
    and slow drift of the machine falls on whole rounds instead of on some cells.

    With ``[compare]``, a block spans every level of the compared factor: its trials (levels
    × protocols) run back to back in random order and share one seed."""
    rng = random.Random(exp.seed)
    compared = exp.compare.factor if exp.compare else None
    Combo = tuple[int, str, NetworkProfile, str, str, str, int]
    blocks: dict[Combo, tuple[str, ...]] = {}
    for f in exp.matrices:
        for combo in itertools.product(
            range(exp.repetitions),
            f.page,
            f.network,
            f.server,
            f.client,
            f.congestion_control,
            f.initcwnd,
        ):
            have = blocks.setdefault(combo, ())
            blocks[combo] = have + tuple(p for p in f.protocol if p not in have)
    groups: dict[str, list[Combo]] = {}
    for combo in blocks:
        rep, page, network, server, client, cc, iw = combo
        key = pair_block(page, network, server, client, TcpSettings(cc, iw), rep, compared)
        groups.setdefault(key, []).append(combo)
    order = list(groups)
    rng.shuffle(order)
    order.sort(key=lambda key: groups[key][0][0])  # stable: shuffled within each round
    trials: list[TrialSpec] = []
    for key in order:
        seed = block_seed(exp.seed, key)
        runs = [(combo, proto) for combo in groups[key] for proto in blocks[combo]]
        rng.shuffle(runs)
        for (rep, page, network, server, client, cc, iw), proto in runs:
            tcp = TcpSettings(cc, iw)
            trials.append(
                TrialSpec(
                    exp.name, page, network, server, client, tcp, rep, proto, seed, len(trials)
                )
            )
    if exp.warmup and trials:
        first = trials[0]
        warm = [dataclasses.replace(first, warmup=i + 1, order=i) for i in range(exp.warmup)]
        trials = warm + [dataclasses.replace(t, order=t.order + exp.warmup) for t in trials]
    return trials


def shard(trials: Sequence[TrialSpec], index: int, count: int) -> list[TrialSpec]:
    """Shard ``index`` (0-based) of ``count`` of a run (``h2lab run --jobs``): whole blocks
    (the trials that share a seed and run back to back) dealt out in turn, in run order, so
    every shard goes round by round and a pair never spans two shards; the warm-up trials go
    to shard 0. Each trial is marked with its shard (:attr:`TrialSpec.shard`)."""
    if count == 1:
        return list(trials)
    mark = f"{index + 1}/{count}"
    picked: list[TrialSpec] = []
    block, seed = -1, None
    for t in trials:
        if t.warmup:
            if index == 0:
                picked.append(dataclasses.replace(t, shard=mark))
            continue
        if t.seed != seed:
            block, seed = block + 1, t.seed
        if block % count == index:
            picked.append(dataclasses.replace(t, shard=mark))
    return picked
