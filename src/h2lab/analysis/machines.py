"""Which machines ran an experiment's trials, and which cells' trials ran on machines that
differ (pure: records in, counts and flags out).

A trial's machine is its ``machine`` column (the host name, ``host/node`` on a Ray cluster);
a record without one falls back to the ``machine``, then the ``host`` its ``versions_json``
names. What the machine was is in ``versions_json`` too: ``cpu_model`` (/proc/cpuinfo's
"model name"), ``kernel`` (``platform.release()``) and ``rattan_delay_overhead_ms`` (Rattan's
latency per direction that the link's delays left out). Trials recorded before these keys
existed have them unknown, and an unknown value never makes machines differ.

Warm-up trials are left out. The machine table counts every attempt; whether a cell's machines
differ is judged on its successful trials only, the ones its statistics use (a machine whose
kernel changed during the run differs from itself, and its cells are flagged too).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from h2lab.spec.factors import Cell
from h2lab.store.frame import TrialsIn, as_frame

MACHINE_KEYS = ("machine", "host", "cpu_model", "kernel")
"""The keys of ``versions_json`` that describe the machine, not a tool's version."""
DELAY_OVERHEAD_KEY = "rattan_delay_overhead_ms"
UNKNOWN_VALUES = frozenset({"", "unknown"})
"""Values of ``cpu_model`` or ``kernel`` that say nothing (h2lab.machine writes "unknown"
when /proc/cpuinfo names no model)."""


@dataclass(frozen=True)
class Setup:
    """What one trial's record says about the machine that ran it (None: not recorded)."""

    machine: str | None
    cpu_model: str | None
    kernel: str | None
    delay_overhead_ms: float | None


@dataclass(frozen=True)
class MachineRow:
    """One machine (``machine`` None: the trials that recorded none) and its trials."""

    machine: str | None
    attempts: int
    ok: int
    cpu_models: tuple[str, ...]
    """the distinct known CPU models its trials recorded, sorted (empty: none known)"""
    kernels: tuple[str, ...]
    delay_overhead_ms: tuple[float, float] | None
    """lowest and highest ``rattan_delay_overhead_ms`` of its trials (None: not recorded)"""


@dataclass(frozen=True)
class MixedCell:
    """A cell whose successful trials ran on machines that differ in CPU model or kernel."""

    cell: Cell
    differs: tuple[str, ...]
    """what differs: "cpu_model", "kernel" or both, in that order"""
    setups: tuple[tuple[str, str, str], ...]
    """each distinct (machine, cpu_model, kernel) of its trials, sorted; an unknown part is
    "unknown", a trial without a machine is "not recorded\""""


@dataclass(frozen=True)
class Machines:
    count: int
    """distinct machines that ran the (non-warm-up) trials; trials without one not counted"""
    attempts: int
    unrecorded: int
    """attempts that recorded no machine"""
    rows: tuple[MachineRow, ...]
    """per machine, sorted by name; the trials without a machine last"""
    mixed: tuple[MixedCell, ...]
    """the cells whose machines differ, sorted by cell (empty: all agree, or unknown)"""


def _known(value: object) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return None if text in UNKNOWN_VALUES else text


def _number(value: object) -> float | None:
    try:
        return float(str(value))
    except ValueError:
        return None


def setup_of(versions_json: str, machine: str | None) -> Setup:
    """The machine described by a record's ``machine`` column and ``versions_json``."""
    try:
        versions = json.loads(versions_json)
    except ValueError:
        versions = None
    if not isinstance(versions, Mapping):
        versions = {}
    name = machine or _known(versions.get("machine")) or _known(versions.get("host"))
    return Setup(
        machine=name,
        cpu_model=_known(versions.get("cpu_model")),
        kernel=_known(versions.get("kernel")),
        delay_overhead_ms=_number(versions.get(DELAY_OVERHEAD_KEY)),
    )


def _row(machine: str | None, groups: Sequence[tuple[int, int, Setup]]) -> MachineRow:
    """A machine's row from its groups of trials: (attempts, of them ok, their setup)."""
    setups = [s for _, _, s in groups]
    overheads = [s.delay_overhead_ms for s in setups if s.delay_overhead_ms is not None]
    return MachineRow(
        machine=machine,
        attempts=sum(n for n, _, _ in groups),
        ok=sum(ok for _, ok, _ in groups),
        cpu_models=tuple(sorted({s.cpu_model for s in setups if s.cpu_model is not None})),
        kernels=tuple(sorted({s.kernel for s in setups if s.kernel is not None})),
        delay_overhead_ms=(min(overheads), max(overheads)) if overheads else None,
    )


def _mixed(cell: Cell, setups: Iterable[Setup]) -> MixedCell | None:
    distinct = set(setups)
    differs = tuple(
        attr
        for attr in ("cpu_model", "kernel")
        if len({getattr(s, attr) for s in distinct} - {None}) > 1
    )
    if not differs:
        return None
    shown = {
        (s.machine or "not recorded", s.cpu_model or "unknown", s.kernel or "unknown")
        for s in distinct
    }
    return MixedCell(cell, differs, tuple(sorted(shown)))


def machines(records: TrialsIn) -> Machines:
    """How many machines ran ``records`` (warm-ups left out), one row per machine, and the
    cells whose successful trials ran on machines that differ in CPU model or kernel. Counted
    per distinct (versions_json, machine, ok, cell): a million trials parse a few JSON texts."""
    f = as_frame(records)
    f = f.take(f.number("warmup") == 0)
    vj, mc, ncells = f.text("versions_json"), f.text("machine"), max(1, len(f.cells))
    combo = ((vj.codes * len(mc.values) + mc.codes) * 2 + f.ok) * ncells + f.cell
    distinct, counts = np.unique(combo, return_counts=True)
    parsed: dict[tuple[int, int], Setup] = {}
    by_machine: dict[str | None, list[tuple[int, int, Setup]]] = defaultdict(list)
    by_cell: dict[Cell, list[Setup]] = defaultdict(list)
    for key, n in zip(distinct.tolist(), counts.tolist(), strict=True):
        key, cell = divmod(key, ncells)
        key, ok = divmod(key, 2)
        v, m = divmod(key, len(mc.values))
        if (v, m) not in parsed:
            parsed[(v, m)] = setup_of(vj.values[v] or "", mc.values[m])
        setup = parsed[(v, m)]
        by_machine[setup.machine].append((n, n * ok, setup))
        if ok:
            by_cell[f.cells[cell]].append(setup)
    names = sorted(m for m in by_machine if m is not None)
    order: list[str | None] = [*names, None] if None in by_machine else list(names)
    mixed = (_mixed(cell, by_cell[cell]) for cell in sorted(by_cell))
    return Machines(
        count=len(names),
        attempts=len(f),
        unrecorded=sum(n for n, _, _ in by_machine.get(None, ())),
        rows=tuple(_row(m, by_machine[m]) for m in order),
        mixed=tuple(m for m in mixed if m is not None),
    )
