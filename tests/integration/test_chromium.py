"""Chromium through the lab: isolation between trials, SpeedIndex against an analytic value,
the lower bound, and failed trials (timeout, crash) that do not stop the next one."""

from __future__ import annotations

import dataclasses
import functools
import json
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from h2lab import clients, procs
from h2lab.analysis.lower_bound import fetch_lower_bound_ms, handshake_rtts
from h2lab.artifacts import ARTIFACTS_DIR, PAGE_HAR, RESULTS_DB, VISUAL_PROGRESS
from h2lab.clients import LoadContext
from h2lab.errors import TrialFailed
from h2lab.net import netns
from h2lab.net.lab import Lab, Link
from h2lab.pages import Page, Resource, resolve_page
from h2lab.spec.network import parse_network
from h2lab.spec.tcp import TcpSettings
from tests.har_schema import assert_valid_har_file
from tests.integration.conftest import run_experiment

HERE = Path(__file__).parent
VIS_HOST = "vis.h2lab.test"
BEACON_HOST = "beacon.h2lab.test"
# Half of the desktop viewport (1366 x 768) each: completeness goes 0 -> 50% -> 100%.
TWO_HALVES = """<!doctype html><html><head><meta charset=utf-8><link rel="icon" href="data:,">
<style>html,body{margin:0;overflow:hidden;background:#fff}
img{display:block;float:left;width:683px;height:768px;image-rendering:pixelated}</style>
</head><body><img src="/a.png?hold=600&rgb=cc0000" alt="" elementtiming="a">
<img src="/b.png?hold=1600&rgb=0000cc" alt="" elementtiming="b"></body></html>"""
AT_ONCE = """<!doctype html><html><head><meta charset=utf-8><link rel="icon" href="data:,">
<style>html,body{margin:0;overflow:hidden}</style></head>
<body><div style="width:1366px;height:768px;background:#0a6"></div></body></html>"""
NEVER = """<!doctype html><html><head><link rel="icon" href="data:,"></head><body>
<img src="/x.png?hold=30000" alt=""></body></html>"""
BROKEN = """<!doctype html><html><head><link rel="icon" href="data:,"></head><body>
<img src="/x.png?hold=30000" alt=""><img src="/y.png?drop=1" alt=""></body></html>"""
DROPPED = """<!doctype html><html><head><link rel="icon" href="data:,"></head><body>
<img src="/x.png" alt=""><img src="/y.png?drop=1" alt=""></body></html>"""
BEACON = """<!doctype html><html><head><link rel="icon" href="data:,"></head><body>
<img src="/x.png" alt=""><img src="http://{BEACON_HOST}/b.json" alt=""></body></html>"""
SLOW = """<!doctype html><html><head><link rel="icon" href="data:,"></head><body>
<img src="/x.png?hold=8000" alt=""></body></html>"""


@pytest.fixture
def slow_lab(tmp_path: Path) -> Iterator[tuple[Lab, Link, Path]]:
    docroot = tmp_path / "www"
    docroot.mkdir()
    with Lab((VIS_HOST, BEACON_HOST)) as lab:
        servers = []
        try:
            for host in (VIS_HOST, BEACON_HOST):
                ip = lab.origin_ips[host]
                argv = [sys.executable, str(HERE / "slow_origin.py"), ip, "80", str(docroot)]
                servers.append(procs.spawn(netns.exec_argv(lab.servers_ns, argv)))
                procs.wait_until(
                    "slow origin listening",
                    functools.partial(netns.is_listening, lab.servers_ns, ip, 80),
                    timeout_s=10,
                )
            profile = parse_network("rtt=4ms,rate=100Mbps")
            with lab.link(profile, seed=1, tcp=TcpSettings()) as link:
                yield lab, link, docroot
        finally:
            for server in servers:
                procs.stop(server)


@pytest.fixture
def chromium() -> Iterator[clients.ClientAdapter]:
    client = clients.get("chromium")
    try:
        yield client
    finally:
        client.close()


def _page(docroot: Path, name: str, html: str) -> Page:
    (docroot / f"{name}.html").write_text(html)
    entry = Resource(VIS_HOST, f"/{name}.html", len(html.encode()), "text/html")
    return Page(name=name, origins=(VIS_HOST,), resources=(entry,), docroot=docroot, digest="t")


def _ctx(lab: Lab, link: Link, folder: Path, timeout_s: float = 20) -> LoadContext:
    return LoadContext(
        netns=link.client_ns,
        artifacts_dir=folder,
        timeout_s=timeout_s,
        hosts=dict(lab.origin_ips),
        link_generation=1,
    )


@pytest.mark.alone
def test_speed_index_matches_the_analytic_value(
    slow_lab: tuple[Lab, Link, Path], chromium: clients.ClientAdapter, tmp_path: Path
) -> None:
    lab, link, docroot = slow_lab
    halves = _page(docroot, "halves", TWO_HALVES)
    result = chromium.load(halves, "h1c", _ctx(lab, link, tmp_path / "halves"))
    ends = {r.url.rsplit("/", 1)[1].split("?")[0]: r.end_ms for r in result.resources}
    # Completeness is 0 until Chrome paints a.png, 50% until it paints b.png, then 100%; when
    # each was painted, Chrome itself says (Element Timing), independently of the screenshots.
    har = json.loads((tmp_path / "halves" / PAGE_HAR).read_text())
    painted = har["log"]["pages"][0]["_element_timing_ms"]
    analytic = painted["a"] + 0.5 * (painted["b"] - painted["a"])
    assert result.speed_index_ms is not None
    print(f"halves: speed_index_ms={result.speed_index_ms:.1f} analytic={analytic:.1f} "
          f"a painted={painted['a']:.1f} (arrived {ends['a.png']:.1f}) "
          f"b painted={painted['b']:.1f} (arrived {ends['b.png']:.1f})")  # fmt: skip
    assert ends["a.png"] <= painted["a"] < painted["b"]
    assert abs(result.speed_index_ms - analytic) <= max(50.0, 0.05 * analytic)
    assert result.visual_complete_ms is not None
    assert result.visual_complete_ms >= ends["b.png"]
    assert abs(result.visual_complete_ms - painted["b"]) <= 50
    progress = json.loads((tmp_path / "halves" / VISUAL_PROGRESS).read_text())["progress"]
    levels = sorted({round(p, 1) for _, p in progress})
    assert levels == [0.0, 0.5, 1.0] or levels == [0.5, 1.0]

    at_once = _page(docroot, "at-once", AT_ONCE)
    result = chromium.load(at_once, "h1c", _ctx(lab, link, tmp_path / "at-once"))
    # a coloured box is a paint, not contentful: first paint is the reference
    assert result.speed_index_ms is not None and result.fp_ms is not None
    print(f"at once: speed_index_ms={result.speed_index_ms:.1f} fp_ms={result.fp_ms:.1f}")
    assert abs(result.speed_index_ms - result.fp_ms) <= max(50.0, 0.05 * result.fp_ms)


def test_back_to_back_trials_are_isolated(tmp_path: Path) -> None:
    page_spec = "synthetic:n=12,size=30KB,origins=1"
    rtt_ms, rate = 40, "20Mbps"
    records = run_experiment(
        tmp_path,
        "isolation",
        {
            "protocol": ["h2s", "h1s"],
            "network": [f"rtt={rtt_ms}ms,rate={rate}"],
            "page": [page_spec],
            "client": ["chromium"],
        },
        seed=3,
        repetitions=3,
    )
    page = resolve_page(page_spec)
    assert [r.status for r in records] == ["ok"] * 6, [r.error for r in records]
    db = sqlite3.connect(tmp_path / RESULTS_DB)
    seen_connections: set[tuple[str, str]] = set()
    largest = max(r.size_bytes for r in page.resources)
    profile = parse_network(f"rtt={rtt_ms}ms,rate={rate}")
    for r in records:
        assert r.bytes_down is not None and r.bytes_down >= page.total_body_bytes, r
        assert r.plt_ms is not None and r.speed_index_ms is not None and r.fcp_ms is not None
        rows = db.execute(
            "SELECT url, connection, protocol, bytes FROM resources WHERE trial_id = ?", (r.id,)
        ).fetchall()
        # every resource of the page was fetched, in full, over the network
        fetched = {u.split("/", 3)[3]: b for u, _, _, b in rows}
        for res in page.resources:
            assert fetched[res.path.lstrip("/")] == res.size_bytes, res.path
        har = json.loads(
            (tmp_path / ARTIFACTS_DIR).glob(f"*_r{r.repetition}_{r.protocol}.1").__next__()
            .joinpath(PAGE_HAR).read_text()
        )  # fmt: skip
        assert not any(e["_fromCache"] for e in har["log"]["entries"])
        # no connection is ever reused from an earlier trial
        conns = {(r.protocol, c) for _, c, _, _ in rows}
        assert not conns & seen_connections
        seen_connections |= conns
        bound = fetch_lower_bound_ms(
            largest, profile.rtt_ms, profile.down_rate_bps,
            handshake_rtts=handshake_rtts(r.protocol),
        )  # fmt: skip
        assert r.plt_ms >= bound, (r.plt_ms, bound)
        if r.protocol == "h2s":
            assert {p for _, _, p, _ in rows} == {"h2"}
            assert r.tcp_connections == len(page.origins), r  # one new connection per origin
            assert len({c for _, c, _, _ in rows}) == 1
        else:
            assert {p for _, _, p, _ in rows} == {"http/1.1"}
            assert r.tcp_connections is not None and 1 < r.tcp_connections <= 6
        print(f"{r.protocol} r{r.repetition}: plt_ms={r.plt_ms:.0f} "
              f"si={r.speed_index_ms:.0f} tcp_connections={r.tcp_connections} "
              f"bytes_down={r.bytes_down} bound={bound:.0f} "
              f"request_header_bytes={r.request_header_bytes}")  # fmt: skip
    db.close()
    # nginx counted every trial's request headers (13 requests): HPACK makes h2's far smaller
    header_bytes = {(r.protocol, r.repetition): r.request_header_bytes or 0 for r in records}
    for rep in range(3):
        h1, h2 = header_bytes[("h1s", rep)], header_bytes[("h2s", rep)]
        assert h1 > 13 * 200 and 0 < h2 < h1 / 5, header_bytes


def test_a_failed_subresource_is_recorded_and_fails_the_trial_only_when_asked(
    slow_lab: tuple[Lab, Link, Path], chromium: clients.ClientAdapter, tmp_path: Path
) -> None:
    """``fail_on = "document"`` (the default): the page loads without the image whose
    connection dropped, and that request is a resources row and a HAR entry with its error,
    counted in ``failed_requests``; ``fail_on = "any"`` fails the trial for it."""
    lab, link, docroot = slow_lab
    page = _page(docroot, "dropped", DROPPED)
    page = dataclasses.replace(
        page, resources=(*page.resources, Resource(VIS_HOST, "/y.png", 100, "image/png"))
    )
    ok = chromium.load(page, "h1c", _ctx(lab, link, tmp_path / "document"))
    assert ok.failed_requests == 1 and ok.plt_ms is not None
    failed = [(r.url, r.error) for r in ok.resources if r.error]
    assert len(failed) == 1 and failed[0][0].endswith("/y.png?drop=1"), failed
    assert str(failed[0][1]).startswith("net::ERR_")
    entries = assert_valid_har_file(tmp_path / "document" / PAGE_HAR)["log"]["entries"]
    assert [e["_error"] for e in entries if "_error" in e] == [failed[0][1]]
    strict = dataclasses.replace(_ctx(lab, link, tmp_path / "any"), fail_on="any")
    with pytest.raises(TrialFailed, match=r"y\.png\?drop=1 \(net::ERR_"):
        chromium.load(page, "h1c", strict)


def test_a_beacon_blocked_by_orb_leaves_the_trial_ok(
    slow_lab: tuple[Lab, Link, Path], chromium: clients.ClientAdapter, tmp_path: Path
) -> None:
    """A cross-origin beacon answered with JSON to an ``<img>``: Chromium's ORB blocks it. The
    trial is ok with ``failed_requests`` = 1 and the error in its HAR; ``fail_on = "any"``
    fails it."""
    lab, link, docroot = slow_lab
    page = _page(docroot, "beacon", BEACON.replace("{BEACON_HOST}", BEACON_HOST))
    beacon = Resource(BEACON_HOST, "/b.json", 12, "application/json")
    page = dataclasses.replace(
        page,
        origins=(VIS_HOST, BEACON_HOST),
        resources=(*page.resources, Resource(VIS_HOST, "/x.png", 100, "image/png"), beacon),
    )
    ok = chromium.load(page, "h1c", _ctx(lab, link, tmp_path / "document"))
    assert ok.failed_requests == 1
    assert [(r.url, r.error) for r in ok.resources if r.error] == [
        (f"http://{BEACON_HOST}/b.json", "net::ERR_BLOCKED_BY_ORB")
    ]
    entries = assert_valid_har_file(tmp_path / "document" / PAGE_HAR)["log"]["entries"]
    assert [e["_error"] for e in entries if "_error" in e] == ["net::ERR_BLOCKED_BY_ORB"]
    strict = dataclasses.replace(_ctx(lab, link, tmp_path / "any"), fail_on="any")
    with pytest.raises(TrialFailed, match=r"b\.json \(net::ERR_BLOCKED_BY_ORB\)"):
        chromium.load(page, "h1c", strict)
