"""What a qlog file says of one QUIC connection: who wrote it, its congestion window over time
and the packets it declared lost.

A qlog file here is JSON-SEQ (RFC 7464): records each after an RS byte (0x1E), the first the
file's header, every other one event (``time``, ``name``, ``data``). Two generations of the
draft are read: quic-go 0.65 writes the main schema's ``file_schema`` header (it keeps a
``qlog_version`` beside it) and times relative to the connection's start; OpenSSL 3.5 (curl's
QUIC) writes ``qlog_version`` 0.3 with ``time_format: "delta"`` (each time from the event
before). The congestion window is ``recovery:metrics_updated``'s ``congestion_window``, the
losses ``recovery:packet_lost`` events, in both.

A qlog is outside data: the file is read :data:`CHUNK_BYTES` at a time up to
:data:`MAX_BYTES`, a record longer than :data:`MAX_RECORD_BYTES` or not an object is skipped
and counted, and the window is kept only where it changed (at most :data:`MAX_POINTS` points).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RS = b"\x1e"
CHUNK_BYTES = 1 << 20
MAX_BYTES = 1 << 30
"""The most of one file read (a 10 MB download's server qlog is about 8 MB)."""
MAX_RECORD_BYTES = 1 << 20
MAX_POINTS = 20_000
"""Congestion-window points kept per connection (a change each; the rest are dropped)."""

LOST = "recovery:packet_lost"
METRICS = "recovery:metrics_updated"


@dataclass
class QlogSummary:
    """One qlog file, read."""

    version: str | None = None
    """the header's ``qlog_version`` or, failing it, its ``file_schema``; None: no header"""
    vantage: str = "unknown"
    """``server`` or ``client``: whose view of the connection"""
    lost_packets: int = 0
    cwnd: list[tuple[float, int]] = field(default_factory=list)
    """(ms from the connection's first event, congestion window in bytes), where it changed"""
    losses_ms: list[float] = field(default_factory=list)
    """when each packet was declared lost, ms as :attr:`cwnd`"""
    events: int = 0
    skipped: int = 0
    """records that were not a JSON object with a numeric time (or were too long)"""
    truncated: bool = False
    """the file was longer than :data:`MAX_BYTES`: only its beginning was read"""


def records(path: Path) -> Iterator[bytes | None]:
    """The file's JSON-SEQ records, raw; None for one too long to keep (its bytes dropped as
    they come, up to the next record)."""
    read, tail, skipping = 0, b"", False
    with path.open("rb") as f:
        while read < MAX_BYTES:
            chunk = f.read(min(CHUNK_BYTES, MAX_BYTES - read))
            if not chunk:
                break
            read += len(chunk)
            parts = (tail + chunk).split(RS)
            tail = parts.pop()
            for part in parts:
                yield None if skipping else _kept(part)
                skipping = False
            if len(tail) > MAX_RECORD_BYTES:
                tail, skipping = b"", True
    if tail or skipping:
        yield None if skipping else _kept(tail)


def _kept(record: bytes) -> bytes | None:
    return None if len(record) > MAX_RECORD_BYTES else record


def summarize(path: Path) -> QlogSummary:
    """The file's header, congestion window and losses (:class:`QlogSummary`)."""
    out = QlogSummary(truncated=path.stat().st_size > MAX_BYTES)
    delta, at, start = False, 0.0, None
    for raw in records(path):
        if raw is None or not raw.strip():
            out.skipped += raw is None
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            out.skipped += 1
            continue
        if not isinstance(record, dict):
            out.skipped += 1
        elif out.version is None and "name" not in record:
            delta = _header(out, record)
        else:
            t = record.get("time", 0.0 if delta else None)
            if not isinstance(t, int | float) or isinstance(t, bool):
                out.skipped += 1
                continue
            at = at + t if delta else float(t)
            start = at if start is None else start
            _event(out, record, round(at - start, 3))
    return out


def _header(out: QlogSummary, header: dict[str, Any]) -> bool:
    """Read the header into ``out``; whether its times are deltas."""
    version = header.get("qlog_version") or header.get("file_schema")
    out.version = str(version)[:80] if version else "unknown"
    trace = _object(header.get("trace"))
    out.vantage = str(_object(trace.get("vantage_point")).get("type", "unknown"))[:20]
    return _object(trace.get("common_fields")).get("time_format") == "delta"


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _event(out: QlogSummary, event: dict[str, Any], t_ms: float) -> None:
    out.events += 1
    name = event.get("name")
    if name == LOST:
        out.lost_packets += 1
        if len(out.losses_ms) < MAX_POINTS:
            out.losses_ms.append(t_ms)
    elif name == METRICS:
        data = event.get("data")
        cwnd = data.get("congestion_window") if isinstance(data, dict) else None
        if not isinstance(cwnd, int) or isinstance(cwnd, bool) or cwnd < 0:
            return
        if (not out.cwnd or out.cwnd[-1][1] != cwnd) and len(out.cwnd) < MAX_POINTS:
            out.cwnd.append((t_ms, cwnd))


def take_written_since(folder: Path, since_s: float, into: Path, pattern: str = "*") -> list[Path]:
    """Move the files under ``folder`` matching ``pattern`` (a glob, recursive with ``**``)
    written since ``since_s`` (a ``time.time()``) into ``into``, each by its name: a trial's
    connections' qlog files. A file still open goes on being written where it is moved to
    (the same file: a rename on one file system)."""
    if not folder.is_dir():
        return []
    moved = []
    for f in sorted(folder.glob(pattern)):
        try:
            recent = f.is_file() and not f.is_symlink() and f.stat().st_mtime >= since_s
        except OSError:
            continue
        if recent:
            into.mkdir(parents=True, exist_ok=True)
            moved.append(Path(shutil.move(f, into / f.name)))
    return moved
