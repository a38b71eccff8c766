"""Real-page figures (seeds 000 Fig. 7-8, 001 Fig. 4) from a results folder's trials.csv
(prints tables; REPRODUCTION.md row 10).

    .venv/bin/python scripts/corpus_figures.py reproduction/corpus-real-pages

Per network, server and metric (plt_ms, speed_index_ms): each page's median over its
repetitions per protocol (the CDF points of the papers), then the paired ratios pooled over the
pages, each pair from one block (same page, network, server and repetition: one loss seed),
h2s / h1s, h3 / h1s and h3 / h2s, as median with its 95% bootstrap CI (the report's estimator),
the range (the CDF's extremes) and how many pairs the numerator won. Last, the failed attempts
per protocol with their Chromium errors, and the trials that failed every attempt.
"""

from __future__ import annotations

import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

from figures import RATIO_HEADER, measured_rows, median_cell, paired, ratio_line

METRICS = ("plt_ms", "speed_index_ms")
PROTOCOLS = ("h1s", "h2s", "h3")
PAIRS = (("h2s", "h1s"), ("h3", "h1s"), ("h3", "h2s"))
Cell = tuple[str, str]  # network, server


def page_name(spec: str) -> str:
    return Path(spec.split(":", 1)[1]).name.split(".")[0]


def error_kind(error: str) -> str:
    """Chromium's net::ERR_... name in a failure line, or its first words."""
    found = re.findall(r"net::ERR_[A-Z0-9_.]+", error)
    return found[-1] if found else " ".join(error.split()[:6])


def main(folder: Path) -> None:
    # values[cell][metric][page][protocol][repetition]
    values: dict[Cell, dict[str, dict[str, dict[str, dict[int, float]]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))
    )
    failures: Counter[tuple[str, str, str, str]] = Counter()
    tried: dict[str, set[int]] = defaultdict(set)  # trial key -> attempts
    ok_keys: set[str] = set()
    for row in measured_rows(folder, ok_only=False):
        page, cell = page_name(row["page"]), (row["network"], row["server"])
        key = row["trial_key"]
        tried[key].add(int(row["attempt"]))
        if row["status"] != "ok":
            failures[(*cell, row["protocol"], error_kind(row["error"]))] += 1
            continue
        ok_keys.add(key)
        for metric in METRICS:
            if row[metric]:
                values[cell][metric][page][row["protocol"]][int(row["repetition"])] = float(
                    row[metric]
                )
    for cell in sorted(values):
        for metric in METRICS:
            by_page = values[cell][metric]
            protocols = [p for p in PROTOCOLS if any(p in v for v in by_page.values())]
            print(f"== {cell[0]}, {cell[1]}, {metric}: median over repetitions per page (n)")
            print("page | " + " | ".join(protocols))
            for page in sorted(by_page):
                print(f"{page} | " + " | ".join(median_cell(by_page[page][p]) for p in protocols))
            print(f"paired {metric} | {RATIO_HEADER}")
            for num, den in PAIRS:
                if num in protocols and den in protocols:
                    ratios = [r for v in by_page.values() for r in paired(v[num], v[den])]
                    print(ratio_line(f"{num} / {den}", ratios))
    print("== failed attempts: network | server | protocol | error | count")
    for (network, server, protocol, kind), n in sorted(failures.items()):
        print(f"{network} | {server} | {protocol} | {kind} | {n}")
    lost = sorted(k for k, attempts in tried.items() if k not in ok_keys)
    print(f"== trials with no ok attempt: {len(lost)}")
    for key in lost:
        print(f"  {key} (attempts {sorted(tried[key])})")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
