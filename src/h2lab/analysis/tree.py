"""The "when does h2 help" decision tree over the factors of the cells (pure, seeded).

Seed 001 §IV.A ran ID3 over (RTT, bandwidth, loss, object size, object count) to predict
whether HTTP/2 (s ≤ 0.95) or HTTPS (s ≥ 1.05) wins, and marked a branch as one of them when
its likelihood was over 0.75, else "Other". Here: scikit-learn's
``DecisionTreeClassifier(criterion="entropy")``, i.e. ID3's information gain, but CART's binary
splits on thresholds (a numeric factor can be split again lower down, which ID3 does not do),
with numbers kept as numbers and categorical factors one-hot. Every node is labelled
``h2`` / ``h1`` / ``tie`` when that class holds at least :data:`LEAF_MAJORITY` of its samples,
else ``mixed`` (seed 001's "Other").

The fitted tree comes back as plain frozen data (:class:`TreeNode`), with the samples of each
class in every node counted here, so a report can draw it and :meth:`DecisionTree.predict`
needs no scikit-learn.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from h2lab.analysis.factors import Cell, CellFactors, FeatureValue, cell_factors
from h2lab.analysis.verdict import H1_FASTER_AT_LEAST, H2_FASTER_AT_MOST, Outcome, Verdict

ClassLabel = Literal["h2", "h1", "tie"]
LeafLabel = Literal["h2", "h1", "tie", "mixed"]
CLASSES: tuple[ClassLabel, ...] = ("h2", "h1", "tie")
LEAF_MAJORITY = 0.75
"""Seed 001 §IV.A: a branch is marked HTTP/2 (or HTTPS) when its likelihood is over 0.75; the
issue (#7) says "≥ 0.75", which is what is used."""


def label_of_outcome(outcome: Outcome) -> ClassLabel | None:
    """A verdict as a tree class; None for a cell with too few blocks (left out)."""
    labels: dict[Outcome, ClassLabel | None] = {
        "h2 faster": "h2",
        "h1 faster": "h1",
        "tie": "tie",
        "too few blocks": None,
    }
    return labels[outcome]


def label_of_ratio(s: float) -> ClassLabel:
    """Seed 001's own labelling of one configuration by its ratio s (no interval)."""
    if s <= H2_FASTER_AT_MOST:
        return "h2"
    if s >= H1_FASTER_AT_LEAST:
        return "h1"
    return "tie"


def leaf_label(class_counts: Mapping[str, int]) -> LeafLabel:
    """The class holding at least :data:`LEAF_MAJORITY` of the samples, else ``mixed``."""
    total = sum(class_counts.values())
    for c in CLASSES:
        if total and class_counts.get(c, 0) >= LEAF_MAJORITY * total:
            return c
    return "mixed"


@dataclass(frozen=True)
class TreeSample:
    """One labelled observation: usually a cell (and pair) with its verdict."""

    features: Mapping[str, FeatureValue]
    label: ClassLabel
    name: str = ""


def samples_from_verdicts(
    verdicts: Iterable[Verdict], factors: Callable[[Cell], CellFactors] = cell_factors
) -> list[TreeSample]:
    """One sample per verdict with an outcome; the pair (``h2s/h1s``...) is a factor too."""
    out = []
    for v in verdicts:
        label = label_of_outcome(v.outcome)
        if label is None:
            continue
        features = {**factors(v.cell).features(), "pair": v.ratio.pair}
        out.append(TreeSample(features, label, f"{v.cell.describe()} | {v.ratio.pair}"))
    return out


@dataclass(frozen=True)
class TreeSplit:
    """How a node divides its samples."""

    factor: str
    """the feature, as named in :meth:`CellFactors.features` (``object_count``, ``server``...)"""
    threshold: float | None
    """numeric split: values ≤ threshold go left"""
    category: str | None
    """categorical split: this category goes right, every other one left"""
    left_text: str
    """the condition of the left branch, for people (``object_count ≤ 48``)"""
    right_text: str
    unlimited_right: bool = False
    """the split separates finite values (left) from unlimited ones (``math.inf``, right);
    ``threshold`` is then only where scikit-learn cut between their encodings"""

    def goes_left(self, value: FeatureValue) -> bool:
        if value is None:
            raise ValueError(f"{self.factor}: no value")
        if self.category is not None:
            return str(value) != self.category
        if isinstance(value, str):
            raise ValueError(f"{self.factor}: a number is needed, got {value!r}")
        if self.unlimited_right:
            return not math.isinf(value)
        assert self.threshold is not None
        return value <= self.threshold


@dataclass(frozen=True)
class TreeNode:
    node_id: int
    """scikit-learn's node index; the root is 0"""
    depth: int
    n_samples: int
    class_counts: Mapping[str, int]
    """training samples of each class of :data:`CLASSES` that reach this node"""
    label: LeafLabel
    """:func:`leaf_label` of the counts (for an inner node: what a leaf here would say)"""
    split: TreeSplit | None = None
    """None for a leaf"""
    left: TreeNode | None = None
    right: TreeNode | None = None

    @property
    def is_leaf(self) -> bool:
        return self.split is None

    def walk(self) -> Iterator[TreeNode]:
        """This node and every node below, depth first, left before right."""
        yield self
        for child in (self.left, self.right):
            if child is not None:
                yield from child.walk()


@dataclass(frozen=True)
class DroppedFactor:
    factor: str
    reason: str


@dataclass(frozen=True)
class DecisionTree:
    root: TreeNode
    columns: tuple[str, ...]
    """the encoded features the tree could split on (``object_count``, ``server=h2o``...)"""
    dropped: tuple[DroppedFactor, ...]
    """factors left out, with why (constant, or unknown for some samples)"""
    n_samples: int
    max_depth: int | None
    min_samples_leaf: int
    seed: int

    def leaves(self) -> list[TreeNode]:
        return [n for n in self.root.walk() if n.is_leaf]

    def split_factors(self) -> set[str]:
        return {n.split.factor for n in self.root.walk() if n.split is not None}

    def leaf_for(self, features: Mapping[str, FeatureValue]) -> TreeNode:
        node = self.root
        while node.split is not None:
            if node.split.factor not in features:
                raise KeyError(f"the tree splits on {node.split.factor!r}, which is missing")
            nxt = node.left if node.split.goes_left(features[node.split.factor]) else node.right
            assert nxt is not None
            node = nxt
        return node

    def predict(self, features: Mapping[str, FeatureValue]) -> LeafLabel:
        """The label of the leaf that ``features`` reach (h2, h1, tie or mixed)."""
        return self.leaf_for(features).label

    def render_text(self) -> str:
        """The tree as indented text, one line per node, e.g.::

        all: 84 samples (h2 18, tie 66) -> tie
        ├── object_count ≤ 48: 48 samples (tie 48) -> tie
        └── object_count > 48: 36 samples (h2 18, tie 18) -> mixed
            ├── loss_fraction ≤ 0.0075: 18 samples (h2 18) -> h2
            └── loss_fraction > 0.0075: 18 samples (tie 18) -> tie
        """
        lines = [f"all: {_node_text(self.root)}"]
        _render_children(self.root, "", lines)
        return "\n".join(lines)


def _node_text(node: TreeNode) -> str:
    counts = ", ".join(f"{c} {node.class_counts[c]}" for c in CLASSES if node.class_counts[c])
    noun = "sample" if node.n_samples == 1 else "samples"
    return f"{node.n_samples} {noun} ({counts}) -> {node.label}"


def _render_children(node: TreeNode, prefix: str, lines: list[str]) -> None:
    if node.split is None or node.left is None or node.right is None:
        return
    branches = ((node.split.left_text, node.left), (node.split.right_text, node.right))
    for i, (text, child) in enumerate(branches):
        last = i == 1
        lines.append(f"{prefix}{'└── ' if last else '├── '}{text}: {_node_text(child)}")
        _render_children(child, prefix + ("    " if last else "│   "), lines)


@dataclass(frozen=True)
class _Column:
    factor: str
    category: str | None = None
    unlimited_as: float | None = None
    """stand-in for ``math.inf`` (an unlimited rate): above every finite value of the factor"""
    max_finite: float | None = None

    @property
    def name(self) -> str:
        return self.factor if self.category is None else f"{self.factor}={self.category}"

    def encode(self, value: FeatureValue) -> float:
        if self.category is not None:
            return 1.0 if str(value) == self.category else 0.0
        assert isinstance(value, int | float)
        if math.isinf(value) and self.unlimited_as is not None:
            return self.unlimited_as
        return float(value)

    def split(self, threshold: float) -> TreeSplit:
        if self.category is not None:
            # one-hot: 0 (another category) <= threshold < 1 (this one)
            return TreeSplit(
                self.factor,
                None,
                self.category,
                f"{self.factor} ≠ {self.category}",
                f"{self.factor} = {self.category}",
            )
        if self.max_finite is not None and threshold > self.max_finite:
            return TreeSplit(
                self.factor,
                threshold,
                None,
                f"{self.factor} limited",
                f"{self.factor} unlimited",
                unlimited_right=True,
            )
        return TreeSplit(
            self.factor,
            threshold,
            None,
            f"{self.factor} ≤ {threshold:g}",
            f"{self.factor} > {threshold:g}",
        )


def _columns(samples: Sequence[TreeSample]) -> tuple[list[_Column], list[DroppedFactor]]:
    columns: list[_Column] = []
    dropped: list[DroppedFactor] = []
    for factor in sorted({f for s in samples for f in s.features}):
        values = [s.features.get(factor) for s in samples]
        if any(v is None for v in values):
            dropped.append(DroppedFactor(factor, "unknown for some samples"))
            continue
        if len(set(values)) < 2:
            dropped.append(DroppedFactor(factor, "the same for every sample"))
            continue
        if all(isinstance(v, int | float) for v in values):
            finite = [float(v) for v in values if isinstance(v, int | float) and math.isfinite(v)]
            if len(finite) < len(values):
                top = max(finite)  # >= 1 finite value: two distinct values, at most one is inf
                columns.append(_Column(factor, None, top + max(1.0, abs(top)), top))
            else:
                columns.append(_Column(factor))
        else:
            columns.extend(_Column(factor, c) for c in sorted({str(v) for v in values}))
    return columns, dropped


def fit_tree(
    samples: Sequence[TreeSample],
    *,
    max_depth: int | None = None,
    min_samples_leaf: int = 1,
    seed: int = 0,
) -> DecisionTree:
    """Fit an entropy decision tree to labelled samples.

    Numeric factors stay numbers (an unlimited rate, ``math.inf``, is encoded above every finite
    rate); string factors are one-hot; factors unknown (None) for some sample or constant are
    left out and listed in :attr:`DecisionTree.dropped`. ``seed`` is scikit-learn's
    ``random_state``: it breaks ties between equally good splits, so a seed gives one tree.
    """
    if not samples:
        raise ValueError("a tree needs at least one sample")
    # scikit-learn has no type information; its use is confined to this function.
    from sklearn.tree import DecisionTreeClassifier  # type: ignore[import-untyped]

    columns, dropped = _columns(samples)
    x = np.array(
        [[col.encode(s.features[col.factor]) for col in columns] for s in samples],
        dtype=np.float64,
    ).reshape(len(samples), len(columns))
    y = np.array([CLASSES.index(s.label) for s in samples])
    if not columns:
        x = np.zeros((len(samples), 1))  # scikit-learn needs a feature; this one never splits
    clf = DecisionTreeClassifier(
        criterion="entropy",
        max_depth=max_depth,
        min_samples_leaf=min_samples_leaf,
        random_state=seed,
    ).fit(x, y)
    # Count classes per node from the training samples' paths: scikit-learn stores only
    # weighted fractions in tree_.value.
    on_path = np.asarray(clf.decision_path(x).toarray(), dtype=np.int64)  # samples x nodes
    counts = on_path.T @ np.eye(len(CLASSES), dtype=np.int64)[y]  # nodes x classes
    t = clf.tree_
    left: list[int] = [int(i) for i in t.children_left]
    right: list[int] = [int(i) for i in t.children_right]
    feature: list[int] = [int(i) for i in t.feature]
    threshold: list[float] = [float(v) for v in t.threshold]

    def build(i: int, depth: int) -> TreeNode:
        class_counts: dict[str, int] = {c: int(counts[i, k]) for k, c in enumerate(CLASSES)}
        node = TreeNode(
            i, depth, sum(class_counts.values()), class_counts, leaf_label(class_counts)
        )
        if left[i] < 0:
            return node
        split = columns[feature[i]].split(threshold[i])
        return TreeNode(
            node.node_id,
            depth,
            node.n_samples,
            class_counts,
            node.label,
            split,
            build(left[i], depth + 1),
            build(right[i], depth + 1),
        )

    return DecisionTree(
        root=build(0, 0),
        columns=tuple(c.name for c in columns),
        dropped=tuple(dropped),
        n_samples=len(samples),
        max_depth=max_depth,
        min_samples_leaf=min_samples_leaf,
        seed=seed,
    )
