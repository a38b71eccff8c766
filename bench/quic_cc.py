"""Goodput of a 10 MB download per stack and congestion control (issue #55, item 2): runs
bench/quic-cc.toml (``h2lab run``: a progress bar, and a second run resumes) and prints, per
server, protocol and TCP level, the algorithm each side ran as read back, and the download's
goodput (the object's bytes over the time from its request to its last byte) in Mbit/s.

    .venv/bin/python bench/quic_cc.py [--out h2lab-out/quic-cc]

Needs root. About 25 minutes on the reference machine: Reno and CUBIC move 10 MB at 1 % loss
and 100 ms in 20-60 s each.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from h2lab.store import Store

EXPERIMENT = Path(__file__).with_name("quic-cc.toml")


def goodputs(out: Path) -> dict[tuple[str, str, str], list[tuple[float, str, str]]]:
    """(server, protocol, TCP level) -> (Mbit/s, TCP read back, QUIC read back) per ok trial."""
    found: dict[tuple[str, str, str], list[tuple[float, str, str]]] = defaultdict(list)
    store = Store(out)
    try:
        for t in store.trials(experiment="quic-cc"):
            if t.status != "ok" or t.id is None:
                continue
            big = max(store.resources(t.id), key=lambda r: r["bytes"] or 0)
            seconds = (big["end_ms"] - big["start_ms"]) / 1000
            cell = t.cell.columns()
            key = (str(cell["server"]), t.protocol, str(cell["congestion_control"]))
            mbps = big["bytes"] * 8 / seconds / 1e6
            found[key].append((mbps, t.server_tcp_cc or "-", t.server_quic_cc or "-"))
    finally:
        store.close()
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=Path("h2lab-out/quic-cc"))
    args = parser.parse_args(argv)
    h2lab = Path(sys.executable).with_name("h2lab")
    done = subprocess.run([str(h2lab), "run", str(EXPERIMENT), "--out", str(args.out)])
    if done.returncode not in (0, 1):  # 1: some trial failed (it is stored with its reason)
        return done.returncode
    rows = goodputs(args.out)
    print(f"\n{'server':40s} {'proto':5s} {'tcp':5s} {'ran (tcp/quic)':16s} goodput Mbit/s")
    for (server, protocol, tcp), runs in sorted(rows.items()):
        mbps = sorted(r[0] for r in runs)
        ran = "/".join(sorted({f"{r[1]}/{r[2]}" for r in runs}))
        print(
            f"{server:40s} {protocol:5s} {tcp:5s} {ran:16s} median {statistics.median(mbps):6.2f}"
            f"  [{mbps[0]:.2f}, {mbps[-1]:.2f}]  n={len(mbps)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
