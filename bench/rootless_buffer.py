"""Benchmark: does rootless mode's smaller Rattan socket buffer cost packets under load?

Run: ``sudo .venv/bin/python bench/rootless_buffer.py [--repeat 3]`` (root, on a host with an
ordinary user: the first with uid >= 1000, or ``H2LAB_TEST_USER``). It loads seed 002's
heaviest case, ``synthetic:awp`` with ``h2load:clients=40`` (40 page loads at once, 640
connections) from nginx over an unshaped, loss-free ``delay=25ms`` link, h1p and h2c, first as
root (Rattan's packet sockets hold 32 MiB: ``net/rmem.py``), then as the user in rootless mode
(2 x the host's ``net.core.rmem_max``: 8 MiB here, ``userns.raise_packet_rcvbuf``), and prints
per mode and protocol the medians of ``retransmits``, ``emulator_drops`` and ``pdt_ms``, and
the sockets' size seen in rootless mode.

Root mode's figures in ``net/rmem.py``: 4 MiB overflowed here (3,568-5,513 retransmits per
load), 32 MiB did not (13-31), the socket's fill peaking at 17.7 MB.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.test_rootless import PYTHON, UserHome, _test_user

LOAD = ["load", "synthetic:awp", "--client", "h2load:clients=40", "--server", "nginx",
        "--protocol", "h1p,h2c", "--network", "delay=25ms", "--json"]  # fmt: skip
FIGURES = ("retransmits", "emulator_drops", "pdt_ms")


def _medians(rows: list[dict[str, object]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for protocol in sorted({str(r["protocol"]) for r in rows}):
        mine = [r for r in rows if r["protocol"] == protocol and r["status"] == "ok"]
        out[protocol] = {
            f: statistics.median(float(r[f]) for r in mine if r[f] is not None)  # type: ignore[arg-type]
            for f in FIGURES
        }
        out[protocol]["ok_trials"] = len(mine)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    load = [*LOAD, "--repeat", str(args.repeat)]
    home = UserHome(_test_user())
    try:
        root = subprocess.run([PYTHON, "-m", "h2lab", *load, "--out", str(home.root / "root")],
                              capture_output=True, text=True, timeout=3600)  # fmt: skip
        user = home.h2lab([*load, "--out", str(home.root / "user")], timeout_s=3600)
        for mode, done in (("root", root), ("rootless", user)):
            if done.returncode != 0:
                print(f"{mode}: h2lab load failed: {done.stderr[-2000:]}")
                return 1
            for protocol, figures in _medians(json.loads(done.stdout)).items():
                shown = " ".join(f"{k}={v:g}" for k, v in figures.items())
                print(f"{mode} {protocol}: median of {args.repeat}: {shown}")
    finally:
        subprocess.run(["rm", "-rf", str(home.root)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
