"""h2lab.analysis.tree: the "when does h2 help" decision tree recovers planted rules."""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import replace

import numpy as np
import pytest

from h2lab.analysis.factors import Cell, cell_factors
from h2lab.analysis.tree import (
    ClassLabel,
    DroppedFactor,
    TreeSample,
    fit_tree,
    label_of_outcome,
    label_of_ratio,
    leaf_label,
    samples_from_verdicts,
)
from h2lab.analysis.verdict import analyze
from h2lab.results import TrialRecord
from h2lab.spec.protocols import PROTOCOLS
from h2lab.spec.vocab import one_of

# seed 001 Table I: object counts and loss rates of its synthetic pages
COUNTS = (2, 8, 16, 32, 64, 128, 512)
LOSSES = (0.0, 0.005, 0.01, 0.02)
RTTS_MS = (20, 100, 200)
SIZES = ("1KB", "10KB", "100KB")


def planted(count: float, loss: float) -> ClassLabel:
    """The rule to recover: h2 wins iff objects >= 64 and loss < 1 %; else a tie."""
    return "h2" if count >= 64 and loss < 0.01 else "tie"


def grid_samples() -> list[TreeSample]:
    """Cells of a full factor grid, described by their page and network specs as stored."""
    out = []
    for n, loss, rtt, size in itertools.product(COUNTS, LOSSES, RTTS_MS, SIZES):
        cell = Cell.of(
            page=f"synthetic:n={n},size={size},origins=1",
            network=f"rtt={rtt}ms,down=10Mbps,up=2Mbps,loss={loss * 100:g}%",
            server="nginx",
            client="h2load",
        )
        factors = cell_factors(cell)
        assert factors.page.object_count == n and factors.network.loss_fraction == loss
        out.append(TreeSample(factors.features(), planted(n, loss), cell.describe()))
    return out


def probe(count: float, loss: float, rtt_ms: float = 50.0, size: float = 5e4) -> dict[str, float]:
    return {
        "object_count": count,
        "loss_fraction": loss,
        "rtt_ms": rtt_ms,
        "object_size_bytes": size,
    }


# off-grid values too, but none between the grid points that straddle a threshold
PROBE_COUNTS = (1, 2, 10, 32, 64, 100, 512, 5000)
PROBE_LOSSES = (0.0, 0.001, 0.005, 0.01, 0.015, 0.05)


def test_tree_recovers_a_planted_rule() -> None:
    tree = fit_tree(grid_samples())
    assert tree.n_samples == len(COUNTS) * len(LOSSES) * len(RTTS_MS) * len(SIZES)
    assert tree.split_factors() == {"object_count", "loss_fraction"}
    for node in tree.root.walk():
        if node.split is None:
            continue
        assert node.split.threshold is not None
        if node.split.factor == "object_count":
            assert 32 < node.split.threshold < 64
        else:
            assert 0.005 < node.split.threshold < 0.01
    assert len(tree.leaves()) == 3
    for leaf in tree.leaves():
        assert max(leaf.class_counts.values()) == leaf.n_samples  # pure
    for count, loss in itertools.product(PROBE_COUNTS, PROBE_LOSSES):
        assert tree.predict(probe(count, loss)) == planted(count, loss), (count, loss)
    # factors that do not matter, or do not vary, are never split on
    dropped = {d.factor for d in tree.dropped}
    assert {"server", "client", "congestion_control", "down_rate_bps"} <= dropped
    assert "page" not in tree.columns and "network" not in tree.columns


def test_tree_recovers_the_rule_through_label_noise_with_majority_leaves() -> None:
    rng = random.Random(11)
    samples = grid_samples() * 3
    labels: tuple[ClassLabel, ...] = ("h2", "h1", "tie")
    noisy = [replace(s, label=rng.choice(labels)) if rng.random() < 0.15 else s for s in samples]
    tree = fit_tree(noisy, max_depth=2, seed=3)
    assert tree.root.split is not None
    assert tree.root.split.factor in {"object_count", "loss_fraction"}
    for count, loss in itertools.product(PROBE_COUNTS, PROBE_LOSSES):
        assert tree.predict(probe(count, loss)) == planted(count, loss), (count, loss)
    # every leaf is labelled by a majority of at least 3/4, none of them is pure
    for leaf in tree.leaves():
        top = max(leaf.class_counts.values())
        assert leaf.label != "mixed"
        assert 0.75 <= top / leaf.n_samples < 1.0


def test_tree_is_reproducible_from_the_seed() -> None:
    samples = grid_samples()
    assert fit_tree(samples, seed=4) == fit_tree(samples, seed=4)


def test_class_counts_are_sample_counts() -> None:
    tree = fit_tree(grid_samples())
    root = tree.root
    assert root.n_samples == tree.n_samples
    n_h2 = len(RTTS_MS) * len(SIZES) * 3 * 2  # counts 64, 128, 512 x losses 0, 0.5 %
    assert dict(root.class_counts) == {"h2": n_h2, "h1": 0, "tie": tree.n_samples - n_h2}
    for node in root.walk():
        if node.left is not None and node.right is not None:
            for c in ("h2", "h1", "tie"):
                assert node.class_counts[c] == (
                    node.left.class_counts[c] + node.right.class_counts[c]
                )


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        ({"h2": 3, "tie": 1}, "h2"),  # exactly 0.75
        ({"h1": 74, "tie": 26}, "mixed"),
        ({"h1": 75, "tie": 25}, "h1"),
        ({"tie": 10}, "tie"),
        ({"h2": 2, "h1": 2}, "mixed"),
        ({}, "mixed"),
    ],
)
def test_leaf_label_needs_three_quarters(counts: dict[str, int], expected: str) -> None:
    assert leaf_label(counts) == expected


def test_labels_from_ratios_and_outcomes() -> None:
    # seed 001's point rule: s <= 0.95 h2, s >= 1.05 h1
    assert [label_of_ratio(s) for s in (0.5, 0.95, 0.951, 1.0, 1.049, 1.05, 2.0)] == [
        "h2",
        "h2",
        "tie",
        "tie",
        "tie",
        "h1",
        "h1",
    ]
    assert label_of_outcome("h2 faster") == "h2"
    assert label_of_outcome("h1 faster") == "h1"
    assert label_of_outcome("tie") == "tie"
    assert label_of_outcome("too few blocks") is None


def test_categorical_factors_are_one_hot() -> None:
    samples = [
        TreeSample({"server": server, "rtt_ms": float(rtt)}, "h1" if server == "h2o" else "tie")
        for server in ("nginx", "h2o", "apache")
        for rtt in (10, 50, 100)
    ]
    tree = fit_tree(samples)
    assert tree.columns == ("rtt_ms", "server=apache", "server=h2o", "server=nginx")
    split = tree.root.split
    assert split is not None
    assert (split.factor, split.category) == ("server", "h2o")
    assert (split.left_text, split.right_text) == ("server ≠ h2o", "server = h2o")
    assert tree.predict({"server": "h2o", "rtt_ms": 5.0}) == "h1"
    assert tree.predict({"server": "caddy", "rtt_ms": 5.0}) == "tie"  # unseen: not h2o


def test_unlimited_rate_is_above_every_finite_rate() -> None:
    rates = (1e6, 1e7, 1e8, math.inf)
    samples = [
        TreeSample({"down_rate_bps": r, "rtt_ms": float(rtt)}, "h2" if r == math.inf else "tie")
        for r in rates
        for rtt in (10, 100)
    ]
    tree = fit_tree(samples)
    split = tree.root.split
    assert split is not None and split.factor == "down_rate_bps"
    assert split.right_text == "down_rate_bps unlimited"
    assert tree.predict({"down_rate_bps": math.inf, "rtt_ms": 10.0}) == "h2"
    assert tree.predict({"down_rate_bps": 1e6, "rtt_ms": 10.0}) == "tie"
    # faster than any finite rate seen, but still a limit: not on the unlimited side
    assert tree.predict({"down_rate_bps": 1e9, "rtt_ms": 10.0}) == "tie"


def test_unknown_and_constant_factors_are_dropped_and_listed() -> None:
    labelled: tuple[tuple[int, ClassLabel], ...] = ((2, "tie"), (8, "tie"), (64, "h2"), (128, "h2"))
    samples = [
        TreeSample(
            {"object_count": float(n), "rtt_ms": None if n == 2 else 50.0, "cc": "cubic"}, lab
        )
        for n, lab in labelled
    ]
    tree = fit_tree(samples)
    assert tree.columns == ("object_count",)
    assert tree.dropped == (
        DroppedFactor("cc", "the same for every sample"),
        DroppedFactor("rtt_ms", "unknown for some samples"),
    )


def test_a_single_class_gives_a_single_leaf() -> None:
    samples = [TreeSample({"object_count": float(n)}, "tie") for n in COUNTS]
    tree = fit_tree(samples)
    assert tree.root.is_leaf and tree.root.label == "tie"
    assert tree.predict({}) == "tie"
    with pytest.raises(ValueError, match="at least one"):
        fit_tree([])


def test_predict_needs_the_split_factors() -> None:
    tree = fit_tree(grid_samples())
    with pytest.raises(KeyError, match=r"object_count|loss_fraction"):
        tree.predict({"rtt_ms": 10.0})


def test_render_text() -> None:
    assert fit_tree(grid_samples()).render_text() == "\n".join(
        [
            "all: 252 samples (h2 54, tie 198) -> tie",
            "├── object_count ≤ 48: 144 samples (tie 144) -> tie",
            "└── object_count > 48: 108 samples (h2 54, tie 54) -> mixed",
            "    ├── loss_fraction ≤ 0.0075: 54 samples (h2 54) -> h2",
            "    └── loss_fraction > 0.0075: 54 samples (tie 54) -> tie",
        ]
    )
    one = fit_tree([TreeSample({"rtt_ms": 1.0}, "h1")])
    assert one.render_text() == "all: 1 sample (h1 1) -> h1"


def _trial(protocol: str, rep: int, pdt: float, page: str) -> TrialRecord:
    block = f"{page}|cable|r{rep}"
    return TrialRecord(
        trial_key=f"{block}|{protocol}",
        experiment="e",
        block=block,
        cell=Cell.of(page=page, network="cable", server="nginx", client="h2load"),
        page_digest=None,
        protocol=one_of(PROTOCOLS, protocol, "protocol"),
        repetition=rep,
        seed=rep,
        attempt=1,
        status="ok",
        error=None,
        started_at="2026-01-01T00:00:00",
        duration_s=1.0,
        pdt_ms=pdt,
        plt_ms=None,
        body_bytes=None,
        bytes_up=None,
        bytes_down=None,
        tcp_connections=None,
        retransmits=None,
        request_header_bytes=None,
        response_header_bytes=None,
        config={},
        versions={},
    )


def test_samples_from_verdicts() -> None:
    rows = []
    for n, ratio, reps in ((8, 1.0, 4), (64, 0.5, 4), (512, 0.5, 1)):
        page = f"synthetic:n={n},size=10KB,origins=1"
        for rep in range(reps):
            rows += [
                _trial("h1s", rep, 100.0 + rep, page),
                _trial("h2s", rep, ratio * (100 + rep), page),
            ]
    verdicts = analyze(rows, np.random.default_rng(0)).verdicts
    samples = samples_from_verdicts(verdicts)
    # the cell with one block has no verdict and is left out
    assert [(s.features["object_count"], s.label) for s in samples] == [(64.0, "h2"), (8.0, "tie")]
    assert samples[0].features["pair"] == "h2s/h1s"
    assert samples[0].features["rtt_ms"] == 28.0  # the cable preset
    assert "h2s/h1s" in samples[0].name
