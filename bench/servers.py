"""Requests per second of each server on small objects: h2load over one HTTP/2 connection
(TLS, ALPN h2), from inside the servers namespace to an origin address on its loopback, so
no emulated link is in the way (issue #6: the Go origin must reach >= 50% of nginx, so that it
is never the bottleneck of a page-load trial).

    .venv/bin/python bench/servers.py [--requests 20000] [--streams 100] [--servers a,b]

Needs root.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys

from h2lab import procs
from h2lab.metrics.h2load import parse_summary
from h2lab.net import netns
from h2lab.net.lab import Lab
from h2lab.pages import resolve_page
from h2lab.servers import ServeContext
from h2lab.servers import get as get_server

PAGE = "synthetic:n=1,size=1KB,origins=1"
TARGET_SHARE = 0.5
_RPS = re.compile(r"finished in [\d.]+m?s, ([\d.]+) req/s")


def requests_per_s(server: str, requests: int, streams: int, runs: int = 1) -> list[float]:
    page = resolve_page(PAGE)
    obj = next(r for r in page.resources if r != page.entry)
    with Lab(page.origins) as lab:
        ctx = ServeContext(
            lab.servers_ns, lab.origin_ips, lab.state_dir / "srv", lab.state_dir / "tls"
        )
        ip = lab.origin_ips[obj.origin]
        with get_server(server).serve(page, ctx):
            out = []
            for _ in range(runs):
                argv = [
                    "h2load", "--npn-list=h2", "-c1", "-t1", f"-n{requests}", f"-m{streams}",
                    "-H", f":authority: {obj.origin}", f"https://{ip}{obj.target}",
                ]  # fmt: skip
                text = procs.run(netns.exec_argv(lab.servers_ns, argv), timeout_s=120)
                m = _RPS.search(text)
                if not m or parse_summary(text).requests_succeeded != requests:
                    raise SystemExit(f"{server}: not every request succeeded:\n{text[-600:]}")
                out.append(float(m.group(1)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--servers", default="nginx,h2o,origin")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("bench/servers.py needs root (network namespaces)", file=sys.stderr)
        return 2
    names = args.servers.split(",")
    runs: dict[str, list[float]] = {name: [] for name in names}
    # servers take turns, run after run, so a slow spell of the machine hits all of them
    for _ in range(args.runs):
        for name in names:
            runs[name] += requests_per_s(name, args.requests, args.streams)
    medians = {}
    for name in names:
        medians[name] = statistics.median(runs[name])
        print(
            f"{name:8s} median {medians[name]:10.0f} req/s  runs {[round(x) for x in runs[name]]}"
        )
    if "origin" in medians and "nginx" in medians:
        share = medians["origin"] / medians["nginx"]
        verdict = "ok" if share >= TARGET_SHARE else "NO"
        print(f"\norigin / nginx = {share:.2f} (target >= {TARGET_SHARE}): {verdict}")
        return 0 if share >= TARGET_SHARE else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
