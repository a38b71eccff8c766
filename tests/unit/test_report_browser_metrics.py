"""h2lab.report.browser_metrics: per browser cell and protocol, the medians of the metrics a
browser reports, under their store names."""

from __future__ import annotations

import dataclasses

from h2lab.report.browser_metrics import browser_metric_rows, browser_metrics_part
from tests.unit.test_report_model import trial


def test_medians_per_cell_and_protocol_of_the_metrics_some_trial_has() -> None:
    trials = []
    for rep, (si, cls, tbt) in enumerate(
        ((500.0, 0.1, 0.0), (700.0, 0.3, 40.0), (600.0, 0.2, 20.0))
    ):
        for protocol in ("h1s", "h2s"):
            t = trial(protocol, rep, None, client="chromium", plt=900.0 + rep)
            trials.append(
                dataclasses.replace(
                    t, speed_index_ms=si, first_visual_change_ms=si - 300, cls=cls, tbt_ms=tbt
                )
            )
    trials.append(trial("h2s", 0, 100.0))  # h2load: not a browser, not in the table
    trials.append(dataclasses.replace(trials[0], status="failed", attempt=2, repetition=9))
    shown, rows = browser_metric_rows(trials)
    names = [m.name for m in shown]
    assert names == ["plt_ms", "speed_index_ms", "first_visual_change_ms", "cls", "tbt_ms"]
    assert [(r.protocol, r.n) for r in rows] == [("h1s", 3), ("h2s", 3)]
    assert rows[0].medians == (901.0, 600.0, 300.0, 0.2, 20.0)
    html = browser_metrics_part(trials)
    assert "<th>first_visual_change_ms</th>" in html and "<th>tbt_ms</th>" in html
    assert '<td class="num">0.200</td>' in html  # cls, a score


def test_no_browser_trial_says_so_in_one_line() -> None:
    assert "no successful browser trial" in browser_metrics_part([trial("h2s", 0, 100.0)])
