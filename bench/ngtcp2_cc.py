"""BBR on QUIC, measured (issue #55, item 2): no h3 server h2lab runs can run BBR (quic-go has
NewReno and CUBIC, HAProxy 3.0 CUBIC and NewReno, nginx 1.26 and Caddy their own), so this probe
takes the one QUIC stack Debian 13 ships with BBR, ngtcp2 1.11 (its example server,
``gtlsserver``, package ``ngtcp2-server``, ``--cc=cubic|reno|bbr``), and moves the same 10 MB
over the lab's link (Rattan, 100 ms, 50 Mbit/s, 1 % loss) to Debian 13's curl over HTTP/3, each
algorithm in turn, N times. Printed per algorithm: the goodput in Mbit/s (the body's bytes over
the time from the connection being ready to the last byte), and from the server's qlog, what
ngtcp2 says it ran with: its initial congestion window and the packets it sent and lost. ngtcp2
names no algorithm in its qlog; the algorithm is the running server's own command line.

    .venv/bin/python bench/ngtcp2_cc.py [--runs 3] [--ccs cubic,reno,bbr]

Needs root (the lab's namespaces). Makes ``ngtcp2-server``'s root filesystem once with
mmdebstrap (pinned: it refuses another upstream release than 1.11.0). About 2 minutes per
loss-based run of 10 MB at 1 % loss and 100 ms.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from h2lab import debian13
from h2lab.cli.common import enter_lab_mode
from h2lab.net.lab import Lab
from h2lab.net.netns import exec_argv
from h2lab.paths import cache_root
from h2lab.spec.network import parse_network
from h2lab.spec.tcp import TcpSettings
from h2lab.tls import LocalCA

NETWORK = "rtt=100ms,rate=50Mbps,loss=1%"
PACKAGE, RELEASE = "ngtcp2-server", "1.11.0"
HOST = "server.h2lab.test"
SIZE_BYTES = 10_000_000
CURL_TIMEOUT_S = 400


def ngtcp2_root() -> Path:
    """Debian 13's ngtcp2-server and what it needs, extracted (made once)."""
    root = cache_root() / f"ngtcp2-{RELEASE}"
    if not (root / ".ready").is_file():
        tmp = root.with_name(root.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        argv = ["mmdebstrap", "--quiet", "--variant=extract", f"--include={PACKAGE}"]
        subprocess.run([*argv, "trixie", str(tmp), debian13.MIRROR], check=True, timeout=900)
        changelog = tmp / f"usr/share/doc/{PACKAGE}/changelog.Debian.gz"
        first = gzip.decompress(changelog.read_bytes()).decode().splitlines()[0]
        if f"({RELEASE}-" not in first:
            sys.exit(f"{PACKAGE}: expected upstream {RELEASE}, the mirror has {first!r}")
        (tmp / ".ready").write_text(RELEASE)
        shutil.rmtree(root, ignore_errors=True)
        os.replace(tmp, root)
    return root


def run_in(root: Path, program: str) -> list[str]:
    libs = root / debian13.LIBS
    return [str(root / debian13.LOADER), "--library-path", str(libs), str(root / program)]


def qlog_figures(folder: Path) -> dict[str, int]:
    """Initial window (the first metrics_updated), packets sent and lost, over the files."""
    out = {"initial_window_bytes": 0, "sent": 0, "lost": 0}
    for path in folder.glob("*.sqlog"):
        for line in path.read_text(errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            name = event.get("name")
            out["sent"] += name == "transport:packet_sent"
            out["lost"] += name == "recovery:packet_lost"
            window = event.get("data", {}).get("congestion_window")
            if name == "recovery:metrics_updated" and window and not out["initial_window_bytes"]:
                out["initial_window_bytes"] = int(window)
    return out


def one_algorithm(cc: str, runs: int, lab: Lab, client_ns: str, work: Path) -> list[str]:
    ip = lab.origin_ips[HOST]
    pair = LocalCA(work / "tls").leaf(HOST)
    qlogs = work / f"qlog-{cc}"
    qlogs.mkdir()
    argv = [*run_in(ngtcp2_root(), "usr/sbin/gtlsserver"), "-q", f"--cc={cc}",
            f"--qlog-dir={qlogs}", "-d", str(work / "htdocs"), ip, "443",
            str(pair.key), str(pair.cert)]  # fmt: skip
    server = subprocess.Popen(exec_argv(lab.servers_ns, argv), stdout=subprocess.DEVNULL)
    lines = []
    try:
        time.sleep(1.0)
        ran = Path(f"/proc/{server.pid}/cmdline").read_bytes().split(b"\0")
        said = [a.decode() for a in ran if a.startswith(b"--cc=")]
        curl = [*debian13.argv("curl"), "--http3-only", "-k", "-s", "-o", "/dev/null",
                "--max-time", str(CURL_TIMEOUT_S), "-w",
                "%{size_download} %{time_appconnect} %{time_total} %{http_version}",
                f"https://{ip}/big.bin"]  # fmt: skip
        goodputs = []
        for i in range(runs):
            done = subprocess.run(exec_argv(client_ns, curl), capture_output=True, text=True)
            size, ready_s, total_s, version = done.stdout.split()
            mbps = int(size) * 8 / (float(total_s) - float(ready_s)) / 1e6
            ok = int(size) == SIZE_BYTES and version == "3"
            goodputs.append(mbps)
            print(f"  {cc} run {i + 1}: {mbps:.2f} Mbit/s ({size} bytes, h{version})"
                  + ("" if ok else "  INCOMPLETE"), flush=True)  # fmt: skip
    finally:
        server.terminate()
        server.wait(10)
    q = qlog_figures(qlogs)
    lines.append(
        f"{cc:6s} ran {','.join(said) or '?':9s} median {statistics.median(goodputs):6.2f} Mbit/s "
        f"[{min(goodputs):.2f}, {max(goodputs):.2f}] n={runs}; qlog: initial window "
        f"{q['initial_window_bytes']} bytes, {q['sent']} packets sent, {q['lost']} lost"
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ccs", default="cubic,reno,bbr")
    args = parser.parse_args(argv)
    ngtcp2_root()
    enter_lab_mode()
    network = parse_network(NETWORK, "command line", field="network")
    with tempfile.TemporaryDirectory(prefix="h2lab-ngtcp2-") as tmp:
        work = Path(tmp)
        (work / "htdocs").mkdir()
        (work / "htdocs" / "big.bin").write_bytes(os.urandom(SIZE_BYTES))
        lines = []
        with Lab((HOST,)) as lab, lab.link(network, 5555, TcpSettings()) as link:
            print(f"ngtcp2 {RELEASE} over {network.describe()}, {args.runs} runs each", flush=True)
            for cc in args.ccs.split(","):
                lines += one_algorithm(cc, args.runs, lab, link.client_ns, work)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
