"""Issue #33: browsertime's metric names measured by Chromium through the lab. The visual
milestones are ordered on the demo page and on a corpus page, in both SpeedIndex modes, and
the WebPageTest mode agrees with browsertime's visualmetrics on the trial's own frames; TBT is
0 on a static page and about 250 ms with a 300 ms busy script after FCP (the floor of three
loads); CLS is 0 on a page
that does not shift and > 0 on one that does; fully loaded comes no earlier than the load."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from h2lab import clients
from h2lab.artifacts import FILMSTRIP_DIR
from h2lab.clients import LoadContext
from h2lab.metrics.visual import Frame, visual_metrics
from h2lab.net.lab import Lab, Link
from h2lab.pages import Page, Resource
from h2lab.report.browsertime import export_browsertime
from h2lab.results import TrialRecord
from h2lab.store.sqlite import artifacts_dir
from tests.integration.conftest import ROOT, run_experiment, slow_origin_lab
from tests.unit.visualmetrics_reference import run_visualmetrics, write_frames

HOST = "vm.h2lab.test"
DEMO_PAGE = "synthetic:n=32,size=10KB,origins=2"  # experiments/demo.toml's page
CORPUS_PAGE = f"warc:{ROOT / 'corpus' / 'warc' / 'wikipedia.warc.gz'}"

HEAD = '<!doctype html><html><head><meta charset=utf-8><link rel="icon" href="data:,"></head>'
# The load event waits for the held image (1.5 s), so the trace covers the busy task.
STATIC = (
    HEAD
    + """<body><h1>Nothing moves here</h1>
<img src="/x.png?hold=1500&rgb=cc0000&w=400&h=300" width=400 height=300 alt=""></body></html>"""
)
BUSY = (
    HEAD
    + """<body><h1>Busy after the first paint</h1>
<img src="/x.png?hold=1500&rgb=cc0000&w=400&h=300" width=400 height=300 alt="">
<script>
new PerformanceObserver((list, observer) => {
  if (!list.getEntriesByName('first-contentful-paint').length) return;
  observer.disconnect();
  setTimeout(() => { const t = performance.now(); while (performance.now() - t < 300) {} }, 0);
}).observe({type: 'paint', buffered: true});
</script></body></html>"""
)
# The image has no size: when it arrives (0.6 s) the block below it moves down 300 px.
SHIFTS = (
    HEAD
    + """<body><h1>Something moves here</h1>
<img src="/x.png?hold=600&rgb=cc0000&w=400&h=300" alt="">
<div style="height:200px;background:#06c"></div></body></html>"""
)


@pytest.fixture
def lab_page(tmp_path: Path) -> Iterator[tuple[Lab, Link, Path]]:
    docroot = tmp_path / "www"
    docroot.mkdir()
    with slow_origin_lab(HOST, docroot, "rtt=4ms,rate=100Mbps") as (lab, link):
        yield lab, link, docroot


def _load(
    lab: Lab,
    link: Link,
    docroot: Path,
    folder: Path,
    name: str,
    html: str,
    client_level: str = "chromium",
) -> clients.LoadResult:
    (docroot / f"{name}.html").write_text(html)
    entry = Resource(HOST, f"/{name}.html", len(html.encode()), "text/html")
    page = Page(name=name, origins=(HOST,), resources=(entry,), docroot=docroot, digest="t")
    ctx = LoadContext(
        netns=link.client_ns,
        artifacts_dir=folder / name,
        timeout_s=20,
        hosts=dict(lab.origin_ips),
        link_generation=1,
    )
    client = clients.get(client_level)
    try:
        return client.load(page, "h1c", ctx)
    finally:
        client.close()


@pytest.mark.alone
def test_tbt_and_cls(lab_page: tuple[Lab, Link, Path], tmp_path: Path) -> None:
    lab, link, docroot = lab_page
    # TBT's floor over three loads each: a host that steals the CPU only adds blocking time
    # (a fresh clone's suite: static 87 ms, busy 473 ms, each in one load of a slow run)
    statics = [_load(lab, link, docroot, tmp_path / f"{i}", "static", STATIC) for i in range(3)]
    busies = [_load(lab, link, docroot, tmp_path / f"{i}", "busy", BUSY) for i in range(3)]
    static = min(statics, key=lambda r: r.tbt_ms if r.tbt_ms is not None else float("inf"))
    busy = min(busies, key=lambda r: r.tbt_ms if r.tbt_ms is not None else float("inf"))
    print(f"tbt_ms: static {[r.tbt_ms for r in statics]}, busy {[r.tbt_ms for r in busies]}")
    shifts = _load(lab, link, docroot, tmp_path, "shifts", SHIFTS)
    untraced = _load(lab, link, docroot, tmp_path / "untraced", "busy", BUSY, "chromium:tbt=0")
    print(
        f"static: tbt_ms={static.tbt_ms} cls={static.cls}; busy: tbt_ms={busy.tbt_ms} "
        f"(fcp {busy.fcp_ms}, load {busy.plt_ms}); shifts: cls={shifts.cls}"
    )
    assert static.tbt_ms == 0.0 and static.cls == 0.0
    assert busy.tbt_ms is not None and busy.tbt_ms == pytest.approx(250.0, rel=0.10)
    assert shifts.cls is not None and shifts.cls > 0.05
    assert static.fully_loaded_ms is None  # no idle= option: nobody waited for the network
    assert untraced.tbt_ms is None and untraced.fcp_ms is not None  # tbt=0: no task trace


def test_firefox_visual_milestones_fully_loaded_and_no_tbt(
    lab_page: tuple[Lab, Link, Path], tmp_path: Path
) -> None:
    """Firefox: the visual milestones from its compositor's frames (WPT mode too), fully
    loaded with idle=, no TBT (no long-task trace) and CLS only if it reports layout shifts."""
    lab, link, docroot = lab_page
    for mode in ("h2lab", "wpt"):
        r = _load(
            lab, link, docroot, tmp_path / mode, "shifts", SHIFTS,
            f"firefox:idle=1s,speed_index={mode}",
        )  # fmt: skip
        print(
            f"firefox {mode}: first {r.first_visual_change_ms} <= SpeedIndex "
            f"{r.speed_index_ms} <= last {r.last_visual_change_ms}; VC85/95/99 "
            f"{r.visual_complete_85_ms}/{r.visual_complete_95_ms}/{r.visual_complete_99_ms}; "
            f"plt {r.plt_ms} <= fully loaded {r.fully_loaded_ms}; tbt {r.tbt_ms}, cls {r.cls}"
        )
        first, si, last = r.first_visual_change_ms, r.speed_index_ms, r.last_visual_change_ms
        assert first is not None and si is not None and last is not None
        assert first <= si <= last
        vc85, vc95, vc99 = r.visual_complete_85_ms, r.visual_complete_95_ms, r.visual_complete_99_ms
        assert vc85 is not None and vc95 is not None and vc99 is not None
        assert vc85 <= vc95 <= vc99 <= last
        assert r.plt_ms is not None and r.fully_loaded_ms is not None
        assert r.fully_loaded_ms >= r.plt_ms
        assert r.tbt_ms is None and r.cls is None  # firefox-esr reports no layout shifts


def _frames(out: Path, record: TrialRecord) -> list[Frame]:
    strip = artifacts_dir(out, record.trial_key, record.attempt) / FILMSTRIP_DIR
    files = sorted(strip.glob("*.jpg"), key=lambda p: float(p.name.removesuffix("ms.jpg")))
    return [Frame(float(p.name.removesuffix("ms.jpg")), p.read_bytes()) for p in files]


def _ordered(name: str, r: TrialRecord) -> None:
    first, si, last = r.first_visual_change_ms, r.speed_index_ms, r.last_visual_change_ms
    vc85, vc95, vc99 = r.visual_complete_85_ms, r.visual_complete_95_ms, r.visual_complete_99_ms
    print(
        f"{name}: first {first} <= SpeedIndex {si} <= last {last}; VC85 {vc85} <= VC95 {vc95} "
        f"<= VC99 {vc99}; plt {r.plt_ms} <= fully loaded {r.fully_loaded_ms}; tbt {r.tbt_ms}, "
        f"cls {r.cls}"
    )
    assert first is not None and si is not None and last is not None
    assert vc85 is not None and vc95 is not None and vc99 is not None
    assert first <= si <= last, name
    assert vc85 <= vc95 <= vc99 <= last, name
    assert r.plt_ms is not None and r.fully_loaded_ms is not None
    assert r.fully_loaded_ms >= r.plt_ms, name
    assert r.tbt_ms is not None and r.cls is not None


def _exported_as_stored(out: Path, records: list[TrialRecord]) -> None:
    """``h2lab export --format browsertime`` of the folder: one file per cell, each
    iteration's visual metrics, TBT, CLS and fully loaded as stored."""
    paths = export_browsertime(out)
    assert len(paths) == len(records)  # one repetition per cell and protocol
    by_cell = {(r.cell.page, r.cell.client): r for r in records}
    for path in paths:
        (run,) = json.loads(path.read_text())
        extra = run["info"]["extra"]
        r = by_cell[(extra["page"], extra["client"])]
        wikipedia = "wikipedia" in r.cell.page
        assert run["info"]["url"] == ("https://www.wikipedia.org/" if wikipedia else
                                      "https://o1.h2lab.test/index.html")  # fmt: skip
        assert run["visualMetrics"][0]["SpeedIndex"] == r.speed_index_ms
        assert run["visualMetrics"][0]["LastVisualChange"] == r.last_visual_change_ms
        assert run["cpu"][0]["longTasks"]["totalBlockingTime"] == r.tbt_ms
        assert run["browserScripts"][0]["pageinfo"]["cumulativeLayoutShift"] == r.cls
        assert run["fullyLoaded"] == [r.fully_loaded_ms]


def test_visual_milestones_in_both_modes_and_wpt_against_visualmetrics(tmp_path: Path) -> None:
    out = tmp_path / "out"
    records = run_experiment(
        out, "visual", {"protocol": ["h2s"], "network": ["cable"], "server": ["nginx"],
                        "page": [DEMO_PAGE, CORPUS_PAGE],
                        "client": ["chromium:idle=2s,filmstrip=1",
                                   "chromium:idle=2s,filmstrip=1,speed_index=wpt"]},
        seed=3, repetitions=1,
    )  # fmt: skip
    assert len(records) == 4 and all(r.status == "ok" for r in records), [
        (r.cell.page, r.cell.client, r.error) for r in records if r.status != "ok"
    ]
    _exported_as_stored(out, records)
    for r in records:
        wpt = "speed_index=wpt" in r.cell.client
        name = f"{'wikipedia' if 'warc' in r.cell.page else 'demo'} {'wpt' if wpt else 'h2lab'}"
        _ordered(name, r)
        if not wpt:
            continue
        # the trial's own frames, to h2lab's WPT mode and to browsertime's visualmetrics
        frames = _frames(out, r)
        same = write_frames(frames, tmp_path / name.replace(" ", "-"))
        ref = run_visualmetrics(tmp_path / name.replace(" ", "-"))
        ours = visual_metrics(same, "wpt")
        assert ours.speed_index_ms is not None
        diff = ours.speed_index_ms / float(str(ref["SpeedIndex"])) - 1
        stored = r.speed_index_ms / float(str(ref["SpeedIndex"])) - 1  # type: ignore[operator]
        print(
            f"{name}: {len(frames)} frames; SpeedIndex h2lab-wpt {ours.speed_index_ms:.1f} "
            f"(stored {r.speed_index_ms}) vs visualmetrics {ref['SpeedIndex']}: "
            f"{100 * diff:+.2f}% (stored {100 * stored:+.2f}%); first change "
            f"{ours.first_visual_change_ms} vs {ref['FirstVisualChange']}, last "
            f"{ours.last_visual_change_ms} vs {ref['LastVisualChange']}; VC85/95/99 "
            f"{ours.visual_complete_85_ms}/{ours.visual_complete_95_ms}/"
            f"{ours.visual_complete_99_ms} vs {ref['VisualComplete85']}/"
            f"{ref['VisualComplete95']}/{ref['VisualComplete99']}"
        )
        assert abs(diff) <= 0.01 and abs(stored) <= 0.01
        for ours_ms, ref_ms in (
            (ours.first_visual_change_ms, ref["FirstVisualChange"]),
            (ours.last_visual_change_ms, ref["LastVisualChange"]),
            (ours.visual_complete_85_ms, ref["VisualComplete85"]),
            (ours.visual_complete_95_ms, ref["VisualComplete95"]),
            (ours.visual_complete_99_ms, ref["VisualComplete99"]),
        ):
            assert ours_ms is not None and abs(ours_ms - float(str(ref_ms))) <= max(
                1.0, 0.01 * float(str(ref_ms))
            )
