"""h2lab.clients.h2load: the pure parts — connection plan, URLs, h2load argv and the HAR."""

from __future__ import annotations

from pathlib import Path

import pytest

from h2lab import clients
from h2lab.clients import h2load as h2load_client
from h2lab.clients.h2load import (
    BROWSER_CONNECTIONS_PER_HOST,
    Connection,
    H2load,
    argv_for,
    entry_connection,
    h2load_har,
    plan,
)
from h2lab.metrics.h2load import RequestLog
from h2lab.pages import Page, Resource
from h2lab.pages.synthetic import layout, parse
from h2lab.spec.protocols import url_for
from tests.har_schema import assert_valid_har


def page(spec: str, entry_index: int = 0) -> Page:
    origins, resources, _ = layout(parse(spec))
    return Page(
        name=spec,
        origins=origins,
        resources=resources,
        docroot=Path("/nowhere"),
        digest="d",
        entry_index=entry_index,
    )


def paths(conn: Connection) -> list[str]:
    return [r.path for r in conn.resources]


@pytest.mark.parametrize("protocol", ["h1c", "h1s"])
def test_plan_h1_six_connections_round_robin(protocol: str) -> None:
    p = page("synthetic:n=9,size=1KB,origins=1")  # index + 9 objects = 10 resources
    conns = plan(p, protocol)
    assert len(conns) == BROWSER_CONNECTIONS_PER_HOST == 6
    assert [c.id for c in conns] == [f"o1.h2lab.test#{i}" for i in range(6)]
    assert all(c.in_flight == 1 for c in conns)
    assert paths(conns[0]) == ["/index.html", "/obj/00005.png"]
    assert paths(conns[1]) == ["/obj/00000.png", "/obj/00006.png"]
    assert paths(conns[3]) == ["/obj/00002.png", "/obj/00008.png"]
    assert paths(conns[4]) == ["/obj/00003.png"]
    assert paths(conns[5]) == ["/obj/00004.png"]
    fetched = sorted(r.path for c in conns for r in c.resources)
    assert fetched == sorted(r.path for r in p.resources)


def test_plan_h1_fewer_resources_than_connections() -> None:
    p = page("synthetic:n=2,size=1KB,origins=1")
    conns = plan(p, "h1s")
    assert [paths(c) for c in conns] == [["/index.html"], ["/obj/00000.png"], ["/obj/00001.png"]]


@pytest.mark.parametrize("protocol", ["h1p", "h2c", "h2s"])
def test_plan_one_connection_per_origin_all_in_flight(protocol: str) -> None:
    p = page("synthetic:n=5,size=1KB,origins=2")
    conns = plan(p, protocol)
    assert [c.id for c in conns] == ["o1.h2lab.test#0", "o2.h2lab.test#0"]
    assert paths(conns[0]) == ["/index.html", "/obj/00000.png", "/obj/00002.png", "/obj/00004.png"]
    assert conns[0].in_flight == 4
    assert paths(conns[1]) == ["/obj/00001.png", "/obj/00003.png"]
    assert conns[1].in_flight == 2


def test_plan_skips_origins_without_resources() -> None:
    p = page("synthetic:n=2,size=1KB,origins=3")  # o3 serves nothing
    assert p.resources_of("o3.h2lab.test") == []
    assert [c.origin for c in plan(p, "h2s")] == ["o1.h2lab.test", "o2.h2lab.test"]
    assert [c.origin for c in plan(p, "h1s")] == ["o1.h2lab.test", "o1.h2lab.test", "o2.h2lab.test"]


@pytest.mark.parametrize("protocol", ["h1c", "h1p", "h1s", "h2c", "h2s"])
def test_entry_connection_is_the_one_fetching_the_entry_document(protocol: str) -> None:
    """connect_ms and ttfb_ms are those of this connection: a browser's first."""
    p = page("synthetic:n=5,size=1KB,origins=2")
    conns = plan(p, protocol)
    assert entry_connection(conns, p) == 0
    assert conns[0].resources[0] == p.entry


@pytest.mark.parametrize(("protocol", "index"), [("h1s", 4), ("h2s", 1)])
def test_entry_connection_of_an_entry_on_another_origin(protocol: str, index: int) -> None:
    p = page("synthetic:n=5,size=1KB,origins=2", entry_index=2)  # o2's first resource
    assert p.entry.origin == "o2.h2lab.test"
    conns = plan(p, protocol)  # h1s: o1's 4 resources on 4 connections, then o2's
    assert entry_connection(conns, p) == index
    assert conns[index].resources[0] == p.entry


RES = Resource("o2.h2lab.test", "/obj/00001.png", 1000, "application/octet-stream")


@pytest.mark.parametrize(
    ("protocol", "url"),
    [
        ("h1c", "http://o2.h2lab.test/obj/00001.png"),
        ("h1p", "http://o2.h2lab.test/obj/00001.png"),
        ("h1s", "https://o2.h2lab.test/obj/00001.png"),
        ("h2s", "https://o2.h2lab.test/obj/00001.png"),
        ("h2c", "http://o2.h2lab.test:8080/obj/00001.png"),
    ],
)
def test_url_for(protocol: str, url: str) -> None:
    assert url_for(RES, protocol) == url


def test_argv_for_h2s() -> None:
    p = page("synthetic:n=2,size=1KB,origins=1")
    (conn,) = plan(p, "h2s")
    assert argv_for(conn, "h2s", "/tmp/a/h2load-0.log") == [
        "h2load",
        "--npn-list=h2",
        "-c1",
        "-t1",
        "-n3",
        "-m3",
        "--log-file=/tmp/a/h2load-0.log",
        "https://o1.h2lab.test/index.html",
        "https://o1.h2lab.test/obj/00000.png",
        "https://o1.h2lab.test/obj/00001.png",
    ]


@pytest.mark.parametrize(
    ("protocol", "flags", "m", "scheme_host"),
    [
        ("h1c", ["--h1"], 1, "http://o1.h2lab.test"),
        ("h1s", ["--h1"], 1, "https://o1.h2lab.test"),
        ("h1p", ["--h1"], 3, "http://o1.h2lab.test"),
        ("h2c", ["--no-tls-proto=h2c"], 3, "http://o1.h2lab.test:8080"),
    ],
)
def test_argv_for_other_protocols(
    protocol: str, flags: list[str], m: int, scheme_host: str
) -> None:
    p = page("synthetic:n=2,size=1KB,origins=1")
    conn = plan(p, protocol)[0]
    argv = argv_for(conn, protocol, "log")
    n = len(conn.resources)
    assert argv[: 1 + len(flags)] == ["h2load", *flags]
    assert argv[1 + len(flags) : 6 + len(flags)] == [
        "-c1",
        "-t1",
        f"-n{n}",
        f"-m{m}",
        "--log-file=log",
    ]
    assert argv[6 + len(flags) :] == [f"{scheme_host}{r.path}" for r in conn.resources]


def test_adapter_declares_every_protocol() -> None:
    assert h2load_client.H2load.protocols == frozenset({"h1c", "h1p", "h1s", "h2c", "h2s"})
    assert h2load_client.H2load.name == "h2load"


def test_clients_option_runs_n_clients_per_process_with_n_times_the_requests() -> None:
    p = page("synthetic:n=2,size=1KB,origins=1")
    (conn,) = plan(p, "h2c")
    argv = argv_for(conn, "h2c", "log", clients=40)
    assert argv[2:6] == ["-c40", "-t1", "-n120", "-m3"]
    adapter = clients.get("h2load:clients=40")
    assert isinstance(adapter, H2load) and adapter.clients == 40


def test_per_host_caps_h1_connections_and_h2_streams() -> None:
    # OkHttp's dispatcher: at most 5 requests per host at once, HTTP/2 too
    p = page("synthetic:n=511,size=1KB,origins=1")  # index + 511 objects = 512 resources
    h1 = plan(p, "h1s", per_host=5)
    assert len(h1) == 5 and all(c.in_flight == 1 for c in h1)
    assert sum(len(c.resources) for c in h1) == 512
    (h2,) = plan(p, "h2s", per_host=5)
    assert h2.in_flight == 5 and len(h2.resources) == 512
    assert argv_for(h2, "h2s", "log")[3:6] == ["-t1", "-n512", "-m5"]
    (small,) = plan(page("synthetic:n=2,size=1KB,origins=1"), "h2s", per_host=5)
    assert small.in_flight == 3  # never more than the resources
    adapter = clients.get("h2load:per_host=5,clients=2")
    assert isinstance(adapter, H2load) and (adapter.per_host, adapter.clients) == (5, 2)
    assert clients.get("h2load").per_host is None  # type: ignore[attr-defined]


def test_har_of_a_load_holds_what_h2loads_log_knows() -> None:
    """Two h1s connections, two requests each: every request an entry with its URL, status,
    type and size; the whole duration is ``wait``; each connection's first request carries the
    connection's set-up as ``connect`` and starts that much earlier."""
    p = page("synthetic:n=3,size=1KB,origins=1")
    conns = plan(p, "h1s", per_host=2)
    t0_us = 1_795_000_000_000_000
    logs = [
        [RequestLog(t0_us + 30_000, 200, 20_000), RequestLog(t0_us + 50_000, 200, 10_000)],
        [RequestLog(t0_us + 31_000, 200, 15_000), RequestLog(t0_us + 46_000, 200, 5_000)],
    ]
    fetched = [(conns[0], logs[0], 30.0), (conns[1], logs[1], 31.0)]
    har = h2load_har(url_for(p.entry, "h1s"), "h1s", fetched)
    assert_valid_har(har)
    entries = har["log"]["entries"]
    assert [e["request"]["url"] for e in entries] == [
        url_for(r, "h1s") for r in (conns[0].resources[0], conns[1].resources[0],
                                     conns[1].resources[1], conns[0].resources[1])
    ]  # fmt: skip
    first = entries[0]
    assert first["startedDateTime"] == "2026-11-18T11:06:40.000Z"  # the connect() call
    assert first["timings"] == {
        "blocked": -1, "dns": -1, "connect": 30.0, "ssl": -1, "send": 0.0, "wait": 20.0,
        "receive": 0.0,
    }  # fmt: skip
    assert first["time"] == 50.0 and first["connection"] == conns[0].id
    reused = entries[3]
    assert reused["startedDateTime"] == "2026-11-18T11:06:40.050Z"
    assert (reused["timings"]["connect"], reused["time"]) == (-1, 10.0)
    content = first["response"]["content"]
    res = conns[0].resources[0]
    assert content == {"size": res.size_bytes, "mimeType": res.content_type}
    assert {e["response"]["httpVersion"] for e in entries} == {"HTTP/1.1"}
    page_ = har["log"]["pages"][0]
    assert page_["startedDateTime"] == first["startedDateTime"]
    assert page_["pageTimings"] == {"onContentLoad": -1, "onLoad": -1, "_pdt_ms": 30.0}
