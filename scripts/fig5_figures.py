"""Seed 000 Fig. 5's figures from a results folder's trials.csv (prints tables; REPRODUCTION.md
row 3).

    .venv/bin/python scripts/fig5_figures.py reproduction/000-fig5-prioritization

Per metric (plt_ms, speed_index_ms): each page's median over its repetitions for h1s and for
h2s under each origin scheduler (client = Chromium's priorities, rr, fcfs), the paper's CDF
points; then paired ratios pooled over the pages, each pair from one block (same page and
repetition, run back to back with one loss seed): h2s rr / h2s client, h2s fcfs / h2s client,
and h2s / h1s under the same scheduler, as median with its 95% bootstrap CI (the report's
estimator) and how many pairs the numerator won.
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
SCHEDULERS = ("client", "rr", "fcfs")
Arm = tuple[str, str]  # protocol, scheduler


def main(folder: Path) -> None:
    # values[metric][page][arm][repetition]
    values: dict[str, dict[str, dict[Arm, dict[int, float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(dict))
    )
    with (folder / "trials.csv").open() as f:
        for row in csv.DictReader(f):
            if row["status"] != "ok" or row["warmup"] == "1":
                continue
            page = Path(row["page"].split(":", 1)[1]).name.split(".")[0]
            arm = (row["protocol"], row["server"].rsplit("=", 1)[-1])
            for metric in METRICS:
                if row[metric]:
                    values[metric][page][arm][int(row["repetition"])] = float(row[metric])
    for metric in METRICS:
        by_page = values[metric]
        arms = [("h1s", s) for s in SCHEDULERS] + [("h2s", s) for s in SCHEDULERS]
        print(f"== {metric}: median over repetitions per page (n)")
        print("page | " + " | ".join(f"{p} {s}" for p, s in arms))
        for page in sorted(by_page):
            cells = [by_page[page].get(a, {}) for a in arms]
            print(
                f"{page} | "
                + " | ".join(
                    f"{statistics.median(c.values()):,.0f} ({len(c)})" if c else "-" for c in cells
                )
            )
        print(f"paired {metric} | n | median [95% CI] | numerator faster")
        for num, den in (
            (("h2s", "rr"), ("h2s", "client")),
            (("h2s", "fcfs"), ("h2s", "client")),
            *((("h2s", s), ("h1s", s)) for s in SCHEDULERS),
        ):
            ratios = [
                arms_[num][rep] / arms_[den][rep]
                for arms_ in by_page.values()
                for rep in arms_.get(num, {})
                if rep in arms_.get(den, {})
            ]
            label = f"{num[0]} {num[1]} / {den[0]} {den[1]}"
            if not ratios:
                print(f"  {label} | 0")
                continue
            ci = bootstrap_median_ci(ratios, np.random.default_rng(0))
            faster = sum(r < 1 for r in ratios)
            print(
                f"  {label} | {len(ratios)} | {statistics.median(ratios):.3f} "
                f"[{ci.low:.3f}, {ci.high:.3f}] | {faster}"
            )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
