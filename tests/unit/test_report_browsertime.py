"""h2lab.report.browsertime: a results folder as browsertime JSON, read back and checked path
by path against the store (browsertime 28.3.0's names and nesting)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from h2lab.artifacts import VISUAL_PROGRESS
from h2lab.clients import ResourceTiming
from h2lab.report.browsertime import export_browsertime, progress_text, summary
from h2lab.results import TrialRecord
from h2lab.store import Store
from tests.unit.test_report_model import trial

PLAIN = {
    "ttfb_ms": 40.5,
    "dcl_ms": 210.0,
    "fp_ms": 150.0,
    "fcp_ms": 151.0,
    "lcp_ms": 400.25,
    "speed_index_ms": 380.5,
    "first_visual_change_ms": 150.0,
    "last_visual_change_ms": 900.0,
    "visual_complete_85_ms": 420.0,
    "visual_complete_95_ms": 500.0,
    "visual_complete_99_ms": 880.0,
    "cls": 0.0421,
    "tbt_ms": 75.0,
    "fully_loaded_ms": 2100.0,
}


def _browser_trial(protocol: str, rep: int, bump: float) -> TrialRecord:
    t = trial(protocol, rep, None, client="chromium:idle=2s", plt=800.0 + bump)
    values: dict[str, Any] = {k: v + bump for k, v in PLAIN.items()}
    values["cls"] = PLAIN["cls"] + bump / 1000
    return dataclasses.replace(t, **values)


def _doc(host: str) -> tuple[ResourceTiming, ...]:
    return (
        ResourceTiming(f"https://{host}/x.png", host, 30.0, 40.0, 50.0, 100, "h2", "c1"),
        ResourceTiming(f"https://{host}/index.html", host, 1.0, 20.0, 25.0, 900, "h2", "c1"),
    )


def test_export_has_browsertimes_paths_with_the_stores_values(tmp_path: Path) -> None:
    store = Store(tmp_path)
    for rep, bump in enumerate((0.0, 20.0, 10.0)):
        for protocol in ("h1s", "h2s"):
            t = _browser_trial(protocol, rep, bump)
            tid = store.add_trial(t, _doc("o1.h2lab.test"))
            folder = store.artifacts_dir(t.trial_key, t.attempt)
            folder.mkdir(parents=True)
            progress = {"frames": 3, "progress": [[150.2, 0.0], [420.7, 0.856], [900.0, 1.0]]}
            (folder / VISUAL_PROGRESS).write_text(json.dumps(progress))
            assert tid
    store.add_trial(trial("h2s", 0, 100.0))  # h2load: not exported
    store.close()

    paths = export_browsertime(tmp_path)
    assert [p.relative_to(tmp_path).parts[0] for p in paths] == ["browsertime"] * 2
    assert [p.parent.name[:6] for p in paths] == ["01-h1s", "02-h2s"]
    again = Store(tmp_path)
    stored = {
        (t.protocol, t.repetition): t
        for t in again.trials()
        if t.cell.client.startswith("chromium")
    }
    again.close()
    for path in paths:
        (run,) = json.loads(path.read_text())
        protocol = run["info"]["extra"]["protocol"]
        assert run["info"]["url"] == "https://o1.h2lab.test/index.html"  # the first request
        assert run["info"]["browser"]["name"] == "chrome"
        assert run["info"]["connectivity"] == {"engine": "rattan", "profile": "rtt=20ms"}
        assert len(run["timestamps"]) == len(run["browserScripts"]) == 3
        for rep, (scripts, visual, cpu, vitals, fully) in enumerate(
            zip(run["browserScripts"], run["visualMetrics"], run["cpu"],
                run["googleWebVitals"], run["fullyLoaded"], strict=True)
        ):  # fmt: skip
            t = stored[(protocol, rep)]
            timings = scripts["timings"]
            assert timings["ttfb"] == timings["pageTimings"]["backEndTime"] == t.ttfb_ms
            assert timings["pageTimings"]["domContentLoadedTime"] == t.dcl_ms
            assert timings["loadEventEnd"] == t.plt_ms
            assert timings["paintTiming"] == {
                "first-paint": t.fp_ms, "first-contentful-paint": t.fcp_ms
            }  # fmt: skip
            assert timings["largestContentfulPaint"]["renderTime"] == t.lcp_ms
            assert scripts["pageinfo"]["cumulativeLayoutShift"] == t.cls
            assert visual["FirstVisualChange"] == t.first_visual_change_ms
            assert visual["SpeedIndex"] == t.speed_index_ms
            assert visual["VisualComplete85"] == t.visual_complete_85_ms
            assert visual["VisualComplete95"] == t.visual_complete_95_ms
            assert visual["VisualComplete99"] == t.visual_complete_99_ms
            assert visual["LastVisualChange"] == t.last_visual_change_ms
            assert visual["VisualProgress"] == "150=0, 420=85, 900=100"
            assert cpu["longTasks"]["totalBlockingTime"] == t.tbt_ms
            assert vitals == {
                "ttfb": t.ttfb_ms, "firstContentfulPaint": t.fcp_ms,
                "largestContentfulPaint": t.lcp_ms, "cumulativeLayoutShift": t.cls,
                "totalBlockingTime": t.tbt_ms,
            }  # fmt: skip
            assert fully == t.fully_loaded_ms
        stats = run["statistics"]
        # medians of the three repetitions (bump 0, 20, 10: the middle one is +10)
        assert stats["visualMetrics"]["SpeedIndex"]["median"] == 391  # 390.5, as toFixed(0)
        assert stats["visualMetrics"]["FirstVisualChange"]["median"] == 160
        assert stats["visualMetrics"]["LastVisualChange"]["max"] == 920
        assert stats["timings"]["loadEventEnd"]["median"] == 810
        assert stats["timings"]["fullyLoaded"]["median"] == 2110
        assert stats["timings"]["paintTiming"]["first-contentful-paint"]["min"] == 151
        assert stats["cpu"]["longTasks"]["totalBlockingTime"]["median"] == 85
        assert stats["googleWebVitals"]["cumulativeLayoutShift"]["median"] == 0.0521
        assert stats["pageinfo"]["cumulativeLayoutShift"]["median"] == 0.0521
        assert "VisualProgress" not in stats["visualMetrics"]


def test_summary_rounds_as_browsertime() -> None:
    s = summary([1.0, 2.0, 4.0])
    assert (s["median"], s["mean"], s["min"], s["max"]) == (2, 2, 1, 4)  # 2.33 -> 2
    assert s["stddev"] == 1 and s["mdev"] == pytest.approx(0.7201, abs=1e-4)
    assert summary([0.12345, 0.2])["median"] == 0.1617  # (0, 1): 4 decimals
    assert summary([12.5, 12.75])["median"] == 12.63  # fractional (1, 100): 2 decimals


def test_progress_text_is_visualmetrics_line() -> None:
    assert progress_text([[0.0, 0.0], [180.9, 0.179], [260.0, 1.0]]) == "0=0, 180=17, 260=100"
