"""Where h3 beats h2s (experiments/h3-where.toml; REPRODUCTION.md, "Beyond the seeds"), from a
results folder's trials.csv (prints tables).

    .venv/bin/python scripts/h3_where_figures.py reproduction/h3-where [metric]

Every ratio pairs the h3 and h2s trials of one block (same page, network, server, client, view
and repetition: one loss and jitter seed, run back to back): s = metric(h3) / metric(h2s), plt_ms
unless another metric is named. Printed: s pooled over everything else per level of each factor
(RTT, rate, loss and jitter from the network spec; view, client, server, page), then per
(RTT, rate, loss) cell of the map; then arm 5's medians (h2s with an initial window of 10 and
32 packets beside h3, plt and TTFB); then arm 6, s per discovery (forced, alt-svc, https-rr)
where all three ran; last the failed attempts per protocol with their errors. Every table but
arm 6's is of forced h3 (``discovery`` forced: the lab's upper bound), as before arm 6.
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from figures import RATIO_HEADER, Row, measured_rows, print_failures, protocol_pairs, ratio_line

from h2lab.analysis.factors import network_features


def _page(row: Row) -> str:
    spec = row["page"]
    return Path(spec.split(":", 1)[1]).name.split(".")[0] if spec.startswith("warc:") else spec


def _net(row: Row, field: str) -> str:
    f = network_features(row["network"])
    value = getattr(f, field)
    if value is None:
        return "?"
    if field == "down_rate_bps":
        return f"{value / 1e6:g} Mbit/s"
    if field == "loss_fraction":
        return f"{value * 100:g}%"
    return f"{value:g} ms"


FACTORS: dict[str, Callable[[Row], str]] = {
    "rtt": lambda r: _net(r, "rtt_ms"),
    "rate": lambda r: _net(r, "down_rate_bps"),
    "loss": lambda r: _net(r, "loss_fraction"),
    "jitter": lambda r: _net(r, "jitter_ms"),
    "view": lambda r: r["view"] or "first",
    "client": lambda r: r["client"],
    "server": lambda r: r["server"],
    "page": _page,
}


def _pairs(folder: Path, metric: str) -> list[tuple[Row, float]]:
    """(the h3 row, s) per block with both protocols measured."""
    return [(h3, s) for _, h3, s in protocol_pairs(folder, metric)]


IW_NETWORKS = ("rtt=100ms,rate=10Mbps", "rtt=300ms,rate=10Mbps")
IW_PAGE = "synthetic:n=32,size=10KB,origins=1"


def _initial_windows(folder: Path) -> None:
    """Medians of plt and TTFB where arm 5 runs: h2s IW10, h2s IW32, h3 (first views)."""
    got: dict[tuple[str, str, str, str], list[tuple[float, float]]] = defaultdict(list)
    for row in measured_rows(folder):
        wanted = row["network"] in IW_NETWORKS and row["page"] == IW_PAGE
        wanted = wanted and row["view"] != "repeat" and row["server"] in ("origin", "nginx@1.26")
        if wanted and row["plt_ms"] and row["ttfb_ms"]:
            arm = "h3" if row["protocol"] == "h3" else f"h2s iw{row['initcwnd_packets']}"
            cell = (row["network"], row["server"], row["client"], arm)
            got[cell].append((float(row["plt_ms"]), float(row["ttfb_ms"])))
    print("\ninitial window (arm 5), network | server | client | arm | n | plt ms | ttfb ms:")
    for cell, values in sorted(got.items()):
        plt = statistics.median(v[0] for v in values)
        ttfb = statistics.median(v[1] for v in values)
        print(f"  {' | '.join(cell)} | {len(values)} | {plt:,.0f} | {ttfb:,.0f}")


def _discovery(row: Row) -> str:
    return row.get("discovery") or "forced"


DISCOVERIES = ("forced", "alt-svc", "https-rr")


def _discoveries(all_pairs: list[tuple[Row, float]], folder: Path) -> None:
    """Arm 6: s per discovery in the cells where arm 6 ran (the corpus pages from the origin,
    first views, the map's loss-free networks), by client and by RTT; and the medians of TTFB
    per discovery and protocol there."""
    arm6 = {
        (r["page"], r["network"], r["client"]) for r, _ in all_pairs if _discovery(r) != "forced"
    }
    where = [
        (r, s) for r, s in all_pairs
        if (r["page"], r["network"], r["client"]) in arm6 and r["server"] == "origin"
        and FACTORS["view"](r) == "first"
    ]  # fmt: skip
    print("\nhow h3 is found (arm 6: corpus pages, origin, loss-free map), discovery | by:")
    cells: dict[tuple[str, ...], list[float]] = defaultdict(list)
    for row, s in where:
        d = _discovery(row)
        cells[(d,)].append(s)
        cells[(d, row["client"])].append(s)
        cells[(d, FACTORS["rtt"](row))].append(s)
        cells[(d, FACTORS["rtt"](row), row["client"])].append(s)
    order = {d: i for i, d in enumerate(DISCOVERIES)}
    for cell in sorted(cells, key=lambda c: (order.get(c[0], 9), len(c), c)):
        print(ratio_line(" | ".join(cell), cells[cell]))
    ttfb: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for row in measured_rows(folder):
        there = (row["page"], row["network"], row["client"]) in arm6 and row["server"] == "origin"
        if there and FACTORS["view"](row) == "first" and row["ttfb_ms"]:
            key = (_discovery(row), FACTORS["rtt"](row), row["protocol"])
            ttfb[key].append(float(row["ttfb_ms"]))
    print("\nTTFB medians there, discovery | rtt | protocol | n | ms:")
    for key in sorted(ttfb, key=lambda k: (order.get(k[0], 9), len(k[1]), k[1], k[2])):
        print(f"  {' | '.join(key)} | {len(ttfb[key])} | {statistics.median(ttfb[key]):,.0f}")


def main(folder: Path, metric: str) -> None:
    every = _pairs(folder, metric)
    pairs = [(r, s) for r, s in every if _discovery(r) == "forced"]
    print(f"s = {metric}(h3) / {metric}(h2s), per block; {RATIO_HEADER} (h3 faster)")
    print(ratio_line("all", [s for _, s in pairs]))
    for name, level_of in FACTORS.items():
        by: dict[str, list[float]] = defaultdict(list)
        for row, s in pairs:
            by[level_of(row)].append(s)
        print(f"\n{name}:")
        for level in sorted(by, key=lambda x: (len(x), x)):
            print(ratio_line(level, by[level]))
    print("\nthe map (first view, no jitter), rtt | rate | loss:")
    cells: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for row, s in pairs:
        if FACTORS["view"](row) == "first" and FACTORS["jitter"](row) == "0 ms":
            cells[(FACTORS["rtt"](row), FACTORS["rate"](row), FACTORS["loss"](row))].append(s)
    for cell in sorted(cells, key=lambda c: tuple((len(x), x) for x in c)):
        print(ratio_line(" | ".join(cell), cells[cell]))
    _by_page(pairs)
    _initial_windows(folder)
    _discoveries(every, folder)
    print_failures(folder)


def _by_page(pairs: list[tuple[Row, float]]) -> None:
    """s per page and RTT (first views, arms 1 and 2), and per page and view (arm 3)."""
    print("\nper page, first view: page | rtt (| client):")
    cells: dict[tuple[str, ...], list[float]] = defaultdict(list)
    for row, s in pairs:
        if FACTORS["view"](row) == "first":
            cells[(_page(row), FACTORS["rtt"](row))].append(s)
            cells[(_page(row), FACTORS["rtt"](row), row["client"])].append(s)
        else:
            cells[(_page(row), "repeat view", row["server"])].append(s)
    for cell in sorted(cells, key=lambda c: tuple((len(x), x) for x in c)):
        print(ratio_line(" | ".join(cell), cells[cell]))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "plt_ms")
