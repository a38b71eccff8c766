"""Firefox through the lab: isolation between trials (a new BiDi user context each),
SpeedIndex against Firefox's own paint marks, and failed trials (timeout, crash) that do not
stop the next one."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from h2lab import clients
from h2lab.analysis.lower_bound import fetch_lower_bound_ms, handshake_rtts
from h2lab.artifacts import ARTIFACTS_DIR, FILMSTRIP_DIR, PAGE_HAR, RESULTS_DB, VISUAL_PROGRESS
from h2lab.net.lab import Lab, Link
from h2lab.pages import resolve_page
from h2lab.results import TrialRecord
from h2lab.spec.network import parse_network
from tests.integration.conftest import run_experiment
from tests.integration.test_chromium import AT_ONCE, _ctx, _page, slow_lab

__all__ = ["slow_lab"]  # the fixture, shared with the Chromium tests

PAGE = "synthetic:n=12,size=30KB,origins=1"
# Two images, full width, one above the other: completeness goes 0 -> 300/768 -> 100%.
# Firefox has no Element Timing: its own paint marks are the Largest Contentful Paint
# candidates, so the lower image is the larger (LCP reports a later candidate only when it is
# larger), and each PNG's own size is its displayed size (LCP does not count upscaling).
TOP_H, BOTTOM_H = 300, 468
TWO_BANDS = f"""<!doctype html><html><head><meta charset=utf-8><link rel="icon" href="data:,">
<style>html,body{{margin:0;overflow:hidden;background:#fff}} img{{display:block}}</style>
</head><body><img src="/a.png?hold=600&rgb=cc0000&w=1366&h={TOP_H}" alt="">
<img src="/b.png?hold=1600&rgb=0000cc&w=1366&h={BOTTOM_H}" alt=""></body></html>"""
H3_PAGE = "synthetic:n=8,size=10KB,origins=2"
RT_PAGE = "synthetic:n=300,size=1KB,origins=1"
COMPOSITE_LAG_MS = 150
"""At most this from Firefox's paint mark to the recorded frame that shows it: 9 display frames
at 60 Hz (measured up to 85), far below the 1,000 ms between the two bands' paints, so a
recorder whose frames are a paint late or early still fails."""


@pytest.fixture
def firefox() -> Iterator[clients.ClientAdapter]:
    client = clients.get("firefox")
    try:
        yield client
    finally:
        client.close()


def _rows(db: sqlite3.Connection, trial_id: int) -> list[tuple[str, str, int]]:
    return db.execute(
        "SELECT url, protocol, bytes FROM resources WHERE trial_id = ?", (trial_id,)
    ).fetchall()


def _har(out: Path, r: TrialRecord) -> dict[str, object]:
    folder = next((out / ARTIFACTS_DIR).glob(f"*_r{r.repetition}_{r.protocol}.1"))
    har: dict[str, object] = json.loads((folder / PAGE_HAR).read_text())
    return har


def test_back_to_back_trials_are_isolated(tmp_path: Path) -> None:
    """3 x (h2s, h1s) in one browser per protocol: each trial opens its own connections and
    fetches every byte of the page over the network (nothing from a cache, no connection of
    an earlier trial)."""
    rtt_ms, rate = 40, "20Mbps"
    t0 = time.monotonic()
    records = run_experiment(
        tmp_path,
        "isolation",
        {
            "protocol": ["h2s", "h1s"],
            "network": [f"rtt={rtt_ms}ms,rate={rate}"],
            "page": [PAGE],
            "client": ["firefox"],
        },
        seed=3,
        repetitions=3,
    )
    print(f"6 trials in {time.monotonic() - t0:.1f} s")
    page = resolve_page(PAGE)
    assert [r.status for r in records] == ["ok"] * 6, [r.error for r in records]
    db = sqlite3.connect(tmp_path / RESULTS_DB)
    largest = max(r.size_bytes for r in page.resources)
    profile = parse_network(f"rtt={rtt_ms}ms,rate={rate}")
    # the browser (and its BiDi WebSocket in the client namespace) starts before the trial's
    # counters are read (FirefoxClient.prepare): the trial counts the page's connections only
    for r in sorted(records, key=lambda r: r.id or 0):
        assert r.bytes_down is not None and r.bytes_down >= page.total_body_bytes, r
        assert r.plt_ms is not None and r.fcp_ms is not None and r.ttfb_ms is not None
        rows = _rows(db, r.id or 0)
        # every resource of the page was fetched, in full, over the network
        fetched = {u.split("/", 3)[3]: b for u, _, b in rows}
        for res in page.resources:
            assert fetched[res.path.lstrip("/")] == res.size_bytes, res.path
        entries = _har(tmp_path, r)["log"]["entries"]  # type: ignore[index]
        assert entries and not any(e["_fromCache"] for e in entries)
        bound = fetch_lower_bound_ms(
            largest, profile.rtt_ms, profile.down_rate_bps,
            handshake_rtts=handshake_rtts(r.protocol),
        )  # fmt: skip
        assert r.plt_ms >= bound, (r.plt_ms, bound)
        if r.protocol == "h2s":
            assert {p for _, p, _ in rows} == {"h2"}
            # one new connection per origin
            assert r.tcp_connections == len(page.origins), r
        else:
            assert {p for _, p, _ in rows} == {"http/1.1"}
            assert r.tcp_connections is not None and 1 < r.tcp_connections <= 6
        print(f"{r.protocol} r{r.repetition}: plt_ms={r.plt_ms:.0f} fcp_ms={r.fcp_ms:.0f} "
              f"ttfb_ms={r.ttfb_ms:.0f} tcp_connections={r.tcp_connections} "
              f"bytes_down={r.bytes_down} bound={bound:.0f} "
              f"request_header_bytes={r.request_header_bytes}")  # fmt: skip
    db.close()
    # nginx counted every trial's request headers (13 requests): HPACK makes h2's far smaller
    header_bytes = {(r.protocol, r.repetition): r.request_header_bytes or 0 for r in records}
    for rep in range(3):
        h1, h2 = header_bytes[("h1s", rep)], header_bytes[("h2s", rep)]
        assert h1 > 13 * 200 and 0 < h2 < h1 / 5, header_bytes


@pytest.mark.alone
def test_speed_index_matches_firefoxs_own_paint_marks(
    slow_lab: tuple[Lab, Link, Path], tmp_path: Path
) -> None:
    """SpeedIndex from the compositor's frames against the value computed from when Firefox
    says it painted each image (its LCP candidates): that value plus the compositor's lag, a
    few display frames."""
    lab, link, docroot = slow_lab
    client = clients.get("firefox:filmstrip=1")
    try:
        bands = _page(docroot, "bands", TWO_BANDS)
        result = client.load(bands, "h1c", _ctx(lab, link, tmp_path / "bands"))
        at_once = _page(docroot, "at-once", AT_ONCE)
        at_once_result = client.load(at_once, "h1c", _ctx(lab, link, tmp_path / "at-once"))
    finally:
        client.close()
    ends = {r.url.rsplit("/", 1)[1].split("?")[0]: r.end_ms for r in result.resources}
    har = json.loads((tmp_path / "bands" / PAGE_HAR).read_text())
    painted = {
        u.rsplit("/", 1)[1].split("?")[0]: t
        for u, t in har["log"]["pages"][0]["_lcp_candidates_ms"].items()
    }
    a, b = painted["a.png"], painted["b.png"]
    share = TOP_H / (TOP_H + BOTTOM_H)
    analytic = a + (1 - share) * (b - a)
    assert result.speed_index_ms is not None and result.visual_complete_ms is not None
    print(f"bands: speed_index_ms={result.speed_index_ms:.1f} analytic={analytic:.1f} "
          f"a painted={a:.1f} (arrived {ends['a.png']:.1f}) "
          f"b painted={b:.1f} (arrived {ends['b.png']:.1f}) "
          f"visual_complete_ms={result.visual_complete_ms:.1f} lcp_ms={result.lcp_ms}")  # fmt: skip
    assert ends["a.png"] <= a < b
    progress = json.loads((tmp_path / "bands" / VISUAL_PROGRESS).read_text())["progress"]
    # every level is one of the page's states (nothing, the top band, both), and both bands are
    # seen; a sliver of 2 % of the viewport or less is an image painted as it arrived (levels
    # 0.01 and 0.4 beside 0.0 and 0.39 in one run), not another state of the page
    levels = sorted({round(p, 2) for _, p in progress})
    states = (0.0, share, 1.0)
    assert all(min(abs(lv - s) for s in states) <= 0.02 for lv in levels), levels
    assert levels[-1] == 1.0 and any(abs(lv - share) <= 0.02 for lv in levels), levels
    # when each band shows in the recorded frames: the window's composite of Firefox's paint,
    # one to a few display frames after its paint mark (measured 31-54 ms idle, 85 ms beside
    # the unit tests and idle lanes), so SpeedIndex is the paint marks' value plus that lag:
    # share * lag_a + (1 - share) * lag_b, a few display frames and never a share of the load
    # (a 5 % bound on 1,460 ms failed at 77 ms of lag in CI)
    shown_a = min(t for t, p in progress if p >= share - 0.02)
    shown_b = min(t for t, p in progress if p >= 1 - 0.02)
    lag_a, lag_b = shown_a - a, shown_b - b
    print(f"bands: lag_a_ms={lag_a:.1f} lag_b_ms={lag_b:.1f}")
    assert 0 <= lag_a <= COMPOSITE_LAG_MS and 0 <= lag_b <= COMPOSITE_LAG_MS, (lag_a, lag_b)
    assert abs(result.visual_complete_ms - shown_b) <= 1, (result.visual_complete_ms, shown_b)
    # SpeedIndex is the frames' own steps, integrated (a sliver shifts it by a frame or so)
    steps = shown_a + (1 - share) * (shown_b - shown_a)
    assert abs(result.speed_index_ms - steps) <= 0.01 * steps, (result.speed_index_ms, steps)
    assert analytic <= result.speed_index_ms <= analytic + max(lag_a, lag_b) + 0.01 * steps
    # the frames are upright and cut to the page: the last one is red at the top, blue below
    last = sorted((tmp_path / "bands" / FILMSTRIP_DIR).iterdir())[-1]
    with Image.open(last) as frame:
        assert frame.size == (1366, 768)  # the viewport, not the window's default
        red, blue = frame.getpixel((10, 10)), frame.getpixel((10, TOP_H + 10))
    assert isinstance(red, tuple) and isinstance(blue, tuple), (red, blue)  # RGB(A) pixels
    assert red[0] > 180 and red[2] < 60 and blue[2] > 180 and blue[0] < 60, (red, blue)
    # a coloured box is a paint, not contentful: first contentful paint is not the reference,
    # the one change of the page is; SpeedIndex is its time
    r = at_once_result
    assert r.speed_index_ms is not None and r.visual_complete_ms is not None
    print(f"at once: speed_index_ms={r.speed_index_ms:.1f} "
          f"visual_complete_ms={r.visual_complete_ms:.1f} plt_ms={r.plt_ms}")  # fmt: skip
    # at most a 2 % sliver before it, as the bands' levels allow (measured: 244.0 against
    # 244.5 ms, two frames half a millisecond apart)
    assert 0 <= r.visual_complete_ms - r.speed_index_ms <= 0.02 * r.visual_complete_ms


def test_mobile_is_a_phones_viewport_and_user_agent(
    slow_lab: tuple[Lab, Link, Path], tmp_path: Path
) -> None:
    """device=mobile: the page is asked for with Firefox for Android's user agent and drawn
    in a 412 x 823 viewport (the recorded frames' size)."""
    lab, link, docroot = slow_lab
    client = clients.get("firefox:device=mobile,filmstrip=1")
    try:
        page = _page(docroot, "phone", AT_ONCE)
        result = client.load(page, "h1c", _ctx(lab, link, tmp_path / "phone"))
    finally:
        client.close()
    har = json.loads((tmp_path / "phone" / PAGE_HAR).read_text())
    sent = {h["name"].lower(): h["value"] for h in har["log"]["entries"][0]["request"]["headers"]}
    print(f"mobile: user-agent {sent['user-agent']!r} speed_index_ms={result.speed_index_ms}")
    assert "Android" in sent["user-agent"] and "Mobile" in sent["user-agent"]
    frames = sorted((tmp_path / "phone" / FILMSTRIP_DIR).iterdir())
    with Image.open(frames[-1]) as frame:
        assert frame.size == (412, 823)


@pytest.mark.timing  # the whole test within 40 s
@pytest.mark.timeout(90)
def test_h3_every_request_over_quic_and_no_tcp_h2s_over_tcp(tmp_path: Path) -> None:
    """h3 against the Go origin: every request of the page (its HTML too, in the first trial
    of a new browser) goes over QUIC and the trial opens no TCP connection; h2s in the same
    run has no QUIC in it (its requests are h2, over TCP)."""
    t0 = time.monotonic()
    records = run_experiment(
        tmp_path,
        "firefox-h3",
        {"protocol": ["h2s", "h3"], "network": ["rtt=20ms"], "page": [H3_PAGE],
         "server": ["origin"], "client": ["firefox"]},
        seed=1,
        repetitions=1,
    )  # fmt: skip
    elapsed_s = time.monotonic() - t0
    print(f"2 trials in {elapsed_s:.1f} s")
    assert [r.status for r in records] == ["ok", "ok"], [r.error for r in records]
    page = resolve_page(H3_PAGE)
    db = sqlite3.connect(tmp_path / RESULTS_DB)
    rows = {r.protocol: _rows(db, r.id or 0) for r in records}
    db.close()
    for r in records:
        protocols = sorted({p for _, p, _ in rows[r.protocol]})
        print(f"{r.protocol}: {len(rows[r.protocol])} requests, protocols {protocols}, "
              f"tcp_connections={r.tcp_connections}, plt_ms={r.plt_ms}, "
              f"bytes_down={r.bytes_down}")  # fmt: skip
        assert r.plt_ms is not None and r.plt_ms > 0
        assert r.bytes_down is not None and r.bytes_down >= page.total_body_bytes, r
        # every resource of the page, in full, and nothing else
        fetched = {u: b for u, _, b in rows[r.protocol]}
        assert fetched == {res.url("https"): res.size_bytes for res in page.resources}
    by = {r.protocol: r for r in records}
    assert {p for _, p, _ in rows["h3"]} == {"h3"}
    assert by["h3"].tcp_connections == 0
    assert {p for _, p, _ in rows["h2s"]} == {"h2"}
    assert (by["h2s"].tcp_connections or 0) >= len(page.origins)
    assert elapsed_s < 40


def test_without_network_events_the_resources_come_from_resource_timing(tmp_path: Path) -> None:
    """firefox:network=0 (no BiDi network events, which slow Firefox's loads): every resource
    of a one-origin page still has its row, with its bytes and protocol, from the page's own
    Resource Timing; 300 objects, beyond its default buffer of 250 entries."""
    records = run_experiment(
        tmp_path,
        "firefox-rt",
        {"protocol": ["h2s"], "network": ["rtt=20ms"], "page": [RT_PAGE],
         "client": ["firefox:network=0"]},
        seed=1,
        repetitions=1,
    )  # fmt: skip
    assert [r.status for r in records] == ["ok"], [r.error for r in records]
    r = records[0]
    page = resolve_page(RT_PAGE)
    db = sqlite3.connect(tmp_path / RESULTS_DB)
    rows = _rows(db, r.id or 0)
    db.close()
    print(f"network=0: {len(rows)} rows, plt_ms={r.plt_ms}, speed_index_ms={r.speed_index_ms}")
    assert {u: b for u, _, b in rows} == {
        res.url("https"): res.size_bytes for res in page.resources
    }
    assert {p for _, p, _ in rows} == {"h2"}
    assert r.plt_ms is not None and r.speed_index_ms is not None and r.tcp_connections == 1
