"""Seed 002's figures from a results folder's trials.csv (prints tables; REPRODUCTION.md row 7).

    .venv/bin/python scripts/seed002_figures.py reproduction/002-average-web-page
    .venv/bin/python scripts/seed002_figures.py reproduction/002-server-initcwnd

Per server and initial window: Fig. 2 (mean PDT over the losses, per one-way delay), Fig. 3
(PDT ratio at 1% loss, per delay), Fig. 5 (mean PDT over the delays, per loss), each cell's
mean after the paper's 2 sd rule and over the cells both protocols have; then the paired ratio
h2c / h1p (same network and repetition) pooled, per delay and per loss: median with its 95%
bootstrap CI (the report's estimator), range and how many pairs h2c won.
"""

from __future__ import annotations

import re
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from figures import RATIO_HEADER, measured_rows, ratio_line

from h2lab.analysis.stats import split_outliers

NETWORK = re.compile(r"s002-(\d+)ms-([\d.]+)pct")
Arm = tuple[str, int]  # server, initcwnd
Key = tuple[int, float]  # one-way delay ms, loss %


def main(folder: Path) -> None:
    pdts: dict[Arm, dict[Key, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    pairs: dict[Arm, dict[tuple[Key, int], dict[str, float]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for row in measured_rows(folder):
        m = NETWORK.fullmatch(row["network"])
        if m is None:
            continue
        arm = (row["server"], int(row["initcwnd_packets"]))
        key = (int(m.group(1)), float(m.group(2)))
        pdt_s = float(row["pdt_ms"]) / 1000
        pdts[arm][key][row["protocol"]].append(pdt_s)
        pairs[arm][(key, int(row["repetition"]))][row["protocol"]] = pdt_s
    for arm in sorted(pdts):
        print(f"== server {arm[0]}, initcwnd {arm[1]} packets")
        cells = {
            k: {p: statistics.fmean(split_outliers(v).kept) for p, v in by.items()}
            for k, by in pdts[arm].items()
            if {"h1p", "h2c"} <= by.keys()
        }
        _marginal("Fig. 2: one-way delay", cells, lambda k: k[0], "ms")
        print("Fig. 3: one-way delay ms at 1% loss | h1p/h2c")
        for (delay, loss), c in sorted(cells.items()):
            if loss == 1.0:
                print(f"  {delay:>5} | {c['h1p'] / c['h2c']:.3f}")
        _marginal("Fig. 5: loss", cells, lambda k: k[1], "%")
        ratios = {
            k: by["h2c"] / by["h1p"] for k, by in pairs[arm].items() if {"h1p", "h2c"} <= by.keys()
        }
        print(f"paired h2c/h1p | {RATIO_HEADER}")
        print(ratio_line("all", list(ratios.values())))
        for label, part in (("delay", 0), ("loss", 1)):
            for level in sorted({k[0][part] for k in ratios}):
                chosen = [r for k, r in ratios.items() if k[0][part] == level]
                print(ratio_line(f"{label} {level:g}", chosen))


def _marginal(
    title: str, cells: dict[Key, dict[str, float]], level: Callable[[Key], float], unit: str
) -> None:
    print(f"{title} {unit} | mean PDT s h1p | h2c | h2c/h1p | cells")
    for lv in sorted({level(k) for k in cells}):
        chosen = [c for k, c in cells.items() if level(k) == lv]
        h1 = statistics.fmean(c["h1p"] for c in chosen)
        h2 = statistics.fmean(c["h2c"] for c in chosen)
        print(f"  {lv:>6g} | {h1:7.2f} | {h2:7.2f} | {h2 / h1:.3f} | {len(chosen)}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
