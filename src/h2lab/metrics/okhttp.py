"""The OkHttp client's result (``okhttp/``, written as ``okhttp-result.json``), parsed without
I/O into typed values.

The program writes one JSON object: the versions, the Dispatcher's limits, ``startup_ms`` (JVM
start to the trial clock's start, outside every measured time), ``total_ms``, ``timed_out``,
``connects_started``/``connects_failed`` (TCP connections the calls started), one object per
request in plan order and one per connection in the order the calls first acquired them. Every
time is ms from the trial clock's start, which is when the first call was enqueued (after the
client was built); a missing event is ``null``. The event behind each time is OkHttp's
``EventListener`` callback named in :class:`CallTimes`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class OkhttpParseError(ValueError):
    """The result is not what the program writes."""


@dataclass(frozen=True)
class CallTimes:
    """One request of the plan, as its call went (times in ms from the trial clock's start)."""

    index: int
    """its place in the plan's URL list"""
    url: str
    queued_ms: float | None
    """``callStart``: enqueued"""
    dispatched_ms: float | None
    """``dispatcherQueueEnd``: left the Dispatcher's queue (None: it never waited there)"""
    connect_start_ms: float | None
    """``connectStart`` of a connection this call opened (None: it took a pooled one)"""
    connect_end_ms: float | None
    """``connectEnd`` (TCP, and for TLS the handshake, done)"""
    request_ms: float | None
    """``requestHeadersStart``: the request is being written on its connection"""
    ttfb_ms: float | None
    """``responseHeadersStart``: the response headers have arrived"""
    end_ms: float | None
    """``responseBodyEnd``: the body's last byte read (else when its callback ended)"""
    connection: int | None
    """id of the connection the call used last (ids number connections in first use order)"""
    protocol: str | None
    """OkHttp's name for that connection's protocol: ``http/1.1``, ``h2``, ``h2_prior_knowledge``"""
    status: int | None
    bytes: int | None
    """body bytes read"""
    error: str | None
    """the exception that failed the call (class: message); None: it finished"""


@dataclass(frozen=True)
class ConnectionInfo:
    id: int
    host: str
    address: str
    """``ip:port``"""
    protocol: str
    first_acquired_ms: float
    calls: int
    """how many of the plan's calls acquired it"""


@dataclass(frozen=True)
class OkhttpResult:
    okhttp_version: str
    protocol: str
    max_requests_per_host: int
    max_requests: int
    startup_ms: float
    """JVM start to the trial clock's start (not in any measured time)"""
    total_ms: float
    timed_out: bool
    connects_started: int
    connects_failed: int
    calls: tuple[CallTimes, ...]
    connections: tuple[ConnectionInfo, ...]


def _opt_float(d: Mapping[str, Any], key: str) -> float | None:
    v = d.get(key)
    return None if v is None else float(v)


def _opt_int(d: Mapping[str, Any], key: str) -> int | None:
    v = d.get(key)
    return None if v is None else int(v)


def _call(d: Mapping[str, Any]) -> CallTimes:
    return CallTimes(
        index=int(d["index"]),
        url=str(d["url"]),
        queued_ms=_opt_float(d, "queued_ms"),
        dispatched_ms=_opt_float(d, "dispatched_ms"),
        connect_start_ms=_opt_float(d, "connect_start_ms"),
        connect_end_ms=_opt_float(d, "connect_end_ms"),
        request_ms=_opt_float(d, "request_ms"),
        ttfb_ms=_opt_float(d, "ttfb_ms"),
        end_ms=_opt_float(d, "end_ms"),
        connection=_opt_int(d, "connection"),
        protocol=d.get("protocol"),
        status=_opt_int(d, "status"),
        bytes=_opt_int(d, "bytes"),
        error=d.get("error"),
    )


def _connection(d: Mapping[str, Any]) -> ConnectionInfo:
    return ConnectionInfo(
        id=int(d["id"]),
        host=str(d["host"]),
        address=str(d["address"]),
        protocol=str(d["protocol"]),
        first_acquired_ms=float(d["first_acquired_ms"]),
        calls=int(d["calls"]),
    )


def parse_result(text: str) -> OkhttpResult:
    """The program's result JSON -> :class:`OkhttpResult`; anything else is an
    :class:`OkhttpParseError` naming what is wrong."""
    try:
        d = json.loads(text)
        calls = tuple(_call(c) for c in d["requests"])
        return OkhttpResult(
            okhttp_version=str(d["okhttp"]),
            protocol=str(d["protocol"]),
            max_requests_per_host=int(d["max_requests_per_host"]),
            max_requests=int(d["max_requests"]),
            startup_ms=float(d["startup_ms"]),
            total_ms=float(d["total_ms"]),
            timed_out=bool(d["timed_out"]),
            connects_started=int(d["connects_started"]),
            connects_failed=int(d["connects_failed"]),
            calls=calls,
            connections=tuple(_connection(c) for c in d["connections"]),
        )
    except json.JSONDecodeError as exc:
        raise OkhttpParseError(f"not JSON: {exc}") from exc
    except (KeyError, TypeError, ValueError) as exc:
        raise OkhttpParseError(f"not an h2lab-okhttp result: {type(exc).__name__} {exc}") from exc
