"""The report's view of a median trial's files and, over h3, its QUIC connections: the HAR,
packet capture and qlog files linked from the report (relative links: the folder moves with
the report), and from each qlog the congestion window and the packets declared lost over the
connection's time (:mod:`h2lab.metrics.qlog`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from h2lab.artifacts import CAPTURE_KEYLOG, CAPTURE_PCAP, NETLOG, PAGE_HAR, QLOG_DIR
from h2lab.metrics.qlog import QlogSummary, summarize
from h2lab.report import html as h
from h2lab.report import svg

MAX_CONNECTIONS = 6
"""Connections drawn per trial (the busiest by congestion-window changes; every file is linked)."""
MAX_QLOG_FILES = 200


def trial_files(dirs: Mapping[str, Path], out_dir: Path) -> str:
    """One line per protocol linking its median trial's HAR, packet capture, TLS keys, qlog
    files and Chromium NetLog, where it kept them; "" when none kept any."""
    lines = []
    for protocol, folder in dirs.items():
        found = [folder / n for n in (PAGE_HAR, CAPTURE_PCAP, CAPTURE_KEYLOG)]
        found += qlog_files(folder) + sorted(folder.glob(NETLOG.format(n="*")))[:4]
        links = [
            f'<a href="{h.e(os.path.relpath(p, out_dir))}">{h.e(p.relative_to(folder))}</a>'
            for p in found
            if p.is_file()
        ]
        if links:
            lines.append(f"<p>{h.e(protocol)} files: {', '.join(links)}</p>")
    return "".join(lines)


def qlog_files(folder: Path) -> list[Path]:
    qlogs = folder / QLOG_DIR
    if not qlogs.is_dir():
        return []
    return sorted(p for p in qlogs.iterdir() if p.suffix in (".sqlog", ".qlog"))[:MAX_QLOG_FILES]


def quic_part(dirs: Mapping[str, Path]) -> str:
    """For each median trial with qlog files: its connections' congestion windows and their
    losses over time, server side (the sender of the page) where the server wrote one."""
    parts = []
    for protocol, folder in dirs.items():
        read = {p.name: summarize(p) for p in qlog_files(folder)}
        if not read:
            continue
        senders = {n: s for n, s in read.items() if s.vantage == "server"} or read
        drawn = sorted(senders.items(), key=lambda kv: -len(kv[1].cwnd))[:MAX_CONNECTIONS]
        lost = sum(s.lost_packets for s in senders.values())
        parts.append(h.h3(f"{protocol}: {len(read)} qlog file(s), {lost} packet(s) declared lost"))
        parts.append(_charts(protocol, dict(drawn)))
    if not parts:
        return h.empty('no qlog kept (run with capture = ["qlog"]: the origin and curl write one)')
    return h.note(
        "From each QUIC connection's qlog: the sender's congestion window, and the packets its "
        "loss detection declared lost, each from the connection's first event."
    ) + "".join(parts)


def _charts(protocol: str, read: Mapping[str, QlogSummary]) -> str:
    cwnd = {name.split("_")[0][:8]: [(t, float(b)) for t, b in s.cwnd] for name, s in read.items()}
    losses = {
        name.split("_")[0][:8]: [(t, float(i + 1)) for i, t in enumerate(s.losses_ms)]
        for name, s in read.items()
    }
    return h.side_by_side(
        [
            (
                "congestion window",
                svg.step_chart(
                    cwnd,
                    x_label="ms",
                    y_label="congestion window (bytes)",
                    title=f"congestion window {protocol}",
                ),
            ),
            (
                "packets declared lost",
                svg.step_chart(
                    losses,
                    x_label="ms",
                    y_label="packets lost (cumulative)",
                    title=f"losses {protocol}",
                ),
            ),
        ]
    )
