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
(the paper: "almost 80% slower"); each as scripts/figures.py prints a paired ratio.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

from figures import RATIO_HEADER, measured_rows, median_cell, paired, ratio_line

METRICS = ("plt_ms", "speed_index_ms")
SETS = {"fig1a": "380 small", "fig1b": "42 medium", "fig1c": "30 large"}
VARIANTS = ("files", "sprite", "sharded")
PROTOCOLS = ("h1c", "h1s", "h2s")
NETWORKS = ("cell-noloss", "cell-good", "cell-poor")
Cell = tuple[str, str, str, str]  # set, variant, network, protocol


def _spec(page: str) -> dict[str, str]:
    return dict(kv.split("=", 1) for kv in page.split(":", 2)[2].split(","))


def main(folder: Path) -> None:
    # values[metric][cell][repetition]
    values: dict[str, dict[Cell, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for row in measured_rows(folder):
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
                    shown = (median_cell(v.get((s, variant, net, p), {})) for p in PROTOCOLS)
                    print(f"{variant} {net} | " + " | ".join(shown))

        def ratios(num: Cell, den: Cell, v: dict[Cell, dict[int, float]] = v) -> list[float]:
            return paired(v.get(num, {}), v.get(den, {}))

        print(f"== {metric}: ratios | {RATIO_HEADER}")
        for s in SETS:
            for net in NETWORKS:
                f2, f1s, f1c = ((s, "files", net, p) for p in ("h2s", "h1s", "h1c"))
                print(ratio_line(f"{s} {net} files h2s / h1s", ratios(f2, f1s)))
                print(ratio_line(f"{s} {net} files h2s / h1c", ratios(f2, f1c)))
                for p in PROTOCOLS:
                    print(
                        ratio_line(
                            f"{s} {net} {p} files / sprite",
                            ratios((s, "files", net, p), (s, "sprite", net, p)),
                        )
                    )
                print(
                    ratio_line(
                        f"{s} {net} h2s sharded / files",
                        ratios((s, "sharded", net, "h2s"), (s, "files", net, "h2s")),
                    )
                )
                print(
                    ratio_line(
                        f"{s} {net} sharded h2s / h1s",
                        ratios((s, "sharded", net, "h2s"), (s, "sharded", net, "h1s")),
                    )
                )
        for p in PROTOCOLS:
            print(
                ratio_line(
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
