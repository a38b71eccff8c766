"""Benchmark: is a real single-object fetch in the lab never faster than the TCP lower bound,
and close to it once the body is large enough for serialisation to dominate?

Run as root: ``.venv/bin/python bench/lower_bound.py [--quick]``.

One lab, nginx serving ``synthetic:n=1,size=S,origins=1`` for S in 14 KB, 100 KB, 1 MB; for
RTT 20/100/200 ms at 10 Mbit/s without loss and protocols h1c, h1s, h2s, h2load fetches only
``/obj/00000.bin`` (not the index) on one fresh connection (``-c1 -n1 -m1``), each time on a
fresh Rattan link, so every fetch starts with a cold TCP stack.

What is measured: h2load's "time for connect" (from its ``connect()`` call, i.e. the SYN,
until the TCP and TLS handshakes are done; h2load submits the request in that same callback)
plus the request's duration from ``--log-file`` (request sent -> last response byte read).
That is the whole fetch on the wire, handshakes included. h2load's own "finished in" covers
the same span plus its thread start-up and teardown (about 1-3 ms more); it is printed for
comparison and used as a sanity check (it must not be shorter).

Verdicts per row: "never faster" = min measured >= bound; "within 15%" = median measured <=
1.15 x bound, required only for bodies of 100 KB and more.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from h2lab import procs
from h2lab.analysis.lower_bound import (
    fetch_lower_bound_ms,
    first_window_control_packets,
    handshake_rtts,
)
from h2lab.clients.h2load import _FLAGS
from h2lab.errors import H2LabError
from h2lab.metrics import h2load as h2load_parse
from h2lab.net import netns
from h2lab.net.lab import Lab, Link
from h2lab.pages import Page, resolve_page
from h2lab.servers import ServeContext
from h2lab.servers import get as get_server
from h2lab.spec.network import NetworkProfile, parse_network
from h2lab.spec.protocols import url_for
from h2lab.spec.tcp import TcpSettings

SIZES = ("14KB", "100KB", "1MB")
RTTS_MS = (20, 100, 200)
RATE = "10Mbps"
PROTOCOLS = ("h1c", "h1s", "h2s")
REPETITIONS = 5
QUICK_RTTS_MS = (20,)
QUICK_REPETITIONS = 2
# Acceptance criteria of this benchmark's brief: median within 15 % of the bound, checked only
# where the body (>= 100 KB) makes serialisation and slow start, not fixed costs, dominate.
TOLERANCE_RATIO = 1.15
STRICT_MIN_SIZE_BYTES = 100_000
# The slowest fetch here (1 MB at 10 Mbit/s, RTT 200 ms) has a bound under 2 s; 30 s means
# something is broken, not slow.
H2LOAD_TIMEOUT_S = 30.0
SERVER = "nginx"


class BenchError(H2LabError):
    """A fetch did not produce a usable measurement."""


# ---------------------------------------------------------------------------- pure part


@dataclass(frozen=True)
class Fetch:
    """One h2load run of one object on one fresh connection."""

    connect_ms: float
    """h2load "time for connect": connect() call -> TCP (and TLS) handshake done"""
    request_ms: float
    """--log-file duration: request sent -> last response byte read"""
    finished_ms: float
    """h2load "finished in": the whole run, thread start-up and teardown included"""
    finished_resolution_ms: float
    """one unit in the last digit h2load printed ("1.00s": 10 ms, "880.12ms": 0.01 ms)"""
    tls_version: str | None
    """"1.3" or "1.2" as negotiated, None without TLS"""

    @property
    def total_ms(self) -> float:
        """The fetch on the wire: SYN sent -> last byte read."""
        return self.connect_ms + self.request_ms


_DURATION_UNITS_MS = {"us": 1e-3, "ms": 1.0, "s": 1000.0}
_FINISHED = re.compile(r"^finished in ([0-9.]+)(us|ms|s),", re.MULTILINE)
_CONNECT = re.compile(r"^time for connect:\s+([0-9.]+)(us|ms|s)\s", re.MULTILINE)
_TLS = re.compile(r"^(?:TLS )?Protocol: TLSv(1\.[0-3])$", re.MULTILINE)


def _ms(match: re.Match[str]) -> float:
    return float(match.group(1)) * _DURATION_UNITS_MS[match.group(2)]


def _resolution_ms(match: re.Match[str]) -> float:
    _, _, decimals = match.group(1).partition(".")
    return 10.0 ** -len(decimals) * _DURATION_UNITS_MS[match.group(2)]


def parse_fetch(stdout: str, log_text: str, body_bytes: int) -> Fetch:
    """h2load's stdout and request log of a ``-c1 -n1`` run -> one :class:`Fetch`."""
    tail = stdout.strip()[-300:]
    summary = h2load_parse.parse_summary(stdout)
    if summary.requests_succeeded != 1 or summary.data_bytes != body_bytes:
        raise BenchError(
            f"expected 1 request and {body_bytes} body bytes, got "
            f"{summary.requests_succeeded} and {summary.data_bytes}: {tail!r}"
        )
    finished = _FINISHED.search(stdout)
    connect = _CONNECT.search(stdout)
    if finished is None or connect is None:
        raise BenchError(f"no 'finished in' or 'time for connect' in h2load output: {tail!r}")
    rows = h2load_parse.parse_log(log_text)
    if len(rows) != 1 or not 200 <= rows[0].status < 300:
        raise BenchError(f"expected one 2xx request in the log, got {rows}")
    tls = _TLS.search(stdout)
    return Fetch(
        connect_ms=_ms(connect),
        request_ms=rows[0].duration_us / 1000,
        finished_ms=_ms(finished),
        finished_resolution_ms=_resolution_ms(finished),
        tls_version=tls.group(1) if tls else None,
    )


@dataclass(frozen=True)
class Row:
    """One (size, RTT, protocol) cell: its bound and its fetches."""

    size: str
    size_bytes: int
    rtt_ms: float
    protocol: str
    bound_ms: float
    fetches: tuple[Fetch, ...]

    @property
    def median_ms(self) -> float:
        return statistics.median(f.total_ms for f in self.fetches)

    @property
    def min_ms(self) -> float:
        return min(f.total_ms for f in self.fetches)

    @property
    def median_connect_ms(self) -> float:
        return statistics.median(f.connect_ms for f in self.fetches)

    @property
    def median_finished_ms(self) -> float:
        return statistics.median(f.finished_ms for f in self.fetches)

    @property
    def ratio(self) -> float:
        return self.median_ms / self.bound_ms

    @property
    def never_faster(self) -> bool:
        return self.min_ms >= self.bound_ms

    @property
    def within_required(self) -> bool:
        return self.size_bytes >= STRICT_MIN_SIZE_BYTES

    @property
    def within(self) -> bool:
        return self.median_ms <= TOLERANCE_RATIO * self.bound_ms

    @property
    def passed(self) -> bool:
        return self.never_faster and (self.within or not self.within_required)


def bound_for(size_bytes: int, profile: NetworkProfile, protocol: str, tls: str | None) -> float:
    return fetch_lower_bound_ms(
        size_bytes,
        profile.rtt_ms,
        profile.down_rate_bps,
        handshake_rtts=handshake_rtts(protocol, tls or "1.3"),
        initcwnd_packets=TcpSettings().initcwnd_packets,
        control_packets=first_window_control_packets(protocol),
    )


def format_table(rows: Sequence[Row]) -> str:
    head = (
        f"{'size':>6} {'rtt_ms':>6} {'proto':>5} {'n':>2} {'bound_ms':>9} {'median_ms':>9} "
        f"{'min_ms':>9} {'med/bnd':>7} {'connect':>8} {'finished':>9}  "
        f"{'never faster':<12}  {'within 15%':<10}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        within = ("yes" if r.within else "NO") if r.within_required else f"n/a ({r.ratio:.2f})"
        lines.append(
            f"{r.size:>6} {r.rtt_ms:>6g} {r.protocol:>5} {len(r.fetches):>2} {r.bound_ms:>9.1f} "
            f"{r.median_ms:>9.1f} {r.min_ms:>9.1f} {r.ratio:>7.3f} {r.median_connect_ms:>8.1f} "
            f"{r.median_finished_ms:>9.1f}  {'yes' if r.never_faster else 'NO':<12}  {within:<10}"
        )
    return "\n".join(lines)


def summary_line(rows: Sequence[Row]) -> str:
    failed = [r for r in rows if not r.passed]
    faster = sum(not r.never_faster for r in rows)
    slow = sum(r.within_required and not r.within for r in rows)
    verdict = "PASS" if not failed else "FAIL"
    return (
        f"{verdict}: {len(rows) - len(failed)} of {len(rows)} rows passed, {len(failed)} failed "
        f"({faster} faster than the bound, {slow} of the >= 100 KB rows beyond "
        f"{TOLERANCE_RATIO:g} x bound)"
    )


# ---------------------------------------------------------------------------- the lab edge


def fetch_once(link: Link, page: Page, protocol: str, work_dir: Path) -> Fetch:
    """One h2load run in the client namespace for the page's single object."""
    obj = next(r for r in page.resources if r != page.entry)  # the object, not index.html
    log = work_dir / "h2load.log"
    log.unlink(missing_ok=True)
    argv = [
        "h2load",
        *_FLAGS[protocol],
        "-c1",
        "-t1",
        "-n1",
        "-m1",
        f"--log-file={log}",
        url_for(obj, protocol),
    ]
    stdout = procs.run(netns.exec_argv(link.client_ns, argv), timeout_s=H2LOAD_TIMEOUT_S)
    fetch = parse_fetch(stdout, log.read_text() if log.exists() else "", obj.size_bytes)
    # h2load rounds "finished in" to its last printed digit (10 ms once it switches to seconds).
    if fetch.finished_ms + fetch.finished_resolution_ms / 2 < fetch.total_ms:
        raise BenchError(f"h2load's run ({fetch.finished_ms} ms) shorter than its fetch {fetch}")
    return fetch


@contextmanager
def serving(lab: Lab, page: Page, server: str) -> Iterator[None]:
    lab.set_origins(page.origins)
    ctx = ServeContext(lab.servers_ns, lab.origin_ips, lab.state_dir / "srv", lab.state_dir / "tls")
    with get_server(server).serve(page, ctx):
        yield


def run(
    rtts_ms: Sequence[int],
    repetitions: int,
    server: str = SERVER,
    sizes: Sequence[str] = SIZES,
) -> list[Row]:
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="h2lab-lower-bound-") as tmp, Lab() as lab:
        for size in sizes:
            page = resolve_page(f"synthetic:n=1,size={size},origins=1")
            size_bytes = next(r for r in page.resources if r != page.entry).size_bytes
            with serving(lab, page, server):
                for rtt_ms in rtts_ms:
                    profile = parse_network(f"rtt={rtt_ms}ms,rate={RATE}")
                    fetches: dict[str, list[Fetch]] = {p: [] for p in PROTOCOLS}
                    for rep in range(repetitions):
                        # Rotate the protocol order so none always runs first after a new RTT.
                        order = (
                            PROTOCOLS[rep % len(PROTOCOLS) :] + PROTOCOLS[: rep % len(PROTOCOLS)]
                        )
                        for protocol in order:
                            with lab.link(profile, rep + 1, TcpSettings()) as link:
                                f = fetch_once(link, page, protocol, Path(tmp))
                            fetches[protocol].append(f)
                            print(
                                f"  {size:>5} rtt={rtt_ms}ms {protocol} #{rep + 1}: "
                                f"{f.total_ms:.1f} ms (connect {f.connect_ms:.1f})",
                                file=sys.stderr,
                                flush=True,
                            )
                    for protocol in PROTOCOLS:
                        tls = {f.tls_version for f in fetches[protocol]}
                        if len(tls) != 1:
                            raise BenchError(f"{protocol}: TLS versions differ between runs: {tls}")
                        (tls_version,) = tls
                        rows.append(
                            Row(
                                size=size,
                                size_bytes=size_bytes,
                                rtt_ms=profile.rtt_ms,
                                protocol=protocol,
                                bound_ms=bound_for(size_bytes, profile, protocol, tls_version),
                                fetches=tuple(fetches[protocol]),
                            )
                        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"RTT {QUICK_RTTS_MS[0]} ms only, {QUICK_REPETITIONS} repetitions",
    )
    parser.add_argument("--server", default=SERVER, help="server spec (default nginx)")
    parser.add_argument("--sizes", help="object sizes, comma-separated (default: all)")
    parser.add_argument("--rtts", help="RTTs in ms, comma-separated (default: all)")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("bench/lower_bound.py needs root (network namespaces)", file=sys.stderr)
        return 2
    rtts: tuple[int, ...] = QUICK_RTTS_MS if args.quick else RTTS_MS
    if args.rtts:
        rtts = tuple(int(x) for x in args.rtts.split(","))
    reps = QUICK_REPETITIONS if args.quick else REPETITIONS
    sizes = tuple(args.sizes.split(",")) if args.sizes else SIZES
    try:
        rows = run(rtts, reps, args.server, sizes)
    except H2LabError as exc:
        print(f"error: {exc.line()}", file=sys.stderr)
        return 2
    print(
        f"\nserver {args.server}: single-object fetch on a fresh connection at {RATE}, no loss; "
        "measured = h2load "
        "'time for connect' + request duration (SYN -> last byte), ms\n"
    )
    print(format_table(rows))
    print()
    print(summary_line(rows))
    return 0 if all(r.passed for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
