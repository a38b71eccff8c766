"""h2load's summary (stdout) and its ``--log-file`` (one line per request)."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class H2loadSummary:
    requests_total: int
    requests_succeeded: int
    requests_failed: int
    bytes_total: int
    """all bytes h2load received (TLS/TCP payload it read)"""
    header_bytes: int
    """response header bytes as received (HPACK-compressed for h2)"""
    data_bytes: int
    """response body bytes"""


@dataclass(frozen=True)
class RequestLog:
    start_us: int
    """request start, microseconds since the epoch"""
    status: int
    duration_us: int
    """start -> end of response"""

    @property
    def end_us(self) -> int:
        return self.start_us + self.duration_us


class H2loadParseError(ValueError):
    pass


_REQ = re.compile(
    r"requests: (\d+) total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored"
)
_TRAFFIC = re.compile(r"traffic: .*?\((\d+)\) total, .*?\((\d+)\) headers .*?, .*?\((\d+)\) data")


def parse_summary(stdout: str) -> H2loadSummary:
    req = _REQ.search(stdout)
    traffic = _TRAFFIC.search(stdout)
    if not req or not traffic:
        raise H2loadParseError(f"no summary in h2load output: {stdout.strip()[-300:]!r}")
    return H2loadSummary(
        requests_total=int(req.group(1)),
        requests_succeeded=int(req.group(2)),
        requests_failed=int(req.group(3)) + int(req.group(4)),
        bytes_total=int(traffic.group(1)),
        header_bytes=int(traffic.group(2)),
        data_bytes=int(traffic.group(3)),
    )


def parse_log(text: str) -> list[RequestLog]:
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) < 3:
            raise H2loadParseError(f"log line {n}: expected 3 tab-separated fields: {line!r}")
        rows.append(RequestLog(int(parts[0]), int(parts[1]), int(parts[2])))
    return rows


def in_request_order(rows: list[RequestLog]) -> list[RequestLog]:
    """Log rows in the order the requests were issued.

    h2load writes a row when a response ends and issues a connection's requests in list
    order, so sorting by start time (stable on ties) recovers the request order. Exact for
    one-at-a-time and pipelined HTTP/1.1; for multiplexed h2 requests issued within the same
    microsecond the order among those ties is the completion order.
    """
    return sorted(rows, key=lambda r: r.start_us)
