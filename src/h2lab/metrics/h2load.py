"""h2load's summary (stdout) and its ``--log-file`` (one line per request).

The summary's timing table (``time for request``, ``time for connect``, ``time to 1st byte``,
each ``min max mean sd +/- sd``) is over h2load's clients, one TCP connection each (a client
that reconnects keeps its last connection's times). From h2load's source (nghttp2
``src/h2load.cc``, ``Client::connect``, ``connection_made``; the session files'
``record_ttfb`` calls), per connection:

* ``time for connect``: from just before h2load creates the socket and calls ``connect()`` to
  the connection being ready for requests: the TCP handshake done (``h1c``/``h2c``: one round
  trip), or for TLS, the TLS handshake done too (``SSL_do_handshake`` returned; TLS 1.3 one
  more round trip, TLS 1.2 two). Requests are sent after it: h2load's request log and
  ``time for request`` start there.
* ``time to 1st byte``: from the same start to the first response body byte h2load read on the
  connection (decrypted, for TLS), or to the end of the first HTTP/2 response without a body
  (HEADERS with END_STREAM); not the first header byte. An HTTP/1.1 connection whose responses
  have no body records none.

Values are printed as ``830us`` (whole microseconds), ``30.05ms``, ``1.23s`` (two decimals: a
time of a second or more has 10 ms resolution). Statistics over no connection print as zeros.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class TimeStats:
    """One line of the summary's timing table, in milliseconds, over h2load's connections."""

    min_ms: float
    max_ms: float
    mean_ms: float
    sd_ms: float
    """population standard deviation (0 for one connection)"""


@dataclass(frozen=True)
class H2loadSummary:
    requests_total: int
    requests_succeeded: int
    """completed with a 2xx or 3xx status"""
    requests_failed: int
    """the rest of those done: another status, or (h2load's ``errored``, a subset it counts in
    ``failed`` too) a network error or a reset stream"""
    bytes_total: int
    """all bytes h2load received (TLS/TCP payload it read)"""
    header_bytes: int
    """response header bytes as received (HPACK-compressed for h2)"""
    data_bytes: int
    """response body bytes"""
    connect: TimeStats | None = None
    """``time for connect`` (see the module's docstring); None when h2load printed none or
    timed no connection (all zeros)"""
    first_byte: TimeStats | None = None
    """``time to 1st byte``, from the same start as ``connect``; None as for ``connect``"""


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
_DURATION = r"(\d+(?:\.\d+)?)(us|ms|s)"
_PER_MS = {"us": 1000.0, "ms": 1.0, "s": 0.001}


def _timing_line(label: str) -> re.Pattern[str]:
    """``<label>: min max mean sd +/-sd%`` (the label as h2load prints it, padding aside)."""
    stats = r"\s+".join([_DURATION] * 4)
    return re.compile(rf"^{re.escape(label)}\s*:\s+{stats}\s+[\d.]+%\s*$", re.MULTILINE)


_CONNECT = _timing_line("time for connect")
_FIRST_BYTE = _timing_line("time to 1st byte")


def _duration_ms(value: str, unit: str) -> float:
    """One of h2load's printed durations (``830`` ``us``, ``30.05`` ``ms``, ``1.23`` ``s``)
    in milliseconds."""
    return float(value) / _PER_MS[unit]


def _time_stats(pattern: re.Pattern[str], stdout: str) -> TimeStats | None:
    m = pattern.search(stdout)
    if m is None:
        return None
    g = m.groups()
    lo, hi, mean, sd = (_duration_ms(g[i], g[i + 1]) for i in range(0, 8, 2))
    if lo == hi == mean == 0:
        return None  # h2load's statistics over no sample
    return TimeStats(min_ms=lo, max_ms=hi, mean_ms=mean, sd_ms=sd)


def parse_summary(stdout: str) -> H2loadSummary:
    req = _REQ.search(stdout)
    traffic = _TRAFFIC.search(stdout)
    if not req or not traffic:
        raise H2loadParseError(f"no summary in h2load output: {stdout.strip()[-300:]!r}")
    return H2loadSummary(
        requests_total=int(req.group(1)),
        requests_succeeded=int(req.group(2)),
        requests_failed=int(req.group(3)),
        bytes_total=int(traffic.group(1)),
        header_bytes=int(traffic.group(2)),
        data_bytes=int(traffic.group(3)),
        connect=_time_stats(_CONNECT, stdout),
        first_byte=_time_stats(_FIRST_BYTE, stdout),
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
