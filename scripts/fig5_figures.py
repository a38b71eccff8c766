"""Seed 000 Fig. 5's figures from a results folder's trials.csv (prints tables; REPRODUCTION.md
row 3).

    .venv/bin/python scripts/fig5_figures.py reproduction/000-fig5-prioritization

Per metric (plt_ms, speed_index_ms): each page's median over its repetitions for h1s and for
h2s under each origin scheduler (client = Chromium's priorities, rr, fcfs), the paper's CDF
points; then paired ratios pooled over the pages, each pair from one block (same page and
repetition, run back to back with one loss seed): h2s rr / h2s client, h2s fcfs / h2s client,
and h2s / h1s under the same scheduler, each as scripts/figures.py prints
a paired ratio (median [95% CI], range, wins).
"""

from __future__ import annotations

import sys
from pathlib import Path

from figures import RATIO_HEADER, median_cell, paired, ratio_line, values_by_page

METRICS = ("plt_ms", "speed_index_ms")
SCHEDULERS = ("client", "rr", "fcfs")


def main(folder: Path) -> None:
    values = values_by_page(
        folder,
        METRICS,
        lambda row: Path(row["page"].split(":", 1)[1]).name.split(".")[0],
        lambda row: (row["protocol"], row["server"].rsplit("=", 1)[-1]),
    )
    arms = [("h1s", s) for s in SCHEDULERS] + [("h2s", s) for s in SCHEDULERS]
    for metric in METRICS:
        by_page = values[metric]
        print(f"== {metric}: median over repetitions per page (n)")
        print("page | " + " | ".join(f"{p} {s}" for p, s in arms))
        for page in sorted(by_page):
            print(f"{page} | " + " | ".join(median_cell(by_page[page][a]) for a in arms))
        print(f"paired {metric} | {RATIO_HEADER}")
        for num, den in (
            (("h2s", "rr"), ("h2s", "client")),
            (("h2s", "fcfs"), ("h2s", "client")),
            *((("h2s", s), ("h1s", s)) for s in SCHEDULERS),
        ):
            ratios = [r for v in by_page.values() for r in paired(v[num], v[den])]
            print(ratio_line(f"{num[0]} {num[1]} / {den[0]} {den[1]}", ratios))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
