"""Seed 001 Table I's claims from a results folder's trials.csv (prints tables; REPRODUCTION.md
row 6a), usable before every cell has the two blocks the report's verdicts and tree need.

    .venv/bin/python scripts/table1_figures.py reproduction/001-table1-factor-grid

s = pdt(h2s) / pdt(h1s) of each block (one page, network and repetition, the two protocols run
back to back with one loss seed). A block "helps" when s <= 0.95 and "hurts" when s >= 1.05,
the paper's thresholds. Printed: the share of blocks that help / hurt and the median s by each
factor's level (loss, RTT, bandwidth, object size, object count), by loss x object size, and
the paper's Fig. 3 slice (200 ms, 10 Mbit/s, no loss: 10 KB x count and size x 64), with n.
Last, the why of the loss effect: for large objects (>= 100 KB), by loss and protocol, the median
TCP connections, retransmitted segments and link use (bytes down x 8 / pdt / link rate; bytes
down counts L2 headers and the handshakes, pdt does not, so a full link reads a little over 100%).
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path

from figures import measured_rows

from h2lab.units import parse_size_bytes

HELPS, HURTS = 0.95, 1.05


def page_spec(page: str) -> dict[str, str]:
    """synthetic:n=64,size=10KB,origins=1 -> {"n": "64", "size": "10KB", "origins": "1"}"""
    return dict(kv.split("=", 1) for kv in page.split(":", 1)[1].split(","))


class Block:
    """One block's factors and its s."""

    def __init__(self, network: str, page: str, s: float) -> None:
        _, rtt, rate, loss = network.split("-")  # s001-20ms-1mbps-0.5pct
        spec = page_spec(page)
        self.rtt, self.rate, self.loss = rtt, rate, loss
        self.count, self.size = int(spec["n"]), spec["size"]
        self.s = s


def ok_rows(folder: Path) -> list[dict[str, str]]:
    """The ok, non-warm-up trials of trials.csv that have a pdt."""
    return [row for row in measured_rows(folder) if row["pdt_ms"]]


def blocks(rows: list[dict[str, str]]) -> list[Block]:
    pdt: dict[tuple[str, str, str], dict[str, float]] = defaultdict(dict)
    for row in rows:
        pdt[(row["network"], row["page"], row["repetition"])][row["protocol"]] = float(
            row["pdt_ms"]
        )
    return [
        Block(net, page, v["h2s"] / v["h1s"])
        for (net, page, _), v in pdt.items()
        if "h2s" in v and "h1s" in v
    ]


def line(label: str, group: list[Block]) -> str:
    ss = [b.s for b in group]
    helps = sum(s <= HELPS for s in ss) / len(ss)
    hurts = sum(s >= HURTS for s in ss) / len(ss)
    return (
        f"  {label:<22} n {len(ss):>4}  helps {helps:6.1%}  hurts {hurts:6.1%}  "
        f"median s {statistics.median(ss):.3f}"
    )


def table(
    title: str, data: list[Block], key: Callable[[Block], object], order: Iterable[object]
) -> None:
    print(title)
    groups: dict[object, list[Block]] = defaultdict(list)
    for b in data:
        groups[key(b)].append(b)
    for level in order:
        if level in groups:
            print(line(str(level), groups[level]))


def _num(text: str) -> float:
    return float(text.rstrip("mspctbk"))


def bits_per_s(row: dict[str, str]) -> float:
    return float(row["bytes_down"]) * 8 / (float(row["pdt_ms"]) / 1000)


def one_connection(all_rows: list[dict[str, str]]) -> None:
    """Connections, retransmits and link use of large-object trials by loss and protocol."""
    groups: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    for row in all_rows:
        if parse_size_bytes(page_spec(row["page"])["size"]) >= 100_000:
            groups[(row["network"].split("-")[3], row["protocol"])].append(row)
    print("large objects (>= 100KB): median connections, retransmits, link use by loss")
    for loss, protocol in sorted(groups, key=lambda k: (_num(k[0]), k[1])):
        rows = groups[(loss, protocol)]
        use = [bits_per_s(r) / (_num(r["network"].split("-")[2]) * 1e6) for r in rows]
        print(
            f"  {loss:<7} {protocol}  n {len(rows):>4}  connections "
            f"{statistics.median(float(r['tcp_connections']) for r in rows):4.1f}  retransmits "
            f"{statistics.median(float(r['retransmits']) for r in rows):6.1f}  link use "
            f"{statistics.median(use):6.1%}"
        )


def main(folder: Path) -> None:
    rows = ok_rows(folder)
    data = blocks(rows)
    print(f"{folder}: {len(data)} blocks with both protocols ok")
    print(line("all", data))
    sizes = sorted({b.size for b in data}, key=parse_size_bytes)
    losses = sorted({b.loss for b in data}, key=_num)
    table("by loss", data, lambda b: b.loss, losses)
    rtts = sorted({b.rtt for b in data}, key=_num)
    rates = sorted({b.rate for b in data}, key=_num)
    table("by RTT", data, lambda b: b.rtt, rtts)
    table("by bandwidth", data, lambda b: b.rate, rates)
    table("by object size", data, lambda b: b.size, sizes)
    table("by object count", data, lambda b: b.count, sorted({b.count for b in data}))
    table(
        "by loss x object size",
        data,
        lambda b: f"{b.loss} {b.size}",
        [f"{loss} {size}" for loss in losses for size in sizes],
    )
    table(
        "by loss x count <= 32 / > 32 (small objects, <= 10KB)",
        [b for b in data if parse_size_bytes(b.size) <= 10_000],
        lambda b: f"{b.loss} {'<=32' if b.count <= 32 else '>32'}",
        [f"{loss} {c}" for loss in losses for c in ("<=32", ">32")],
    )
    fig3 = [b for b in data if (b.rtt, b.rate, b.loss) == ("200ms", "10mbps", "0pct")]
    table(
        "Fig. 3 slice (200 ms, 10 Mbit/s, 0%): 10KB x count",
        [b for b in fig3 if b.size == "10KB"],
        lambda b: b.count,
        sorted({b.count for b in fig3}),
    )
    table(
        "Fig. 3 slice (200 ms, 10 Mbit/s, 0%): size x 64 (1MB: x 32)",
        [b for b in fig3 if b.count == (32 if b.size == "1MB" else 64)],
        lambda b: b.size,
        sizes,
    )
    one_connection(rows)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
