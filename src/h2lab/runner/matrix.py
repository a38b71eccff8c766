"""Expand an experiment into trials: blocks in random order, protocols interleaved in a block.

A block is one level of every factor (:class:`h2lab.spec.factors.TrialFactors`) and one
repetition: every protocol of a block runs back to back on the same machine state and with the
same seed, so the per-block ratio metric(h2)/metric(h1) is a paired comparison (common random
numbers for the loss process).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from h2lab.spec.experiment import Experiment
from h2lab.spec.factors import Cell, TrialFactors
from h2lab.spec.network import NetworkProfile
from h2lab.spec.protocols import ProtocolName
from h2lab.spec.tcp import TcpSettings


@dataclass(frozen=True)
class TrialSpec:
    experiment: str
    factors: TrialFactors
    """the trial's level of every factor but the protocol"""
    repetition: int
    protocol: ProtocolName
    seed: int
    """drives the emulator's loss pattern; equal for every protocol of a block"""
    order: int
    """position in the run"""
    warmup: int = 0
    """n > 0: the n-th warm-up trial (stored with ``warmup = 1``, never analysed)"""
    shard: str = ""
    """"K/N" when run by worker K of N (``h2lab run --jobs N``); stored in the trial's
    configuration, not part of its key"""

    @property
    def cell(self) -> Cell:
        return self.factors.cell()

    @property
    def block(self) -> str:
        return "|".join([*self.cell.key_parts(), f"r{self.repetition}"])

    @property
    def key(self) -> str:
        """Stable identity of the trial across reruns (resume skips stored keys)."""
        return self._key(self.cell)

    @property
    def keys_by_path(self) -> tuple[str, ...]:
        """The keys earlier h2labs gave this trial, where they differ from :attr:`key`: 0.8's,
        a server's ``conf=`` and a page's file by their absolute paths; 0.9.0's, the page's
        file by its path (:func:`h2lab.spec.factors.portable_page`). A store holding such keys
        is rekeyed when a run resumes it (:func:`h2lab.runner.start.rekey_paths`)."""
        by_path = self.cell.replace("page", self.factors.page)
        older = (self._key(by_path.replace("server", self.factors.server)), self._key(by_path))
        return tuple(k for k in dict.fromkeys(older) if k != self.key)

    def _key(self, cell: Cell) -> str:
        warm = f"warmup{self.warmup}|" if self.warmup else ""
        return f"{warm}{pair_block(cell, self.repetition)}|{self.protocol}"

    # the levels the runner acts on
    @property
    def page(self) -> str:
        return self.factors.page

    @property
    def network(self) -> NetworkProfile:
        return self.factors.network

    @property
    def server(self) -> str:
        return self.factors.server

    @property
    def client(self) -> str:
        return self.factors.client

    @property
    def tcp(self) -> TcpSettings:
        return self.factors.tcp

    def config(self) -> dict[str, object]:
        levels: dict[str, object] = dict(self.cell.columns())
        levels["network"] = self.network.as_dict()
        return {
            "experiment": self.experiment,
            **levels,
            "repetition": self.repetition,
            "protocol": self.protocol,
            "seed": self.seed,
            **({"shard": self.shard} if self.shard else {}),
        }


def block_seed(experiment_seed: int, block: str) -> int:
    digest = hashlib.sha256(f"{experiment_seed}|{block}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def pair_block(cell: Cell, repetition: int, compared: str | None = None) -> str:
    """The block of these factors (:attr:`TrialSpec.block`), or with the ``compared`` factor
    (``[compare]``) replaced by ``*``: the trials that run back to back with one seed."""
    return "|".join([*cell.key_parts(compared), f"r{repetition}"])


def expand(exp: Experiment) -> list[TrialSpec]:
    """All trials of ``exp`` in run order (deterministic from ``exp.seed``): the warm-up
    trials first (the first block's first protocol), then every block of every factor table
    (a block listed by two tables runs once) in rounds: every block of repetition 0 in shuffled
    order, then every block of repetition 1, and so on; protocols shuffled per block. A round
    is a complete replicate of the design, so a run stopped at any point (or resumed over
    several days) leaves every cell with the same number of repetitions, give or take one,
    and slow drift of the machine falls on whole rounds instead of on some cells. (A run on
    several labs hands out the first round thus, then the other blocks longest estimated
    first: :func:`h2lab.runner.executor.longest_first`.)

    With ``[compare]``, a block spans every level of the compared factor: its trials (levels
    × protocols) run back to back in random order and share one seed."""
    rng = random.Random(exp.seed)
    compared = exp.compare.factor if exp.compare else None
    Combo = tuple[int, TrialFactors]
    blocks: dict[Combo, tuple[ProtocolName, ...]] = {}
    for f in exp.matrices:
        for rep, *levels in itertools.product(range(exp.repetitions), *f.levels):
            combo = (rep, TrialFactors(*levels))
            have = blocks.setdefault(combo, ())
            blocks[combo] = have + tuple(p for p in f.protocol if p not in have)
    groups: dict[str, list[Combo]] = {}
    for combo in blocks:
        rep, factors = combo
        groups.setdefault(pair_block(factors.cell(), rep, compared), []).append(combo)
    order = list(groups)
    rng.shuffle(order)
    order.sort(key=lambda key: groups[key][0][0])  # stable: shuffled within each round
    trials: list[TrialSpec] = []
    for key in order:
        seed = block_seed(exp.seed, key)
        runs = [(combo, proto) for combo in groups[key] for proto in blocks[combo]]
        rng.shuffle(runs)
        for (rep, factors), proto in runs:
            trials.append(TrialSpec(exp.name, factors, rep, proto, seed, len(trials)))
    if exp.warmup and trials:
        first = trials[0]
        warm = [dataclasses.replace(first, warmup=i + 1, order=i) for i in range(exp.warmup)]
        trials = warm + [dataclasses.replace(t, order=t.order + exp.warmup) for t in trials]
    return trials


def level_of(t: TrialSpec, factor: str) -> str:
    """The level of ``factor`` of trial ``t``, as stored (a network's name; initcwnd as digits)."""
    return str(t.cell[factor])


def select(trials: Sequence[TrialSpec], only: Mapping[str, frozenset[str]]) -> list[TrialSpec]:
    """The trials whose level of every factor in ``only`` is one of its levels
    (``h2lab run --only``, :func:`h2lab.spec.experiment.parse_only`); the warm-up trials stay,
    and none of the factors is the protocol or the compared one, so blocks stay whole."""
    return [
        t for t in trials if t.warmup or all(level_of(t, f) in levels for f, levels in only.items())
    ]
