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
        }


def block_seed(experiment_seed: int, block: str) -> int:
    digest = hashlib.sha256(f"{experiment_seed}|{block}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def expand(exp: Experiment) -> list[TrialSpec]:
    """All trials of ``exp`` in run order (deterministic from ``exp.seed``): the warm-up
    trials first (the first block's first protocol), then every block of every factor table
    (a block listed by two tables runs once), blocks shuffled, protocols shuffled per block."""
    rng = random.Random(exp.seed)
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
    order = list(blocks)
    rng.shuffle(order)
    trials: list[TrialSpec] = []
    for combo in order:
        rep, page, network, server, client, cc, iw = combo
        protocols = list(blocks[combo])
        rng.shuffle(protocols)
        tcp = TcpSettings(cc, iw)
        proto_block = TrialSpec(exp.name, page, network, server, client, tcp, rep, "", 0, 0).block
        seed = block_seed(exp.seed, proto_block)
        for proto in protocols:
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
