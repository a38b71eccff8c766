"""Seed 000 Fig. 2-3 in Chromium and Firefox (its arm ``firefox:network=0``), from a results
folder's trials.csv (prints tables; REPRODUCTION.md row 2, the paper's "Firefox ... its h2
values are much lower").

    .venv/bin/python scripts/fig2_browsers.py reproduction/000-fig2-3-cssjs

Per metric (plt_ms, speed_index_ms) and page (kind css|js, files) that Firefox loaded: the
median over repetitions of h1c, h1s and h2s in each browser; then, per browser, the paired
h2s / h1s and h2s / h1c ratios (each pair from one block: same page and repetition, back to
back), and Firefox / Chromium for h2s, pooled over the pages (pairs of one repetition number:
the two browsers ran on different days, so these pairs share no block).
"""

from __future__ import annotations

import sys
from pathlib import Path

from figures import RATIO_HEADER, median_cell, paired, ratio_line, values_by_page

METRICS = ("plt_ms", "speed_index_ms")
BROWSERS = ("chromium", "firefox:network=0")
PROTOCOLS = ("h1c", "h1s", "h2s")


def main(folder: Path) -> None:
    values = values_by_page(
        folder,
        METRICS,
        lambda row: row["page"].split(":", 2)[-1],  # kind=css,files=10
        lambda row: (row["client"], row["protocol"]),
    )
    for metric in METRICS:
        pages = {p: v for p, v in values[metric].items() if ("firefox:network=0", "h2s") in v}
        order = sorted(pages, key=lambda p: (p.split(",")[0], int(p.rsplit("=", 1)[1])))
        arms = [(b, p) for b in BROWSERS for p in PROTOCOLS]
        print(f"== {metric}: median over repetitions (n)")
        print("page | " + " | ".join(f"{b} {p}" for b, p in arms))
        for page in order:
            print(f"{page} | " + " | ".join(median_cell(pages[page][a]) for a in arms))
        print(f"paired {metric} | {RATIO_HEADER}")
        for page in order:
            v = pages[page]
            for browser in BROWSERS:
                for den in ("h1s", "h1c"):
                    ratios = paired(v[(browser, "h2s")], v[(browser, den)])
                    print(ratio_line(f"{page} {browser} h2s / {den}", ratios))
            ratios = paired(v[("firefox:network=0", "h2s")], v[("chromium", "h2s")])
            print(ratio_line(f"{page} h2s firefox / chromium", ratios))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
