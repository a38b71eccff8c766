"""h3 as the field gets it (experiments/h3-field.toml; REPRODUCTION.md, "h3 as the field gets
it"), from a results folder's trials.csv (prints tables).

    .venv/bin/python scripts/h3_field_figures.py reproduction/h3-field [metric]

Every ratio pairs the h3 and h2s trials of one block (same page, network, server, client, transport
and repetition, run back to back): s = metric(h3) / metric(h2s), plt_ms unless another metric is
named, printed as ``n | median [95% CI] | range | h3 faster`` (:mod:`figures`). Printed: s per
level of each factor (the client split into browser and cores, the transport as TCP's algorithm
against the QUIC stack's, as stored); then the crossings REPRODUCTION.md reads (cores x browser x
network, the decision tree's splits; transport, initial window and discovery x network, and the
transport and the initial window x discovery: their forced h3 ran only with CUBIC and 10 packets);
then what the quarter core costs each protocol (plt at 0.25 / plt at 1 of the same cell and
repetition) and the calibration's share of a core; what each side ran, read back; QUIC's lost
packets and TCP's retransmissions; last the failed attempts.
"""

from __future__ import annotations

import statistics
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

from figures import RATIO_HEADER, Row, measured_rows, print_failures, protocol_pairs, ratio_line


def _page(row: Row) -> str:
    return Path(row["page"].split(":", 1)[1].split("@", 1)[0]).name.split(".")[0]


def _network(row: Row) -> str:
    return "lossy" if "loss=" in row["network"] else row["network"]


def _transport(row: Row) -> str:
    """TCP's algorithm against the QUIC stack's, as the file sets them (the h3 row's
    ``server_quic_cc`` says what ran: :func:`_ran`)."""
    quic = "newreno" if row["congestion_control"] == "bbr" else "cubic"
    return f"tcp {row['congestion_control']} / quic {quic}"


FACTORS: dict[str, Callable[[Row], str]] = {
    "browser": lambda r: r["client"].split(":", 1)[0],
    "cores": lambda r: r["client"].split("cores=", 1)[1],
    "network": _network,
    "page": _page,
    "server": lambda r: r["server"].split(":", 1)[0],
    "discovery": lambda r: r["discovery"] or "forced",
    "transport": _transport,
    "initcwnd": lambda r: f"{r['initcwnd_packets']} packets",
}
CROSSINGS = (
    ("cores", "browser", "network"),
    ("cores", "network"),
    ("transport", "network"),
    ("transport", "cores", "browser"),
    ("transport", "discovery"),
    ("initcwnd", "network"),
    ("initcwnd", "discovery"),
    ("discovery", "network"),
    ("server", "network"),
    ("page", "network"),
)


def _by(pairs: list[tuple[Row, Row, float]], names: tuple[str, ...]) -> None:
    cells: dict[tuple[str, ...], list[float]] = defaultdict(list)
    for _, h3, s in pairs:
        cells[tuple(FACTORS[n](h3) for n in names)].append(s)
    print(f"\n{' x '.join(names)}:")
    for cell in sorted(cells):
        print(ratio_line(" | ".join(cell), cells[cell]))


def _quarter_core(folder: Path, metric: str) -> None:
    """metric at cores=0.25 / at cores=1, paired by everything else and the repetition."""
    values: dict[tuple[str, ...], dict[str, float]] = defaultdict(dict)
    calibration: dict[str, list[float]] = defaultdict(list)
    for row in measured_rows(folder):
        browser, cores = FACTORS["browser"](row), FACTORS["cores"](row)
        if row[metric]:
            key = (row["protocol"], browser, row["block"].replace(row["client"], browser))
            values[key][cores] = float(row[metric])
        if row["cpu_calibration_cores"]:
            calibration[cores].append(float(row["cpu_calibration_cores"]))
    print(f"\nthe quarter core's cost, {metric}(0.25) / {metric}(1), protocol | browser:")
    cells: dict[tuple[str, str], list[float]] = defaultdict(list)
    for (protocol, browser, _), v in values.items():
        if "0.25" in v and "1" in v:
            cells[(protocol, browser)].append(v["0.25"] / v["1"])
    for cell in sorted(cells):
        print(ratio_line(" | ".join(cell), cells[cell]))
    print("\nthe calibration's share of a core, cores | n | min | median | max:")
    for cores, shares in sorted(calibration.items()):
        print(f"  {cores} | {len(shares)} | {min(shares):.4f} | {statistics.median(shares):.4f} "
              f"| {max(shares):.4f}")  # fmt: skip


def _ran(folder: Path) -> None:
    """What each side ran, read back: server | protocol | tcp | quic | quic initial window."""
    ran: Counter[tuple[str, ...]] = Counter()
    for row in measured_rows(folder):
        quic_iw = row["quic_initial_window_bytes"] or "-"
        ran[(row["server"], row["protocol"], row["congestion_control"],
             row["server_tcp_cc"] or "-", row["server_quic_cc"] or "-", quic_iw)] += 1  # fmt: skip
    print("\nread back: server | protocol | asked (tcp) | tcp ran | quic ran | quic iw B | n:")
    for key, n in sorted(ran.items()):
        print(f"  {' | '.join(key)} | {n}")


def _losses(folder: Path) -> None:
    """Per server, network and protocol: median QUIC packets sent and lost (h3), TCP
    retransmissions (h2s), and how many trials stored them."""
    got: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in measured_rows(folder):
        cell = (FACTORS["server"](row), _network(row), row["protocol"])
        for column in ("quic_sent_packets", "quic_lost_packets", "retransmits"):
            if row[column]:
                got[cell][column].append(float(row[column]))
    print("\nlosses, server | network | protocol | column: n, median:")
    for cell, columns in sorted(got.items()):
        shown = "; ".join(
            f"{c}: {len(v)}, {statistics.median(v):g}" for c, v in sorted(columns.items())
        )
        print(f"  {' | '.join(cell)} | {shown}")


def main(folder: Path, metric: str) -> None:
    pairs = protocol_pairs(folder, metric)
    print(f"s = {metric}(h3) / {metric}(h2s), per block; {RATIO_HEADER} (h3 faster)")
    print(ratio_line("all", [s for _, _, s in pairs]))
    for name in FACTORS:
        _by(pairs, (name,))
    for names in CROSSINGS:
        _by(pairs, names)
    _quarter_core(folder, metric)
    _ran(folder)
    _losses(folder)
    print_failures(folder)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "plt_ms")
