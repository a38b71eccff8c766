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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from h2lab.spec.experiment import Experiment
from h2lab.spec.network import NetworkProfile
from h2lab.spec.tcp import TcpSettings


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


def level_of(t: TrialSpec, factor: str) -> str:
    """The level of ``factor`` of trial ``t``, as stored (a network's name; initcwnd as digits)."""
    match factor:
        case "network":
            return t.network.name
        case "congestion_control":
            return t.tcp.congestion_control
        case "initcwnd":
            return str(t.tcp.initcwnd_packets)
        case _:
            return str(getattr(t, factor))


def select(trials: Sequence[TrialSpec], only: Mapping[str, frozenset[str]]) -> list[TrialSpec]:
    """The trials whose level of every factor in ``only`` is one of its levels
    (``h2lab run --only``, :func:`h2lab.spec.experiment.parse_only`); the warm-up trials stay,
    and none of the factors is the protocol or the compared one, so blocks stay whole."""
    return [
        t for t in trials if t.warmup or all(level_of(t, f) in levels for f, levels in only.items())
    ]


def for_shard(trials: Sequence[TrialSpec], index: int, count: int) -> list[TrialSpec]:
    """The trials shard ``index`` (0-based) of ``count`` may run (``h2lab run --jobs``): every
    block, which it claims one at a time as it reaches them (:func:`claimed`), and the warm-up
    trials if it is the first. Each trial is marked with its shard (:attr:`TrialSpec.shard`)."""
    if count == 1:
        return list(trials)
    mark = f"{index + 1}/{count}"
    return [dataclasses.replace(t, shard=mark) for t in trials if index == 0 or not t.warmup]


def claimed(trials: Iterable[TrialSpec], claim: Callable[[TrialSpec], bool]) -> Iterator[TrialSpec]:
    """The trials of the blocks (the trials that share a seed and run back to back) that
    ``claim`` grants, in order; ``claim`` is asked at a block's first trial, when the caller
    is ready to run it, so concurrent shards asking one store each take the next block no
    other has taken and finish together (a heavy block does not hold up blocks dealt behind
    it). Warm-up trials are never claimed."""
    seed: int | None = None
    granted = False
    for t in trials:
        if t.warmup:
            yield t
            continue
        if t.seed != seed:
            seed, granted = t.seed, claim(t)
        if granted:
            yield t
