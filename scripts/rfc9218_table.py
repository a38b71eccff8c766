"""The RFC 9218 test per server (docs/servers.md, "RFC 9218"): prints the table's rows, one
per server and protocol: images (of 30) that ended before the four late critical resources, per
run, and when the last of them ended.

    .venv/bin/python scripts/rfc9218_table.py [--runs 3] [--servers nginx@1.26 caddy ...]

Needs root. See :mod:`h2lab.reprio.rfc9218` for the page, the link and the clients.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from h2lab.errors import H2LabError
from h2lab.reprio import rfc9218
from h2lab.servers import get as get_server

SERVERS = (
    "nginx",
    "h2o",
    "apache",
    "haproxy:backend=h2o,buffer=1MB",
    "nginx@1.26",
    "haproxy@3.0:backend=nginx",
    "jetty",
    "origin:scheduler=client",
    "origin:scheduler=rfc9218",
    "origin:scheduler=fcfs",
)
FOLLOWS_AT_MOST = 5
"""at most this many images before the critical ones: the server follows the priorities"""


def cases(server: str) -> list[tuple[str, str]]:
    """(protocol, how) the server can be asked: h2s by header, by PRIORITY_UPDATE and the
    control without either, h3 by header and the control if it speaks it."""
    out = [("h2s", "header"), ("h2s", "update"), ("h2s", "none")]
    if "h3" in get_server(server).protocols:
        out += [("h3", "header"), ("h3", "none")]
    return out


def row(server: str, protocol: str, how: str, runs: int) -> str:
    before, end = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            try:
                o = rfc9218.run(server, protocol, Path(tmp), how)
            except H2LabError as exc:
                return f"| `{server}` | {protocol} | {how} | failed: {exc} | | |"
        before.append(o.images_before_critical)
        end.append(o.critical_end_ms)
    follows = "yes" if max(before) <= FOLLOWS_AT_MOST else "no"
    follows = follows if how != "none" else f"({follows}: control)"
    counts = ", ".join(str(b) for b in before)
    return (
        f"| `{server}` | {protocol} | {how} | {counts} | {statistics.median(end):.0f} | {follows} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--servers", nargs="+", default=list(SERVERS))
    args = parser.parse_args(argv)
    print("| server | protocol | signal | images before (per run) | critical done, ms | follows |")
    print("| --- | --- | --- | --- | --- | --- |")
    for server in args.servers:
        for protocol, how in cases(server):
            print(row(server, protocol, how, args.runs), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
