"""h2lab.clients.browser.chromium.analysis: a Chrome trace's frames and a load's metrics, resources
and HAR, from what a (made-up) load left."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest
from PIL import Image

from h2lab.clients.browser.chromium.analysis import (
    RawLoad,
    analyse,
    main_thread_tasks,
    page_metrics,
    tbt_ms,
    trace_frames,
)
from h2lab.clients.browser.log import (
    DataReceived,
    NetworkLog,
    RequestFinished,
    RequestSent,
    ResponseHeaderBytes,
)
from h2lab.errors import TrialFailed
from h2lab.metrics.visual import VisualMetrics
from tests.har_schema import assert_valid_har


def jpeg(colour: tuple[int, int, int]) -> str:
    buf = io.BytesIO()
    Image.new("RGB", (40, 30), colour).save(buf, "JPEG")
    return base64.b64encode(buf.getvalue()).decode()


def navigation(ts_us: int, url: str, pid: int = 7, tid: int = 7) -> dict[str, Any]:
    data = {"isLoadingMainFrame": True, "documentLoaderURL": url}
    return {"name": "navigationStart", "ts": ts_us, "pid": pid, "tid": tid, "args": {"data": data}}


def task(ts_us: int, dur_us: int, tid: int = 7, name: str = "RunTask") -> dict[str, Any]:
    return {"name": name, "ph": "X", "ts": ts_us, "dur": dur_us, "pid": 7, "tid": tid}


def screenshot(ts_us: int, colour: tuple[int, int, int]) -> dict[str, Any]:
    return {"name": "Screenshot", "ts": ts_us, "args": {"snapshot": jpeg(colour)}}


def test_trace_frames_are_timed_from_the_main_frame_navigation() -> None:
    trace = {
        "traceEvents": [
            screenshot(900_000, (255, 255, 255)),
            navigation(500_000, ""),  # the blank page's
            navigation(1_000_000, "https://a.test/"),
            screenshot(1_250_000, (200, 0, 0)),
            screenshot(1_400_000, (0, 0, 200)),
        ]
    }
    nav_s, frames = trace_frames(trace)
    assert nav_s == 1.0
    assert [f.t_ms for f in frames] == [250.0, 400.0]


def test_a_trace_without_navigation_has_no_frames() -> None:
    assert trace_frames({"traceEvents": [screenshot(900_000, (0, 0, 0))]}) == (None, [])


def test_page_metrics_keep_only_positive_times() -> None:
    visual = VisualMetrics(123.4567, 300.0, 100.0, 3, (), 310.0, 200.0, 250.0, 300.0)
    timing = {"connectEnd": 8.0, "responseStart": 12.34567, "dcl": 0, "loadEventEnd": 250.0}
    assert page_metrics(timing, visual) == {
        "connect_ms": 8.0,
        "ttfb_ms": 12.346,
        "dcl_ms": None,
        "plt_ms": 250.0,
        "fp_ms": None,
        "fcp_ms": None,
        "lcp_ms": None,
        "cls": None,
        "speed_index_ms": 123.457,
        "visual_complete_ms": 300.0,
        "first_visual_change_ms": 100.0,
        "last_visual_change_ms": 310.0,
        "visual_complete_85_ms": 200.0,
        "visual_complete_95_ms": 250.0,
        "visual_complete_99_ms": 300.0,
    }


def finished(log: NetworkLog, rid: str, url: str, start_s: float, end_s: float) -> None:
    log.add(RequestSent(rid, url, start_s))
    log.add(DataReceived(rid, 1000))
    log.add(RequestFinished(rid, end_s, 1100))


def test_analyse_times_everything_from_navigation_start() -> None:
    log = NetworkLog()
    finished(log, "1", "https://a.test/", 1.01, 1.05)
    finished(log, "2", "https://a.test/x.png", 1.06, 1.2)
    log.add(ResponseHeaderBytes("1", 100))
    trace = {
        "traceEvents": [
            navigation(1_000_000, "https://a.test/"),
            screenshot(1_100_000, (255, 255, 255)),
            screenshot(1_300_000, (200, 0, 0)),
        ]
    }
    timing = {"responseStart": 30.0, "loadEventEnd": 210.0, "elements": {"hero": 150.04321}}
    raw = RawLoad(json.dumps(trace).encode(), timing, log)
    analysis = analyse(raw, "https://a.test/")
    result = analysis.result
    assert (result.ttfb_ms, result.plt_ms, result.body_bytes) == (30.0, 210.0, 2000)
    assert result.pdt_ms == pytest.approx(190.0)
    assert result.response_header_bytes is None  # one response's size is unknown
    assert [r.start_ms for r in result.resources] == [pytest.approx(10.0), pytest.approx(60.0)]
    assert analysis.visual.frames == 2 and [f.t_ms for f in analysis.frames] == [100.0, 300.0]
    page = analysis.har["log"]["pages"][0]
    assert page["_element_timing_ms"] == {"hero": 150.043}
    assert page["pageTimings"]["onLoad"] == 210.0 and page["pageTimings"]["_frames"] == 2.0
    assert page["pageTimings"]["onContentLoad"] == -1  # not reported
    assert len(analysis.har["log"]["entries"]) == 2
    assert_valid_har(analysis.har)


def test_analyse_without_navigation_times_from_the_first_request() -> None:
    log = NetworkLog()
    finished(log, "1", "https://a.test/", 2.0, 2.1)
    raw = RawLoad(b'{"traceEvents": []}', {}, log)
    (row,) = analyse(raw, "https://a.test/").result.resources
    assert (row.start_ms, row.end_ms) == pytest.approx((0.0, 100.0))


def test_a_load_that_fetched_nothing_fails() -> None:
    raw = RawLoad(b'{"traceEvents": []}', {}, NetworkLog())
    with pytest.raises(TrialFailed, match=r"^chromium fetched nothing from https://a\.test/$"):
        analyse(raw, "https://a.test/")


def test_main_thread_tasks_are_the_navigations_threads_top_level_tasks() -> None:
    trace = {
        "traceEvents": [
            navigation(500_000, "https://a.test/", pid=5, tid=5),  # an earlier renderer
            navigation(1_000_000, "https://a.test/"),
            task(1_100_000, 300_000),
            task(1_150_000, 100_000),  # nested in the one before: not top level
            task(1_500_000, 80_000, name="ThreadControllerImpl::RunTask"),
            task(1_600_000, 400_000, tid=9),  # another thread (a worker, the compositor)
            {"name": "Screenshot", "ph": "O", "ts": 2_100_000, "pid": 7, "tid": 3},
        ]
    }
    found = main_thread_tasks(trace)
    assert found is not None
    tasks, end_ms = found
    assert [(t.start_ms, t.duration_ms) for t in tasks] == [(100.0, 300.0), (500.0, 80.0)]
    assert end_ms == 1100.0
    # FCP at 200 ms: 200 of the first task's 300 are after it (150 blocking) + 30
    assert tbt_ms(trace, fcp_ms=200.0) == 180.0
    assert tbt_ms(trace, fcp_ms=None) is None
    assert tbt_ms({"traceEvents": []}, fcp_ms=200.0) is None


def test_analyse_reports_cls_tbt_and_fully_loaded_with_idle() -> None:
    log = NetworkLog()
    finished(log, "1", "https://a.test/", 1.01, 1.05)
    finished(log, "2", "https://a.test/beacon", 1.5, 1.9)  # after the load event
    trace = {
        "traceEvents": [
            navigation(1_000_000, "https://a.test/"),
            screenshot(1_100_000, (200, 0, 0)),
            task(1_200_000, 300_000),
        ]
    }
    timing = {"loadEventEnd": 210.0, "fcp": 100.0, "layoutShifts": [[120.0, 0.05, False]]}
    raw = RawLoad(json.dumps(trace).encode(), timing, log)
    plain = analyse(raw, "https://a.test/").result
    assert (plain.cls, plain.tbt_ms, plain.fully_loaded_ms) == (0.05, 250.0, None)
    assert analyse(raw, "https://a.test/", tbt=False).result.tbt_ms is None  # option tbt=0
    idle = analyse(raw, "https://a.test/", idle=True)
    assert idle.result.fully_loaded_ms == pytest.approx(900.0)
    assert idle.har["log"]["pages"][0]["pageTimings"]["_fully_loaded_ms"] == pytest.approx(900.0)
    # a load whose last request ended before its load event: fully loaded at the load event
    early = NetworkLog()
    finished(early, "1", "https://a.test/", 1.01, 1.05)
    raw = RawLoad(json.dumps(trace).encode(), timing, early)
    assert analyse(raw, "https://a.test/", idle=True).result.fully_loaded_ms == 210.0


def test_analyse_in_wpt_mode() -> None:
    log = NetworkLog()
    finished(log, "1", "https://a.test/", 1.01, 1.05)
    trace = {
        "traceEvents": [
            navigation(1_000_000, "https://a.test/"),
            screenshot(1_100_000, (255, 255, 255)),
            screenshot(1_300_000, (200, 0, 0)),
        ]
    }
    raw = RawLoad(json.dumps(trace).encode(), {"loadEventEnd": 210.0}, log)
    analysis = analyse(raw, "https://a.test/", mode="wpt")
    assert analysis.visual.mode == "wpt"
    r = analysis.result
    assert (r.first_visual_change_ms, r.last_visual_change_ms, r.speed_index_ms) == (
        300.0,
        300.0,
        300.0,
    )
