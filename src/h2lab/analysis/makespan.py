"""How long recorded blocks would take on N nodes: greedy list scheduling and its lower bound.

A block (every protocol of one factor cell and one repetition, run back to back in one lab) is
the unit of scheduling. A driver hands blocks out in a list order (run order, or on several
labs longest estimated first: :func:`h2lab.runner.executor.longest_first`), one lab per node,
and a node takes the next block as soon as it is idle: Graham's list scheduling. Its makespan
is never below :func:`lower_bound` (the work shared out evenly, or the longest block, whichever
is more) nor :func:`pigeonhole_bound`, and never above ``sum / nodes + (1 − 1/nodes) × max``
(Graham 1966, "Bounds for certain multiprocessing anomalies"), so it is within a factor
2 − 1/nodes of the best schedule; longest first, with the true durations, within
4/3 − 1/(3 × nodes) (Graham 1969, "Bounds on multiprocessing timing anomalies").

No I/O: rows come in as mappings (``csv.DictReader`` rows of a ``trials.csv``), times in
seconds.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class RecordedBlock:
    """One block of recorded trial rows."""

    key: tuple[str, str]
    """(``experiment``, ``block``) of its rows"""
    duration_s: float
    """the sum of ``duration_s`` over its rows, every attempt and failed ones too"""
    rows: tuple[Mapping[str, str], ...]
    """its rows, in the order given"""


def recorded_blocks(rows: Iterable[Mapping[str, str]]) -> list[RecordedBlock]:
    """The blocks of ``rows``, in run order.

    A block is the rows sharing ``experiment`` (when present) and ``block``; its duration is
    the sum of ``duration_s`` over all its rows, every attempt and failed ones too (they cost
    time). Run order is by each block's earliest ``started_at`` (ISO 8601), ties by block key.
    """
    first: dict[tuple[str, str], datetime] = {}
    total: dict[tuple[str, str], float] = {}
    grouped: dict[tuple[str, str], list[Mapping[str, str]]] = {}
    for row in rows:
        key = (row.get("experiment", ""), row["block"])
        started = datetime.fromisoformat(row["started_at"])
        duration_s = float(row["duration_s"])
        if duration_s < 0:
            raise ValueError(f"negative duration_s {duration_s} in block {key[1]!r}")
        if key not in first or started < first[key]:
            first[key] = started
        total[key] = total.get(key, 0.0) + duration_s
        grouped.setdefault(key, []).append(row)
    order = sorted(first, key=lambda k: (first[k], k))
    return [RecordedBlock(k, total[k], tuple(grouped[k])) for k in order]


def block_durations(rows: Iterable[Mapping[str, str]]) -> list[float]:
    """Each block's duration in seconds, in run order (:func:`recorded_blocks`)."""
    return [b.duration_s for b in recorded_blocks(rows)]


def simulate_makespan(durations: Sequence[float], nodes: int) -> float:
    """The time until the last block ends when each block, in order, goes to the node that
    becomes free first (all nodes free at 0). 0 for no blocks."""
    if nodes < 1:
        raise ValueError(f"nodes must be >= 1, got {nodes}")
    free_at = [0.0] * min(nodes, len(durations))  # more nodes than blocks: the rest stay idle
    heapq.heapify(free_at)
    for duration in durations:
        if duration < 0:
            raise ValueError(f"durations must be >= 0, got {duration}")
        heapq.heappush(free_at, heapq.heappop(free_at) + duration)
    return max(free_at, default=0.0)


def lower_bound(durations: Sequence[float], nodes: int) -> float:
    """No schedule on ``nodes`` nodes ends sooner: max(sum / nodes, longest block)."""
    if nodes < 1:
        raise ValueError(f"nodes must be >= 1, got {nodes}")
    return max(sum(durations) / nodes, max(durations, default=0.0))


def pigeonhole_bound(durations: Sequence[float], nodes: int) -> float:
    """A bound no schedule beats either, tighter than :func:`lower_bound` when blocks are few
    per node: of the ``k × nodes + 1`` longest blocks, some node runs ``k + 1``, at least the
    ``k + 1`` shortest of them. The largest over k, and never below :func:`lower_bound`."""
    longest = sorted(durations, reverse=True)
    best = lower_bound(durations, nodes)
    k = 1
    while k * nodes < len(longest):
        best = max(best, sum(longest[k * nodes - k : k * nodes + 1]))
        k += 1
    return best
