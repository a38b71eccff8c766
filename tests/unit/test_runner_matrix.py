"""h2lab.runner.matrix: experiments -> trials in blocks, seeded and shuffled reproducibly."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from collections import Counter

import pytest

from h2lab.errors import SpecError
from h2lab.runner.matrix import TrialSpec, block_seed, expand, select
from h2lab.spec.experiment import Compare, Experiment, Factors, parse_only
from h2lab.spec.factors import trial_factors
from h2lab.spec.network import parse_network
from h2lab.spec.protocols import ProtocolName
from h2lab.spec.tcp import TcpSettings

PROTOCOLS: tuple[ProtocolName, ...] = ("h1c", "h1s", "h2c", "h2s")


def _experiment(seed: int = 5, repetitions: int = 3) -> Experiment:
    return Experiment(
        name="m",
        factors=Factors.of(
            protocol=PROTOCOLS,
            network=(parse_network("cable"), parse_network("3g-fast")),
            page=("synthetic:n=2", "synthetic:n=4"),
            congestion_control=("cubic", "bbr"),
        ),
        seed=seed,
        repetitions=repetitions,
    )


def _blocks(trials: list[TrialSpec]) -> list[list[TrialSpec]]:
    return [list(g) for _, g in itertools.groupby(trials, key=lambda t: t.block)]


def test_trial_count_and_block_count() -> None:
    exp = _experiment()
    trials = expand(exp)
    n_blocks = 3 * 2 * 2 * 1 * 1 * 2 * 1  # reps * pages * networks * servers * clients * cc * iw
    assert len(trials) == n_blocks * len(PROTOCOLS)
    assert len({t.block for t in trials}) == n_blocks
    assert [t.order for t in trials] == list(range(len(trials)))


def test_every_combination_once() -> None:
    trials = expand(_experiment())
    combos = Counter(
        (t.repetition, t.page, t.network.name, t.tcp.congestion_control, t.protocol) for t in trials
    )
    expected = set(
        itertools.product(
            range(3),
            ("synthetic:n=2", "synthetic:n=4"),
            ("cable", "3g-fast"),
            ("cubic", "bbr"),
            PROTOCOLS,
        )
    )
    assert set(combos) == expected
    assert set(combos.values()) == {1}


def test_protocols_of_a_block_are_adjacent_and_share_one_seed() -> None:
    exp = _experiment()
    trials = expand(exp)
    blocks = _blocks(trials)
    assert len(blocks) == 24  # each block is one contiguous run
    for block in blocks:
        assert sorted(t.protocol for t in block) == sorted(PROTOCOLS)
        assert len({t.seed for t in block}) == 1
        assert block[0].seed == block_seed(exp.seed, block[0].block)


def test_different_blocks_have_different_seeds() -> None:
    blocks = _blocks(expand(_experiment()))
    seeds = [b[0].seed for b in blocks]
    assert len(set(seeds)) == len(seeds)
    assert all(0 <= s < 2**63 for s in seeds)


def test_same_seed_same_order() -> None:
    a = expand(_experiment(seed=5))
    b = expand(_experiment(seed=5))
    assert [t.key for t in a] == [t.key for t in b]
    assert [t.seed for t in a] == [t.seed for t in b]


def test_different_seed_different_order_and_trial_seeds() -> None:
    a = expand(_experiment(seed=5))
    b = expand(_experiment(seed=6))
    assert [t.key for t in a] != [t.key for t in b]
    assert sorted(t.key for t in a) == sorted(t.key for t in b)
    seeds_a = {t.key: t.seed for t in a}
    assert all(seeds_a[t.key] != t.seed for t in b)


def test_blocks_run_in_rounds_shuffled_within_each() -> None:
    """Every block of repetition r runs before any of r + 1 (a run stopped anywhere leaves the
    cells within one repetition of each other); within a round the cells are shuffled."""
    trials = expand(_experiment(repetitions=4))
    reps = [t.repetition for t in trials]
    assert reps == sorted(reps)
    cells = [[b[0].block.rsplit("|", 1)[0] for b in _blocks(trials) if b[0].repetition == r]
             for r in range(4)]  # fmt: skip
    assert all(sorted(c) == sorted(cells[0]) and len(c) == 8 for c in cells)
    assert len({tuple(c) for c in cells}) == 4  # each round in its own order
    stopped = Counter(t.block.rsplit("|", 1)[0] for t in trials[: len(trials) * 5 // 8])
    assert max(stopped.values()) - min(stopped.values()) <= len(PROTOCOLS)  # one repetition


def test_protocol_order_varies_between_blocks() -> None:
    blocks = _blocks(expand(_experiment()))
    orders = {tuple(t.protocol for t in b) for b in blocks}
    assert len(orders) > 1


def test_keys_unique_and_built_from_block() -> None:
    trials = expand(_experiment())
    keys = [t.key for t in trials]
    assert len(set(keys)) == len(keys)
    for t in trials:
        assert t.key == f"{t.block}|{t.protocol}"


def test_block_and_key_format() -> None:
    t = TrialSpec(
        experiment="e",
        factors=trial_factors(
            {
                "page": "synthetic:n=2",
                "network": parse_network("cable"),
                "congestion_control": "bbr",
                "initcwnd": 4,
            }
        ),
        repetition=2,
        protocol="h2s",
        seed=11,
        order=0,
    )
    assert t.block == "synthetic:n=2|cable|nginx|h2load|bbr|iw4|r2"
    assert t.key == "synthetic:n=2|cable|nginx|h2load|bbr|iw4|r2|h2s"
    config = t.config()
    assert config["network"] == parse_network("cable").as_dict()
    assert {k: v for k, v in config.items() if k != "network"} == {
        "experiment": "e",
        "page": "synthetic:n=2",
        "server": "nginx",
        "client": "h2load",
        "congestion_control": "bbr",
        "initcwnd_packets": 4,
        "tls": "1.3",
        "view": "first",
        "discovery": "forced",
        "h3_origins": "all",
        "repetition": 2,
        "protocol": "h2s",
        "seed": 11,
    }
    assert json.loads(json.dumps(config)) == config  # the store keeps it as JSON
    assert dataclasses.replace(t, protocol="h1s").block == t.block


def test_block_seed_is_stable() -> None:
    assert block_seed(1, "b") == block_seed(1, "b")
    assert block_seed(1, "b") != block_seed(2, "b")
    assert block_seed(1, "b") != block_seed(1, "c")
    # pinned: a changed derivation would silently change every stored loss pattern
    assert block_seed(0, "x") == int.from_bytes(hashlib.sha256(b"0|x").digest()[:8], "big") >> 1


def test_single_repetition_single_protocol() -> None:
    exp = Experiment(
        name="one",
        factors=Factors.of(
            protocol=("h2s",), network=(parse_network("lan"),), page=("synthetic:",)
        ),
    )
    (t,) = expand(exp)
    assert (t.experiment, t.protocol, t.repetition, t.order) == ("one", "h2s", 0, 0)
    assert t.tcp == TcpSettings("cubic", 10)


def test_only_links_without_state_are_reused() -> None:
    from h2lab.runner.session import link_is_stateless
    from h2lab.spec.network import parse_network

    assert link_is_stateless(parse_network("cable"))
    assert link_is_stateless(parse_network("rtt=100ms,rate=10Mbps,queue=1bdp"))
    assert not link_is_stateless(parse_network("rtt=100ms,rate=10Mbps,loss=1%"))
    assert not link_is_stateless(parse_network("rtt=100ms,rate=10Mbps,down_loss=0.5%"))
    assert not link_is_stateless(parse_network("cell-good"))


def test_warmup_trials_come_first_with_their_own_keys() -> None:
    exp = dataclasses.replace(_experiment(repetitions=1), warmup=2)
    trials = expand(exp)
    plain = expand(_experiment(repetitions=1))
    assert len(trials) == len(plain) + 2
    assert [t.warmup for t in trials[:3]] == [1, 2, 0]
    assert trials[0].key == "warmup1|" + plain[0].key
    assert trials[0].block == plain[0].block  # same cell as the first trial
    assert [t.order for t in trials] == list(range(len(trials)))
    assert [t.key for t in trials[2:]] == [t.key for t in plain]


def test_factor_tables_are_crossed_each_and_united() -> None:
    lan, cable = parse_network("lan"), parse_network("cable")
    exp = Experiment(
        name="u",
        factors=Factors.of(protocol=("h1s", "h2s"), network=(lan,), page=("synthetic:n=2",)),
        also=(
            # overlaps the first table in (lan, n=2) for h2s, adds h2c there, and a new cell
            Factors.of(protocol=("h2s", "h2c"), network=(lan, cable), page=("synthetic:n=2",)),
        ),
        seed=3,
    )
    trials = expand(exp)
    keys = Counter(t.key for t in trials)
    assert all(n == 1 for n in keys.values())  # a combination listed twice runs once
    by_block: dict[str, set[str]] = {}
    for t in trials:
        by_block.setdefault(t.network.name, set()).add(t.protocol)
    assert by_block == {"lan": {"h1s", "h2s", "h2c"}, "cable": {"h2s", "h2c"}}


def test_only_selects_whole_blocks_of_the_levels_given() -> None:
    """`h2lab run --only network=3g-fast --only congestion_control=cubic --only
    congestion_control=bbr`: the trials of those levels, in run order, blocks whole, warm-ups
    kept; sharding the selection deals its blocks as before."""
    exp = dataclasses.replace(_experiment(repetitions=2), warmup=1)
    trials = expand(exp)
    only = parse_only(
        exp, ["network=3g-fast", "congestion_control=cubic", "congestion_control=bbr"]
    )
    assert only == {"network": {"3g-fast"}, "congestion_control": {"cubic", "bbr"}}
    picked = select(trials, only)
    assert picked[0].warmup == 1
    rest = [t for t in picked if not t.warmup]
    assert {t.network.name for t in rest} == {"3g-fast"}
    assert len(rest) == len([t for t in trials if not t.warmup]) // 2
    assert [t.order for t in picked] == sorted(t.order for t in picked)
    assert {t.block for t in rest} == {t.block for t in trials if t.network.name == "3g-fast"}
    both = select(trials, parse_only(exp, ["network=3g-fast", "page=synthetic:n=4"]))
    assert {(t.network.name, t.page) for t in both if not t.warmup} == {
        ("3g-fast", "synthetic:n=4")
    }
    assert select(trials, {}) == trials
    # a network written as its spec selects the stored name
    inline = dataclasses.replace(
        exp, factors=exp.factors.replace(network=(parse_network("rtt=20ms"),))
    )
    assert parse_only(inline, ["network=rtt=20ms"]) == {"network": {parse_network("rtt=20ms").name}}
    # a shell-style pattern keeps every level it matches, as the levels written one by one do
    assert parse_only(exp, ["network=3g-*"]) == {"network": {"3g-fast"}}
    assert parse_only(exp, ["network=*", "congestion_control=[cb]*"]) == {
        "network": {"cable", "3g-fast"},
        "congestion_control": {"cubic", "bbr"},
    }
    assert select(trials, parse_only(exp, ["network=3g-f?st"])) == picked
    # a level's exact name is that level, even if it reads as a pattern matching others too
    odd = dataclasses.replace(
        exp, factors=exp.factors.replace(page=("pages/a[1].har", "pages/a1.har"))
    )
    assert parse_only(odd, ["page=pages/a[1].har"]) == {"page": {"pages/a[1].har"}}
    assert parse_only(odd, ["page=pages/a[1]*"]) == {"page": {"pages/a1.har"}}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("network", "must be FACTOR=LEVEL"),
        ("network=", "must be FACTOR=LEVEL"),
        ("protocol=h2s", "cannot select on 'protocol'"),
        ("server=rr", "cannot select on 'server' ([compare] pairs its levels)"),
        ("network=lan", "'lan' is not a level of network (levels: cable, 3g-fast)"),
        ("network=warp", "unknown profile 'warp'"),
        ("network=lte-*", "'lte-*' matches no level of network (levels: cable, 3g-fast)"),
    ],
)
def test_only_refuses_what_would_split_a_block_or_is_not_a_level(text: str, reason: str) -> None:
    exp = dataclasses.replace(
        _experiment(),
        factors=_experiment().factors.replace(server=("nginx", "rr")),
        compare=Compare("server", ("nginx",)),
    )
    with pytest.raises(SpecError) as exc:
        parse_only(exp, [text])
    assert (exc.value.source, exc.value.field) == ("--only", text)
    assert reason in exc.value.reason
