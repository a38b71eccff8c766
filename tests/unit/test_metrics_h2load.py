"""h2lab.metrics.h2load: h2load's stdout summary and its --log-file."""

from __future__ import annotations

import pytest

from h2lab.metrics.h2load import (
    H2loadParseError,
    H2loadSummary,
    RequestLog,
    in_request_order,
    parse_log,
    parse_summary,
)

STDOUT = """\
starting benchmark...
spawning thread #0: 1 total client(s). 10 total requests
TLS Protocol: TLSv1.3
Cipher: TLS_AES_256_GCM_SHA384
Server Temp Key: X25519 253 bits
Application protocol: h2
progress: 10% done
progress: 100% done

finished in 412.35ms, 24.25 req/s, 238.79KB/s
requests: 10 total, 10 started, 10 done, 10 succeeded, 0 failed, 0 errored, 0 timeout
status codes: 10 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 98.47KB (100830) total, 310B (310) headers (space savings 90.26%), 97.66KB (100000) data
                     min         max         mean         sd        +/- sd
time for request:   150.12ms    380.45ms    265.30ms     70.11ms    60.00%
time for connect:    30.05ms     30.05ms     30.05ms         0us   100.00%
time to 1st byte:   180.33ms    180.33ms    180.33ms         0us   100.00%
req/s           :      24.26       24.26       24.26        0.00   100.00%
"""

FAILED = """\
finished in 5.00s, 0.60 req/s, 6.02KB/s
requests: 5 total, 5 started, 5 done, 3 succeeded, 1 failed, 1 errored, 0 timeout
status codes: 3 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 30.10KB (30822) total, 822B (822) headers (space savings 0.00%), 29.30KB (30000) data
"""


def test_parse_summary() -> None:
    assert parse_summary(STDOUT) == H2loadSummary(
        requests_total=10,
        requests_succeeded=10,
        requests_failed=0,
        bytes_total=100830,
        header_bytes=310,
        data_bytes=100000,
    )


def test_parse_summary_counts_failed_and_errored() -> None:
    s = parse_summary(FAILED)
    assert (s.requests_total, s.requests_succeeded, s.requests_failed) == (5, 3, 2)
    assert (s.bytes_total, s.header_bytes, s.data_bytes) == (30822, 822, 30000)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "connect: Connection refused\n",
        STDOUT.replace("traffic:", "traffik:"),
        STDOUT.replace("requests: 10 total", "requests: ten total"),
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
