"""The chaos soak (h2lab.cluster.chaos), short: bench/chaos.py runs 1,000 trials, this 40 on
a local 2-node Ray cluster, a lab node killed with ``kill -9`` at 20 ok trials and started
again, the driver killed with ``kill -9`` at 28 and the same command run again. Every trial
key ends ok exactly once, and once the cluster stopped and ``h2lab clean`` ran on each node
nothing is left (in its lane, tests/lane.py: the namespaces, processes and temporary folders
it sees are its own)."""

from __future__ import annotations

from pathlib import Path

from h2lab.cluster.chaos import soak


def test_a_short_chaos_soak_stores_every_key_once_and_leaves_nothing(tmp_path: Path) -> None:
    said: list[str] = []
    result = soak(tmp_path, 40, kill_every=20, driver_kill_at=28, port=6398, say=said.append)
    print("\n".join(result.lines()))
    assert [n for n, _ in result.node_kills] and len(result.node_kills) == 1, said
    assert len(result.driver_kills) == 1 and result.driver_exits == [0], said
    assert result.ok_keys == 40 and result.keys_ok_twice == 0
    assert result.leftovers == []
    assert all(samples for samples in result.samples)  # the driver was watched
