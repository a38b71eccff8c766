"""h2lab.clients.okhttp: the pure parts — options, the plan, the result -> LoadResult, and what
is refused before a JVM starts. Loading a page: tests/integration/test_okhttp.py."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from h2lab import clients
from h2lab.clients import LoadContext
from h2lab.clients import okhttp as okhttp_client
from h2lab.clients.okhttp import (
    DEFAULT_MAX,
    DEFAULT_PER_HOST,
    PROTOCOLS,
    Limits,
    Okhttp,
    plan_json,
    plan_resources,
    to_load_result,
)
from h2lab.clients.okhttp_build import SOURCE_DIR
from h2lab.errors import SpecError, TrialFailed
from h2lab.metrics.okhttp import parse_result
from h2lab.pages import Page
from h2lab.pages.synthetic import layout, parse
from h2lab.runner.levels import validate_factors
from h2lab.spec.protocols import H1C, H1S, H2C, H2S
from tests.unit.test_metrics_okhttp import call, result

HOST = "o1.h2lab.test"
HOSTS = {HOST: "10.0.2.1"}


def page(spec: str = "synthetic:n=3,size=1KB,origins=1", entry_index: int = 0) -> Page:
    origins, resources, _ = layout(parse(spec))
    return Page(
        name=spec,
        origins=origins,
        resources=resources,
        docroot=Path("/nowhere"),
        digest="d",
        entry_index=entry_index,
    )


def test_options_default_to_okhttps_dispatcher() -> None:
    adapter = clients.get("okhttp")
    assert isinstance(adapter, Okhttp)
    assert adapter.limits == Limits(DEFAULT_PER_HOST, DEFAULT_MAX, False) == Limits(5, 64, False)
    got = clients.get("okhttp:per_host=2,max=10,nodelay=1").limits  # type: ignore[attr-defined]
    assert got == Limits(2, 10, True)
    assert clients.get("okhttp:per_host=64").limits == Limits(64, 64)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("okhttp:clients=2", "no option 'clients' (okhttp takes: per_host, max, nodelay)"),
        ("okhttp:per_host=0", "per_host: expected an integer 1..1000, got '0'"),
        ("okhttp:per_host=x", "per_host: expected an integer 1..1000, got 'x'"),
        ("okhttp:max=1001", "max: expected an integer 1..1000, got '1001'"),
        ("okhttp:per_host=65", "per_host (65) must not exceed max (64)"),
        ("okhttp:per_host=6,max=5", "per_host (6) must not exceed max (5)"),
        ("okhttp:nodelay=yes", "nodelay: expected 0 or 1, got 'yes'"),
    ],
)
def test_bad_options_are_spec_errors_naming_the_field(spec: str, says: str) -> None:
    with pytest.raises(SpecError) as exc:
        clients.get(spec, "x.toml", "factors.client[1]")
    assert (exc.value.source, exc.value.field) == ("x.toml", "factors.client[1]")
    assert exc.value.reason.startswith(f"{spec}: {says}")


@pytest.mark.parametrize("protocol", ["h1p", "h3"])
def test_pipelining_and_h3_are_refused_with_the_reason(protocol: str) -> None:
    assert frozenset({H1C, H1S, H2S, H2C}) == PROTOCOLS
    raw = {
        "protocol": ["h2s", protocol],
        "network": ["rtt=50ms"],
        "page": ["synthetic:n=2,size=1KB,origins=1"],
        "server": ["origin"],  # serves both
        "client": ["okhttp"],
    }
    with pytest.raises(SpecError) as exc:
        validate_factors("e.toml", raw)
    assert exc.value.field == "factors.client[0]"
    assert exc.value.reason == (
        f"okhttp cannot run protocol {protocol} (OkHttp speaks HTTP/1.1 and HTTP/2 over TCP: "
        "it does not pipeline and has no HTTP/3)"
    )


def test_load_refuses_h3_before_building_or_starting_a_jvm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_jvm() -> Path:
        raise AssertionError("the jar was asked for")

    monkeypatch.setattr(okhttp_client, "ensure_built", no_jvm)
    ctx = LoadContext("ns", tmp_path, 10, hosts=HOSTS, tls_dir=tmp_path)
    with pytest.raises(TrialFailed, match="okhttp cannot run protocol h3"):
        Okhttp().load(page(), "h3", ctx)
    assert list(tmp_path.iterdir()) == []


def test_plan_lists_the_entry_first_then_page_order() -> None:
    p = page("synthetic:n=3,size=1KB,origins=1", entry_index=2)
    order = [r.path for r in plan_resources(p)]
    assert order[0] == p.entry.path == p.resources[2].path
    assert sorted(order) == sorted(r.path for r in p.resources) and len(order) == 4


def test_plan_json_for_h2s_and_h2c() -> None:
    p = page()
    ca = Path("/run/h2lab/x/tls/ca.pem")
    plan = plan_json(p, H2S, Limits(5, 64), HOSTS, ca, 60)
    assert plan == {
        "protocol": "h2s",
        "urls": [f"https://{HOST}{r.target}" for r in p.resources],
        "hosts": HOSTS,
        "ca_pem": str(ca),
        "max_requests_per_host": 5,
        "max_requests": 64,
        "tcp_nodelay": False,
        "timeout_ms": 60_000,
    }
    h2c = plan_json(p, H2C, Limits(3, 9, True), HOSTS, None, 0.5)
    assert h2c["urls"][0] == f"http://{HOST}:8080/index.html"
    assert (h2c["ca_pem"], h2c["max_requests_per_host"], h2c["max_requests"]) == (None, 3, 9)
    assert (h2c["tcp_nodelay"], h2c["timeout_ms"]) == (True, 500)


def test_plan_resolves_only_through_the_host_map() -> None:
    ip = "10.9.2.1"  # an IP-literal origin is its own address
    by_name = page("synthetic:n=1,size=1KB,origins=1")
    moved = replace(
        by_name, origins=(ip,), resources=tuple(replace(r, origin=ip) for r in by_name.resources)
    )
    assert plan_json(moved, H1C, Limits(), {}, None, 1)["hosts"] == {ip: ip}
    with pytest.raises(TrialFailed, match=f"has no {HOST}"):
        plan_json(page(), H1C, Limits(), {"other.test": "10.0.2.9"}, None, 1)


def test_the_plan_keys_are_the_java_plan_fields() -> None:
    java = (SOURCE_DIR / "src/main/java/h2lab/okhttp/Plan.java").read_text()
    fields = {
        re.sub(r"([A-Z])", r"_\1", f).lower()
        for f in re.findall(r"^  \w[\w<>, ]* (\w+)(?: = \d+)?;", java, re.M)
    }
    assert set(plan_json(page(), H2S, Limits(), HOSTS, Path("/ca.pem"), 1)) == fields


def _calls(n: int, **kw: Any) -> list[dict[str, Any]]:
    return [call(i, url=f"u{i}", **kw) for i in range(n)]


def _load(calls: list[dict[str, Any]], protocol: str = H2S, **kw: Any) -> Any:
    p = page("synthetic:n=2,size=1KB,origins=1")
    parsed = parse_result(json.dumps(result(calls, **kw)))
    return to_load_result(parsed, plan_resources(p), protocol, 30)


def test_pdt_runs_from_the_first_request_written_to_the_last_byte() -> None:
    calls = _calls(3)
    calls[0].update(connect_start_ms=2.0, connect_end_ms=8.0, request_ms=9.0, ttfb_ms=40.0)
    calls[2].update(request_ms=41.0, ttfb_ms=90.0, end_ms=95.5)
    calls[1].update(connection=1, protocol="h2")
    r = _load(calls)
    assert r.pdt_ms == pytest.approx(95.5 - 9.0)
    assert (r.connect_ms, r.ttfb_ms) == (pytest.approx(6.0), pytest.approx(38.0))
    assert r.body_bytes == 3000 and r.request_header_bytes is None
    rows = {row.url: row for row in r.resources}
    assert [row.url for row in r.resources] == ["u0", "u1", "u2"]  # by start
    assert (rows["u0"].start_ms, rows["u0"].ttfb_ms, rows["u0"].end_ms) == (0.0, 31.0, 61.0)
    assert rows["u2"].start_ms == 32.0 and rows["u2"].end_ms == pytest.approx(86.5)
    assert (rows["u1"].connection, rows["u1"].protocol, rows["u1"].status) == (
        f"{HOST}#1",
        "h2",
        200,
    )


def test_rows_name_prior_knowledge_h2_and_entry_without_its_own_connect() -> None:
    r = _load(_calls(3, protocol="h2_prior_knowledge"), H2C)
    assert {row.protocol for row in r.resources} == {"h2"}
    assert (r.connect_ms, r.ttfb_ms) == (None, None)  # the entry took a pooled connection


@pytest.mark.parametrize(
    ("change", "protocol", "says"),
    [
        ({"error": "java.net.ConnectException: Failed to connect"}, H2S,
         "okhttp: 1 of 3 requests failed, u1: java.net.ConnectException: Failed to connect"),
        ({"status": 404}, H2S, "okhttp: 1 of 3 requests with bad statuses [('u1', 404)]"),
        ({"protocol": "http/1.1"}, H2S, "okhttp: asked h2s, but u1 went over http/1.1"),
        ({}, H1S, "okhttp: asked h1s, but u0 went over h2"),
    ],
)  # fmt: skip
def test_a_request_that_did_not_count_fails_the_trial(
    change: dict[str, Any], protocol: str, says: str
) -> None:
    calls = _calls(3)
    calls[1].update(change)
    with pytest.raises(TrialFailed) as exc:
        _load(calls, protocol)
    assert str(exc.value) == says


def test_a_load_not_done_in_time_fails_saying_how_many() -> None:
    calls = _calls(3)
    for c in calls[1:]:
        c.update(end_ms=None, error="not finished within the trial's 30000 ms")
    with pytest.raises(TrialFailed, match=r"^okhttp: 2 of 3 requests not finished within 30 s$"):
        _load(calls, timed_out=True)
    with pytest.raises(TrialFailed, match="2 results for 3 requests"):
        _load(_calls(2))
