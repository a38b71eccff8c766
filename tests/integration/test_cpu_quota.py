"""Option ``cores`` (issue #55, item 1): the whole browser in a cgroup CPU quota. On a page
whose first paint waits for a fixed piece of JavaScript work, at ``cores=0.25`` against
``cores=1``: every process of the browser's tree in the quota's group, the calibration given a
quarter of a core (within 10 %) and its work some 4.4 times slower, the browser throttled, and
SpeedIndex at least twice as long; Chromium's DevTools throttling (``cpu=4``, the renderer's
main thread only) printed beside it."""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest

from h2lab import clients
from h2lab.clients import LoadContext, cpu
from h2lab.clients.browser.client import BrowserClient
from h2lab.net.lab import Lab, Link
from h2lab.pages import Page, Resource
from tests.integration.conftest import slow_origin_lab

HOST = "cpu.h2lab.test"
LOOPS = 40_000_000
"""Iterations of the page's script before it paints: about 150 ms of a free core in Chromium."""
HEAVY = f"""<!doctype html><html><head><meta charset=utf-8><link rel="icon" href="data:,">
</head><body><script>
let x = 0; for (let i = 0; i < {LOOPS}; i++) x += Math.sqrt(i);
document.body.insertAdjacentHTML('beforeend',
  '<div style="width:100%;height:700px;background:#c33"><h1>' + Math.round(x) + '</h1></div>');
</script></body></html>"""
LOADS = 3
"""Loads per client level (the first starts the browser)."""

pytestmark = pytest.mark.alone  # a quarter of a core against a free one: needs the cores free


@pytest.fixture
def lab_page(tmp_path: Path) -> Iterator[tuple[Lab, Link, Page]]:
    docroot = tmp_path / "www"
    docroot.mkdir()
    (docroot / "heavy.html").write_text(HEAVY)
    entry = Resource(HOST, "/heavy.html", len(HEAVY.encode()), "text/html")
    page = Page(name="heavy", origins=(HOST,), resources=(entry,), docroot=docroot, digest="c")
    with slow_origin_lab(HOST, docroot, "rtt=4ms,rate=100Mbps") as (lab, link):
        yield lab, link, page


def _loads(lab: Lab, link: Link, page: Page, folder: Path, level: str) -> list[clients.LoadResult]:
    """:data:`LOADS` loads by one client; with a quota, the browser's whole process tree is
    checked against the group's members after the last (besides the client's own check)."""
    client = clients.get(level)
    assert isinstance(client, BrowserClient)
    out, group = [], None
    try:
        for n in range(LOADS):
            ctx = LoadContext(
                netns=link.client_ns, artifacts_dir=folder / level / str(n), timeout_s=30,
                hosts=dict(lab.origin_ips), link_generation=1,
            )  # fmt: skip
            out.append(client.load(page, "h1c", ctx))
        group = client.cpu_group()
        pid = client.browser_pid("h1c")
        if group is not None and pid is not None:
            tree = cpu.process_tree(pid)
            print(f"{level}: {len(tree)} processes in the browser's tree, all in {group.path}")
            # outside() reads again what one read missed: a process that ended meanwhile (CI:
            # one of Firefox's nine gone between the tree's read and the group's) is not counted
            assert len(tree) >= 3 and group.outside(pid) == [], (tree, group.members())
    finally:
        client.close()
        if group is not None:
            assert not group.path.exists()
    return out


def _median(results: list[clients.LoadResult], field: str) -> float:
    return float(statistics.median(getattr(r, field) for r in results))


CALIBRATION_PAIRS = 12
"""Calibrations free and under a quarter of a core, taken in turns (about 15 s). The share of a
core the quota gives (CPU time over wall time) is the kernel's bookkeeping: 0.249 here. The
work's wall time is the host's too: this VM's free figure spreads 51-85 ms from one call to the
next, and a unit under the quota costs some 11 % more CPU time than a free one (72 against 65
ms, medians: each 2.5 ms slice starts cold), so its median is 4.4-4.6 times the free median,
not 4 (bench/cpu_calibration.py); the bound on it asserts a quarter rather than a half or an
eighth."""


def test_the_calibration_under_a_quarter_of_a_core_is_a_quarter_of_the_free_one() -> None:
    group = cpu.CpuGroup(0.25)
    free: list[cpu.Calibration] = []
    quarter: list[cpu.Calibration] = []
    try:
        for _ in range(CALIBRATION_PAIRS):
            free.append(cpu.calibration())
            quarter.append(group.calibrate())
        throttled = group._bench.throttled_ms() if group._bench else None
    finally:
        group.remove()
    shares = sorted(q.cores for q in quarter)
    ratio = statistics.median(q.ms for q in quarter) / statistics.median(f.ms for f in free)
    print(
        f"calibration: {statistics.median(f.ms for f in free):.1f} ms free (median), "
        f"{statistics.median(q.ms for q in quarter):.1f} at a quarter of a core: {ratio:.2f}x; "
        f"the share of a core it got {shares[0]}-{shares[-1]} (free: "
        f"{statistics.median(f.cores for f in free)}); the calibration's group throttled "
        f"{throttled} ms"
    )
    # The quota caps every share (the kernel gives no more); what it gave is told from the
    # median: a share below is a host busy with other work for a moment (CI: 0.2249 once, the
    # others 0.234-0.25, the alone lane sharing the cores with the unit tests)
    assert shares[-1] <= 0.25 * 1.10, shares
    assert abs(statistics.median(shares) / 0.25 - 1) <= 0.10, shares
    assert 3 < ratio < 6
    assert not group.path.exists()


@pytest.mark.parametrize("browser", ["chromium", "firefox"])
def test_a_quarter_of_a_core_slows_the_whole_browser(
    lab_page: tuple[Lab, Link, Page], tmp_path: Path, browser: str
) -> None:
    lab, link, page = lab_page
    free = min(cpu.calibration_ms() for _ in range(5))
    one = _loads(lab, link, page, tmp_path, f"{browser}:cores=1")
    quarter = _loads(lab, link, page, tmp_path, f"{browser}:cores=0.25")
    devtools = _loads(lab, link, page, tmp_path, "chromium:cpu=4") if browser == "chromium" else []
    si = {name: _median(r, "speed_index_ms") for name, r in (("1", one), ("0.25", quarter))}
    print(
        f"{browser}: calibration {free:.1f} ms free (the floor of 5), stored "
        f"{[r.cpu_calibration_ms for r in one]} at cores=1, "
        f"{[r.cpu_calibration_ms for r in quarter]} at cores=0.25 (shares of a core "
        f"{[r.cpu_calibration_cores for r in quarter]}); SpeedIndex "
        f"{si['1']:.0f} ms at cores=1, {si['0.25']:.0f} at cores=0.25 "
        f"({si['0.25'] / si['1']:.2f}x); throttled {[r.cpu_throttled_ms for r in quarter]} ms"
        + (
            f"; DevTools cpu=4: SpeedIndex {_median(devtools, 'speed_index_ms'):.0f}"
            if devtools
            else ""
        )
    )
    assert all(r.cpu_throttled_ms and r.cpu_throttled_ms > 0 for r in quarter)
    assert all(r.cpu_calibration_ms is None and r.cpu_throttled_ms is None for r in devtools)
    # each trial's figure: a quarter of a core at least twice as slow as a free one (the
    # quota's accuracy is the test above: beside the idle-class work of the suite the free
    # floor read 87 ms against 43-49 idle, the quarter's 244-284 against 170-250)
    assert all(r.cpu_calibration_ms and r.cpu_calibration_ms > 2 * free for r in quarter)
    assert all(abs((r.cpu_calibration_cores or 0) / 0.25 - 1) <= 0.10 for r in quarter)
    assert si["0.25"] >= 2 * si["1"]
