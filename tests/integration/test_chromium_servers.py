"""Issue #6 with a real browser: HTTP/3 to the Go origin, 103 Early Hints acted on before the
HTML arrives, and the `client` scheduler following Chromium's priorities."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from h2lab.pages.manifest import PageWriter
from tests.integration.conftest import run_experiment

HOST = "www.h2lab.test"


def _resources(out: Path, protocol: str) -> list[tuple[str, str, float, float]]:
    db = sqlite3.connect(out / "results.sqlite")
    tid = db.execute("SELECT id FROM trials WHERE protocol = ?", (protocol,)).fetchone()[0]
    rows = db.execute(
        "SELECT url, protocol, start_ms, end_ms FROM resources WHERE trial_id = ?", (tid,)
    )
    return [(u, p, s, e) for u, p, s, e in rows]


def test_h3_every_request_over_quic_and_no_tcp(tmp_path: Path) -> None:
    out = tmp_path / "out"
    page = "synthetic:n=8,size=10KB,origins=2"
    records = run_experiment(
        out, "h3", {"protocol": ["h2s", "h3"], "network": ["cable"], "page": [page],
                    "server": ["origin"], "client": ["chromium"]},
        seed=1, repetitions=1,
    )  # fmt: skip
    by = {r.protocol: r for r in records}
    assert all(r.status == "ok" for r in records), [r.error for r in records]
    h3 = _resources(out, "h3")
    print(
        f"h3: {len(h3)} requests, protocols {sorted({p for _, p, _, _ in h3})}, "
        f"tcp_connections {by['h3'].tcp_connections} (h2s: {by['h2s'].tcp_connections})"
    )
    assert len(h3) == 9 and {p for _, p, _, _ in h3} == {"h3"}
    assert by["h3"].tcp_connections == 0 and by["h2s"].tcp_connections >= 2


def test_early_hints_start_hinted_requests_before_the_html(tmp_path: Path) -> None:
    out = tmp_path / "out"
    spec = "origin:early_hints=images,delay_html=400ms"
    page = "synthetic:n=4,size=10KB,origins=1"
    records = run_experiment(
        out, "hints", {"protocol": ["h2s"], "network": ["rtt=20ms"], "page": [page],
                       "server": [spec, "origin:delay_html=400ms"], "client": ["chromium"]},
        seed=1, repetitions=1,
    )  # fmt: skip
    assert all(r.status == "ok" for r in records), [r.error for r in records]
    db = sqlite3.connect(out / "results.sqlite")
    for r in records:
        rows = db.execute(
            "SELECT url, start_ms FROM resources WHERE trial_id = ? ORDER BY start_ms", (r.id,)
        ).fetchall()
        images = [s for u, s in rows if u.endswith(".png")]
        assert r.ttfb_ms is not None
        print(
            f"{r.server}: html ttfb {r.ttfb_ms:.0f} ms, image starts "
            f"{[round(s) for s in images]} ms"
        )
        if "early_hints" in r.server:
            assert all(s < r.ttfb_ms - 200 for s in images)  # requested during the 400 ms wait
        else:
            assert all(s > r.ttfb_ms for s in images)


def test_client_scheduler_follows_chromium_priorities(tmp_path: Path) -> None:
    """Eight 200 KB images, then a stylesheet found late in the body: Chromium asks for the
    stylesheet at a higher priority. `client` sends it ahead of the images still queued;
    `fcfs` only after every image requested before it."""
    images = "".join(f'<img src="/i{i}.png" width=64 height=64>' for i in range(8))
    html = f"<!doctype html><html><head><link rel=icon href='data:,'></head><body>{images}"
    html += '<link rel="stylesheet" href="/late.css"><p>text</p></body></html>'
    root = tmp_path / "pages"
    with PageWriter("priorities", root=root) as w:
        w.add(f"https://{HOST}/", html.encode(), content_type="text/html")
        for i in range(8):
            body = bytes([i]) * 200_000
            w.add(f"https://{HOST}/i{i}.png", body, content_type="image/png")
        w.add(f"https://{HOST}/late.css", b"p{color:#333}" * 10, content_type="text/css")
        page = w.commit(f"https://{HOST}/")
    out = tmp_path / "out"
    records = run_experiment(
        out, "prio", {"protocol": ["h2s"], "network": ["rtt=20ms,rate=10Mbps"],
                      "page": [str(page.docroot)],
                      "server": ["origin:scheduler=client", "origin:scheduler=fcfs"],
                      "client": ["chromium"]},
        seed=1, repetitions=1,
    )  # fmt: skip
    assert all(r.status == "ok" for r in records), [r.error for r in records]
    db = sqlite3.connect(out / "results.sqlite")
    css_done_before: dict[str, int] = {}
    for r in records:
        rows = db.execute(
            "SELECT url, end_ms, priority FROM resources WHERE trial_id = ?", (r.id,)
        ).fetchall()
        css_end, css_priority = next((e, p) for u, e, p in rows if u.endswith(".css"))
        image_ends = [e for u, e, _ in rows if u.endswith(".png")]
        css_done_before[r.server] = sum(e > css_end for e in image_ends)
        print(
            f"{r.server}: late.css ({css_priority}) ends at {css_end:.0f} ms, before "
            f"{css_done_before[r.server]} of 8 images (ends {sorted(round(e) for e in image_ends)})"
        )
    assert css_done_before["origin:scheduler=client"] >= 4
    assert css_done_before["origin:scheduler=fcfs"] <= 1
