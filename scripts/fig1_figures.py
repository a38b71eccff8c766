"""Seed 000 Fig. 1's figures from a results folder's trials.csv (prints tables; REPRODUCTION.md
row 1).

    .venv/bin/python scripts/fig1_figures.py reproduction/000-fig1-images-hol

Per metric (plt_ms, speed_index_ms) and image set (fig1a: 380 small, fig1b: 42 medium, fig1c:
30 large): the median over repetitions of every variant (files / sprite = concatenated /
sharded over 4 origins) x protocol (h1c, h1s, h2s) x network (Akamai cellular noloss, good,
poor), with n. Then the paper's comparisons as ratios, each pair from one block (same page and
network and repetition, run back to back with one loss seed) where the two share a page, and
by repetition number where they do not (sprite or sharded vs files are two pages): h2s / h1s
and h2s / h1c on the separate files, files / sprite per protocol (the paper: concatenated "two
to five times faster"), sharded / files for h2s, and h2s good / noloss on the large images
(the paper: "almost 80% slower"); as median with its 95% bootstrap CI when n >= 3.
"""

from __future__ import annotations

import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from h2lab.analysis.stats import bootstrap_median_ci

METRICS = ("plt_ms", "speed_index_ms")
SETS = {"fig1a": "380 small", "fig1b": "42 medium", "fig1c": "30 large"}
VARIANTS = ("files", "sprite", "sharded")
PROTOCOLS = ("h1c", "h1s", "h2s")
NETWORKS = ("cell-noloss", "cell-good", "cell-poor")
Cell = tuple[str, str, str, str]  # set, variant, network, protocol


def _spec(page: str) -> dict[str, str]:
    return dict(kv.split("=", 1) for kv in page.split(":", 2)[2].split(","))


def _ratio_line(label: str, ratios: list[float]) -> str:
    if not ratios:
        return f"  {label} | 0"
    med = statistics.median(ratios)
    ci = ""
    if len(ratios) >= 3:
        b = bootstrap_median_ci(ratios, np.random.default_rng(0))
        ci = f" [{b.low:.3f}, {b.high:.3f}]"
    return (
        f"  {label} | {len(ratios)} | {med:.3f}{ci} | numerator faster {sum(r < 1 for r in ratios)}"
    )


def main(folder: Path) -> None:
    # values[metric][cell][repetition]
    values: dict[str, dict[Cell, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    with (folder / "trials.csv").open() as f:
        for row in csv.DictReader(f):
            if row["status"] != "ok" or row["warmup"] == "1":
                continue
            spec = _spec(row["page"])
            cell = (spec["preset"], spec["variant"], row["network"], row["protocol"])
            for metric in METRICS:
                if row[metric]:
                    values[metric][cell][int(row["repetition"])] = float(row[metric])
    for metric in METRICS:
        v = values[metric]
        for s, label in SETS.items():
            print(f"== {metric} {s} ({label}): median over repetitions (n)")
            print("variant network | " + " | ".join(PROTOCOLS))
            for variant in VARIANTS:
                for net in NETWORKS:
                    cells = [v.get((s, variant, net, p), {}) for p in PROTOCOLS]
                    shown = [
                        f"{statistics.median(c.values()):,.0f} ({len(c)})" if c else "-"
                        for c in cells
                    ]
                    print(f"{variant} {net} | " + " | ".join(shown))

        def ratios(num: Cell, den: Cell, v: dict[Cell, dict[int, float]] = v) -> list[float]:
            a, b = v.get(num, {}), v.get(den, {})
            return [a[r] / b[r] for r in a if r in b]

        print(f"== {metric}: ratios | n | median [95% CI] | numerator faster")
        for s in SETS:
            for net in NETWORKS:
                f2, f1s, f1c = ((s, "files", net, p) for p in ("h2s", "h1s", "h1c"))
                print(_ratio_line(f"{s} {net} files h2s / h1s", ratios(f2, f1s)))
                print(_ratio_line(f"{s} {net} files h2s / h1c", ratios(f2, f1c)))
                for p in PROTOCOLS:
                    print(
                        _ratio_line(
                            f"{s} {net} {p} files / sprite",
                            ratios((s, "files", net, p), (s, "sprite", net, p)),
                        )
                    )
                print(
                    _ratio_line(
                        f"{s} {net} h2s sharded / files",
                        ratios((s, "sharded", net, "h2s"), (s, "files", net, "h2s")),
                    )
                )
                print(
                    _ratio_line(
                        f"{s} {net} sharded h2s / h1s",
                        ratios((s, "sharded", net, "h2s"), (s, "sharded", net, "h1s")),
                    )
                )
        for p in PROTOCOLS:
            print(
                _ratio_line(
                    f"fig1c files {p} cell-good / cell-noloss",
                    ratios(
                        ("fig1c", "files", "cell-good", p), ("fig1c", "files", "cell-noloss", p)
                    ),
                )
            )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
