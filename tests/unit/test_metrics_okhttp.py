"""h2lab.metrics.okhttp: the OkHttp client's result JSON into typed values."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from h2lab.clients.okhttp_build import SOURCE_DIR
from h2lab.metrics.okhttp import OkhttpParseError, parse_result

JAVA = SOURCE_DIR / "src" / "main" / "java" / "h2lab" / "okhttp"


def call(index: int, **kw: Any) -> dict[str, Any]:
    """One request as the program writes it: fetched on connection 0 over h2."""
    d: dict[str, Any] = {
        "index": index,
        "url": f"https://o1.h2lab.test/obj/{index}.png",
        "queued_ms": 1.0,
        "dispatched_ms": None,
        "connect_start_ms": None,
        "connect_end_ms": None,
        "request_ms": 10.0 + index,
        "ttfb_ms": 60.0 + index,
        "end_ms": 70.0 + index,
        "connection": 0,
        "protocol": "h2",
        "status": 200,
        "bytes": 1000,
        "error": None,
    }
    return {**d, **kw}


def result(calls: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "client": "h2lab-okhttp",
        "okhttp": "5.5.1",
        "protocol": "h2s",
        "max_requests_per_host": 5,
        "max_requests": 64,
        "tcp_nodelay": False,
        "startup_ms": 400.0,
        "total_ms": 80.0,
        "timed_out": False,
        "connects_started": 1,
        "connects_failed": 0,
        "requests": calls,
        "connections": [
            {
                "id": 0,
                "host": "o1.h2lab.test",
                "address": "10.0.2.1:443",
                "protocol": "h2",
                "first_acquired_ms": 9.5,
                "calls": len(calls),
            }
        ],
    }
    return {**d, **kw}


def test_parses_every_field_into_its_type() -> None:
    first = call(0, connect_start_ms=2.0, connect_end_ms=9.0)
    r = parse_result(json.dumps(result([first, call(1, dispatched_ms=40.5)])))
    assert (r.okhttp_version, r.protocol, r.max_requests_per_host, r.max_requests) == (
        "5.5.1",
        "h2s",
        5,
        64,
    )
    assert (r.startup_ms, r.total_ms, r.timed_out) == (400.0, 80.0, False)
    assert (r.connects_started, r.connects_failed) == (1, 0)
    a, b = r.calls
    assert (a.connect_start_ms, a.connect_end_ms, a.dispatched_ms) == (2.0, 9.0, None)
    assert (b.dispatched_ms, b.request_ms, b.ttfb_ms, b.end_ms) == (40.5, 11.0, 61.0, 71.0)
    assert (b.connection, b.protocol, b.status, b.bytes, b.error) == (0, "h2", 200, 1000, None)
    (conn,) = r.connections
    assert (conn.id, conn.address, conn.protocol, conn.calls) == (0, "10.0.2.1:443", "h2", 2)


def test_a_failed_call_keeps_its_error_and_nulls() -> None:
    failed = call(
        0,
        request_ms=None,
        ttfb_ms=None,
        connection=None,
        protocol=None,
        status=None,
        bytes=None,
        error="java.net.ConnectException: Failed to connect to o1.h2lab.test/10.0.2.1:443",
    )
    (c,) = parse_result(json.dumps(result([failed], connections=[]))).calls
    assert (c.request_ms, c.status, c.bytes, c.connection) == (None, None, None, None)
    assert c.error is not None and c.error.startswith("java.net.ConnectException")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "not JSON"),
        ("{", "not JSON"),
        (json.dumps({"okhttp": "5.5.1"}), "not an h2lab-okhttp result: KeyError"),
        (json.dumps(result([call(0, request_ms="soon")])), "ValueError"),
        (json.dumps(result([call(0)], requests=None)), "TypeError"),
    ],
)
def test_anything_else_is_a_parse_error(text: str, says: str) -> None:
    with pytest.raises(OkhttpParseError, match=says):
        parse_result(text)


def _java_fields(path: Path) -> set[str]:
    """The snake_case JSON names of a Java class's instance fields (Gson's naming policy)."""
    names = re.findall(
        r"^\s+(?:final |volatile )*[\w.<>]+ (\w+)(?: = [^;]+)?;", path.read_text(), re.M
    )
    return {re.sub(r"([A-Z])", r"_\1", n).lower() for n in names}


def test_the_java_records_write_the_fields_this_module_reads() -> None:
    """The program and this parser agree on names: a renamed Java field fails here, not in
    the lab."""
    sample = result([call(0)])
    assert set(sample) - {"requests", "connections"} <= _java_fields(JAVA / "Result.java")
    assert set(sample["requests"][0]) <= _java_fields(JAVA / "CallRecord.java")
    assert set(sample["connections"][0]) <= _java_fields(JAVA / "ConnectionRecord.java")
