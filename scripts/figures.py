"""What the REPRODUCTION.md figure scripts share: reading a results folder's trials.csv and
printing a paired ratio the way the report estimates it.

A paired ratio pairs two arms' values of one repetition (in one block: same page, network and
loss seed, run back to back); it is printed as ``label | n | median [95% CI] | range | wins``:
the median with its 95% percentile bootstrap CI (seeded, so a rerun prints the same figures;
shown from 3 pairs on), the range (a CDF's extremes) and how many pairs the numerator won.
"""

from __future__ import annotations

import csv
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

from h2lab.analysis.stats import bootstrap_median_ci


def measured_rows(folder: Path, *, ok_only: bool = True) -> Iterator[dict[str, str]]:
    """trials.csv's rows without warm-ups (and without failed attempts, with ``ok_only``)."""
    with (folder / "trials.csv").open() as f:
        for row in csv.DictReader(f):
            if row["warmup"] != "1" and (row["status"] == "ok" or not ok_only):
                yield row


Row = Mapping[str, str]


def protocol_pairs(
    folder: Path, metric: str, num: str = "h3", den: str = "h2s"
) -> list[tuple[Row, Row, float]]:
    """(the ``den`` row, the ``num`` row, s = metric(num) / metric(den)) per block in which both
    protocols measured the metric."""
    blocks: dict[str, dict[str, Row]] = defaultdict(dict)
    for row in measured_rows(folder):
        if row[metric]:
            blocks[row["block"]][row["protocol"]] = row
    return [
        (b[den], b[num], float(b[num][metric]) / float(b[den][metric]))
        for b in blocks.values()
        if num in b and den in b and float(b[den][metric]) > 0
    ]


BROWSER_ERROR = re.compile(r"net::ERR_[A-Z0-9_.]+|NS_ERROR_[A-Z_]+")


def print_failures(folder: Path) -> None:
    """The failed attempts, counted by protocol and error: a browser's error code where the
    error names one (its last), else the error's first 80 characters."""
    failed: Counter[tuple[str, str]] = Counter()
    for row in measured_rows(folder, ok_only=False):
        if row["status"] != "ok":
            found = BROWSER_ERROR.findall(row["error"])
            failed[(row["protocol"], found[-1] if found else row["error"][:80])] += 1
    print("\nfailed attempts (protocol | error | count):")
    for (protocol, error), n in sorted(failed.items()):
        print(f"  {protocol} | {error} | {n}")
    if not failed:
        print("  none")


Arm = tuple[str, str]
ByPage = dict[str, dict[Arm, dict[int, float]]]
"""page -> arm -> repetition -> value, of one metric"""


def values_by_page(
    folder: Path,
    metrics: Sequence[str],
    page_of: Callable[[Mapping[str, str]], str],
    arm_of: Callable[[Mapping[str, str]], Arm],
) -> dict[str, ByPage]:
    """Each metric's measured values by page, arm and repetition (``page_of`` and ``arm_of``
    name a trials.csv row's page and arm)."""
    values: dict[str, ByPage] = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))
    for row in measured_rows(folder):
        for metric in metrics:
            if row[metric]:
                values[metric][page_of(row)][arm_of(row)][int(row["repetition"])] = float(
                    row[metric]
                )
    return values


def paired(num: Mapping[int, float], den: Mapping[int, float]) -> list[float]:
    """num / den for each repetition both arms measured."""
    return [num[rep] / den[rep] for rep in num if rep in den]


def ratio_line(label: str, ratios: list[float]) -> str:
    if not ratios:
        return f"  {label} | 0"
    ci = ""
    if len(ratios) >= 3:
        b = bootstrap_median_ci(ratios, np.random.default_rng(0))
        ci = f" [{b.low:.3f}, {b.high:.3f}]"
    return (
        f"  {label} | {len(ratios)} | {statistics.median(ratios):.3f}{ci} | "
        f"{min(ratios):.2f}-{max(ratios):.2f} | {sum(r < 1 for r in ratios)}"
    )


RATIO_HEADER = "n | median [95% CI] | range | numerator faster"


def median_cell(by_repetition: Mapping[int, float]) -> str:
    """One table cell: the median over repetitions and their count, "-" when none."""
    if not by_repetition:
        return "-"
    return f"{statistics.median(by_repetition.values()):,.0f} ({len(by_repetition)})"
