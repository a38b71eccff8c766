"""h2lab.metrics.h2load: h2load's stdout summary and its --log-file."""

from __future__ import annotations

from dataclasses import astuple

import pytest

from h2lab.metrics.h2load import (
    H2loadParseError,
    H2loadSummary,
    RequestLog,
    TimeStats,
    in_request_order,
    parse_log,
    parse_summary,
)

# A real summary: h2load 1.52.0 (Debian 12's nghttp2-client), one h2s connection fetching
# index.html (414 B) from nginx over TLS 1.3 on a lab link with no added delay.
STDOUT = """\
starting benchmark...
spawning thread #0: 1 total client(s). 1 total requests
TLS Protocol: TLSv1.3
Cipher: TLS_AES_128_GCM_SHA256
Server Temp Key: X25519 253 bits
Application protocol: h2
progress: 100% done

finished in 4.51ms, 221.78 req/s, 122.58KB/s
requests: 1 total, 1 started, 1 done, 1 succeeded, 0 failed, 0 errored, 0 timeout
status codes: 1 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 566B (566) total, 85B (85) headers (space savings 44.08%), 414B (414) data
                     min         max         mean         sd        +/- sd
time for request:      356us       356us       356us         0us   100.00%
time for connect:     3.53ms      3.53ms      3.53ms         0us   100.00%
time to 1st byte:     3.95ms      3.95ms      3.95ms         0us   100.00%
req/s           :     239.04      239.04      239.04        0.00   100.00%
"""

FAILED = """\
finished in 5.00s, 0.60 req/s, 6.02KB/s
requests: 5 total, 5 started, 5 done, 3 succeeded, 2 failed, 1 errored, 0 timeout
status codes: 3 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 30.10KB (30822) total, 822B (822) headers (space savings 0.00%), 29.30KB (30000) data
"""

# Timing tables of other real summaries (the same h2load, page and server; 3 connections).
# h2s over TLS 1.2 at RTT 1200 ms: a second or more prints in s, the handshake takes three
# round trips (TCP, then TLS 1.2's two) and the first byte one more.
SECONDS = """\
                     min         max         mean         sd        +/- sd
time for request:      1.20s       1.20s       1.20s       273us    66.67%
time for connect:      3.60s       3.60s       3.60s       529us    66.67%
time to 1st byte:      4.80s       4.80s       4.80s       275us    66.67%
"""
# h1c with no added delay: under a millisecond, in whole microseconds.
MICROSECONDS = """\
                     min         max         mean         sd        +/- sd
time for request:      394us       545us       453us        80us    66.67%
time for connect:      266us       411us       327us        75us    66.67%
time to 1st byte:      674us       957us       785us       151us    66.67%
"""
# Connection refused: statistics over no connection print as zeros.
ZEROS = """\
                     min         max         mean         sd        +/- sd
time for request:        0us         0us         0us         0us     0.00%
time for connect:        0us         0us         0us         0us     0.00%
time to 1st byte:        0us         0us         0us         0us     0.00%
"""


def test_parse_summary() -> None:
    assert parse_summary(STDOUT) == H2loadSummary(
        requests_total=1,
        requests_succeeded=1,
        requests_failed=0,
        bytes_total=566,
        header_bytes=85,
        data_bytes=414,
        connect=TimeStats(min_ms=3.53, max_ms=3.53, mean_ms=3.53, sd_ms=0.0),
        first_byte=TimeStats(min_ms=3.95, max_ms=3.95, mean_ms=3.95, sd_ms=0.0),
    )


@pytest.mark.parametrize(
    ("table", "connect", "first_byte"),
    [
        (
            SECONDS,
            TimeStats(min_ms=3600.0, max_ms=3600.0, mean_ms=3600.0, sd_ms=0.529),
            TimeStats(min_ms=4800.0, max_ms=4800.0, mean_ms=4800.0, sd_ms=0.275),
        ),
        (
            MICROSECONDS,
            TimeStats(min_ms=0.266, max_ms=0.411, mean_ms=0.327, sd_ms=0.075),
            TimeStats(min_ms=0.674, max_ms=0.957, mean_ms=0.785, sd_ms=0.151),
        ),
    ],
    ids=["seconds", "microseconds"],
)
def test_parse_summary_reads_connect_and_first_byte_in_each_unit(
    table: str, connect: TimeStats, first_byte: TimeStats
) -> None:
    s = parse_summary(FAILED + table)
    assert s.connect is not None and s.first_byte is not None
    assert astuple(s.connect) == pytest.approx(astuple(connect))
    assert astuple(s.first_byte) == pytest.approx(astuple(first_byte))


def test_parse_summary_without_timed_connections_has_no_times() -> None:
    s = parse_summary(FAILED + ZEROS)
    assert s.connect is None and s.first_byte is None


def test_parse_summary_without_timing_table_has_no_times() -> None:
    s = parse_summary(FAILED)
    assert s.connect is None and s.first_byte is None
    assert parse_summary(STDOUT.replace("time for connect:", "time for konnect:")).connect is None


def test_parse_summary_counts_errored_once_as_failed() -> None:
    """h2load's ``errored`` is a subset of its ``failed`` (h2load(1), OUTPUT)."""
    s = parse_summary(FAILED)
    assert (s.requests_total, s.requests_succeeded, s.requests_failed) == (5, 3, 2)
    assert (s.bytes_total, s.header_bytes, s.data_bytes) == (30822, 822, 30000)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "connect: Connection refused\n",
        STDOUT.replace("traffic:", "traffik:"),
        STDOUT.replace("requests: 1 total", "requests: one total"),
    ],
)
def test_parse_summary_without_summary(text: str) -> None:
    with pytest.raises(H2loadParseError, match="no summary in h2load output"):
        parse_summary(text)


def test_parse_log() -> None:
    text = "1700000000000100\t200\t1500\n\n1700000000000050\t304\t2500\n"
    rows = parse_log(text)
    assert rows == [
        RequestLog(start_us=1700000000000100, status=200, duration_us=1500),
        RequestLog(start_us=1700000000000050, status=304, duration_us=2500),
    ]
    assert rows[0].end_us == 1700000000001600
    assert rows[1].end_us == 1700000000002550


def test_parse_log_empty() -> None:
    assert parse_log("") == []


def test_parse_log_bad_line_names_its_number() -> None:
    with pytest.raises(H2loadParseError, match="log line 2: expected 3 tab-separated fields"):
        parse_log("1\t200\t3\n1 200 3\n")


def test_parse_log_non_numeric_field() -> None:
    with pytest.raises(ValueError, match="invalid literal"):
        parse_log("1\tOK\t3\n")


def test_in_request_order_sorts_by_start_and_is_stable() -> None:
    a = RequestLog(300, 200, 10)
    b = RequestLog(100, 200, 50)
    c = RequestLog(200, 200, 5)
    d = RequestLog(100, 404, 1)  # tie with b: keeps log (completion) order
    rows = [a, b, c, d]
    assert in_request_order(rows) == [b, d, c, a]
    assert rows == [a, b, c, d]  # input not modified
