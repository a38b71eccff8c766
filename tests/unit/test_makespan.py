"""h2lab.analysis.makespan: blocks from trial rows, greedy list scheduling and its lower bound.

Expected makespans are worked out by hand in each test (each block, in order, goes to the node
that becomes free first; ties to any free node, which does not change the makespan).
"""

from __future__ import annotations

import itertools
import random

import pytest

from h2lab.analysis.makespan import (
    block_durations,
    lower_bound,
    pigeonhole_bound,
    recorded_blocks,
    simulate_makespan,
)


def row(block: str, started_at: str, duration_s: float, **extra: str) -> dict[str, str]:
    return {
        "experiment": "e",
        "block": block,
        "started_at": started_at,
        "duration_s": str(duration_s),
        **extra,
    }


def test_a_long_first_block_sets_the_makespan() -> None:
    # node A: 5; node B: 1, 1, 1 -> both done by 5
    assert simulate_makespan([5, 1, 1, 1], 2) == 5


def test_greedy_follows_run_order_not_the_best_schedule() -> None:
    # [1, 1, 2] on 2 nodes: A 1 then 2 (ends 3), B 1 -> 3, although {2} | {1, 1} would end at 2
    assert simulate_makespan([1, 1, 2], 2) == 3
    assert lower_bound([1, 1, 2], 2) == 2


@pytest.mark.parametrize("nodes", [1, 2, 3, 4, 6, 12])
def test_equal_blocks_divide_evenly(nodes: int) -> None:
    assert simulate_makespan([10.0] * 12, nodes) == pytest.approx(120 / nodes)
    assert lower_bound([10.0] * 12, nodes) == pytest.approx(120 / nodes)


def test_equal_blocks_that_do_not_divide_take_one_more_round() -> None:
    # 5 blocks on 2 nodes: 3 rounds of 10 on one node
    assert simulate_makespan([10.0] * 5, 2) == 30
    assert lower_bound([10.0] * 5, 2) == 25


def test_one_node_is_the_sum() -> None:
    durations = [3.5, 0.25, 7.0, 1.0]
    assert simulate_makespan(durations, 1) == pytest.approx(11.75)
    assert lower_bound(durations, 1) == pytest.approx(11.75)


def test_more_nodes_than_blocks_is_the_longest_block() -> None:
    assert simulate_makespan([2, 9, 4], 128) == 9
    assert lower_bound([2, 9, 4], 128) == 9


def test_a_block_longer_than_total_over_nodes_is_the_bound() -> None:
    # sum 20 over 4 nodes is 5, but the 8 s block cannot be split
    durations = [8, 3, 3, 3, 3]
    assert lower_bound(durations, 4) == 8
    assert simulate_makespan(durations, 4) == 8


def test_no_blocks_take_no_time() -> None:
    assert simulate_makespan([], 8) == 0
    assert lower_bound([], 8) == 0


def test_bound_never_above_makespan_and_graham_never_further() -> None:
    rng = random.Random(7)
    for nodes, count in itertools.product([1, 2, 3, 8, 32], [1, 5, 40, 200]):
        durations = [rng.expovariate(1 / 60) for _ in range(count)]
        makespan = simulate_makespan(durations, nodes)
        assert lower_bound(durations, nodes) <= makespan + 1e-9
        # Graham (1966): list scheduling ends by sum / nodes + (1 - 1 / nodes) * longest
        graham = sum(durations) / nodes + (1 - 1 / nodes) * max(durations)
        assert makespan <= graham + 1e-9


@pytest.mark.parametrize("nodes", [0, -1])
def test_nodes_must_be_positive(nodes: int) -> None:
    with pytest.raises(ValueError, match="nodes"):
        simulate_makespan([1.0], nodes)
    with pytest.raises(ValueError, match="nodes"):
        lower_bound([1.0], nodes)


def test_blocks_sum_every_row_in_the_order_they_first_started() -> None:
    rows = [
        row("b", "2026-11-24T10:00:05.000+00:00", 2.0),
        row("a", "2026-11-24T10:00:00.000+00:00", 1.0),
        row("b", "2026-11-24T10:00:07.000+00:00", 3.0),
        # a failed attempt and its retry, a day later: both cost time, the block keeps its place
        row("a", "2026-11-25T09:00:00.000+00:00", 4.5, status="failed", attempt="1"),
        row("a", "2026-11-25T09:00:05.000+00:00", 0.5, status="ok", attempt="2"),
        row("c", "2026-11-24T10:00:02.000+00:00", 7.0),
    ]
    assert block_durations(rows) == [6.0, 7.0, 5.0]  # a (10:00:00), c (10:00:02), b (10:00:05)


def test_blocks_of_different_experiments_are_different_blocks() -> None:
    rows = [
        row("x", "2026-11-24T10:00:00+00:00", 1.0, experiment="one"),
        row("x", "2026-11-24T11:00:00+00:00", 2.0, experiment="two"),
    ]
    assert block_durations(rows) == [1.0, 2.0]


def test_start_times_compare_as_times_not_text() -> None:
    # 10:30 UTC+02:00 is 08:30 UTC, before 09:00 UTC although its text sorts later
    rows = [
        row("late", "2026-11-24T09:00:00+00:00", 1.0),
        row("early", "2026-11-24T10:30:00+02:00", 2.0),
    ]
    assert block_durations(rows) == [2.0, 1.0]


def test_no_rows_no_blocks() -> None:
    assert block_durations([]) == []


def test_recorded_blocks_keep_their_rows_and_key() -> None:
    rows = [
        row("b", "2026-11-24T10:00:05+00:00", 2.0, trial_key="b|h1s"),
        row("a", "2026-11-24T10:00:00+00:00", 1.0, trial_key="a|h1s"),
        row("b", "2026-11-24T10:00:07+00:00", 3.0, trial_key="b|h2s"),
    ]
    a, b = recorded_blocks(rows)
    assert (a.key, a.duration_s, [r["trial_key"] for r in a.rows]) == (("e", "a"), 1.0, ["a|h1s"])
    assert (b.key, b.duration_s) == (("e", "b"), 5.0)
    assert [r["trial_key"] for r in b.rows] == ["b|h1s", "b|h2s"]


def test_the_pigeonhole_bound_counts_blocks_that_must_share_a_node() -> None:
    # 3 blocks of 10 on 2 nodes: two share one, 20; the plain bound says max(15, 10) = 15
    assert lower_bound([10, 10, 10], 2) == 15
    assert pigeonhole_bound([10, 10, 10], 2) == 20
    # 5 of 10 on 2 nodes: of the 5 longest, one node runs 3: 30
    assert pigeonhole_bound([10] * 5, 2) == 30
    # never below the plain bound: one long block, many short ones
    assert pigeonhole_bound([8, 3, 3, 3, 3], 4) == 8
    assert pigeonhole_bound([], 4) == 0


def test_no_schedule_beats_the_pigeonhole_bound() -> None:
    """Against the best schedule, found by trying every assignment of blocks to nodes."""
    rng = random.Random(11)
    for nodes, count in itertools.product([2, 3], [3, 5, 7]):
        durations = [round(rng.expovariate(1 / 60), 1) for _ in range(count)]
        best = min(
            max(sum(d for d, n in zip(durations, assign, strict=True) if n == node)
                for node in range(nodes))
            for assign in itertools.product(range(nodes), repeat=count)
        )  # fmt: skip
        assert lower_bound(durations, nodes) <= pigeonhole_bound(durations, nodes) <= best + 1e-9
