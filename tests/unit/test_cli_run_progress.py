"""``h2lab run``'s progress bar: its ETA is the trials left at the run's own pace, counted
from the first trial it runs (stored trials skipped at the start take no time)."""

from __future__ import annotations

from rich.progress import Progress

from h2lab.cli.run import _Tally


def test_the_eta_is_the_trials_left_at_the_runs_pace() -> None:
    now = [100.0]
    bar = Progress(disable=True)
    tally = _Tally(bar, "x", total=10, clock=lambda: now[0])
    assert tally.eta() == "-:--:--"
    now[0] = 160.0  # the run started 60 s ago, spent on skipping stored trials
    for _ in range(4):
        tally.add("resumed", "k")
    assert tally.eta() == "-:--:--"  # nothing has run yet
    for seconds in (5, 30):  # the pace of two trials: 17.5 s each
        now[0] += seconds
        tally.add("ok", "k")
    assert tally.eta() == "0:01:10"  # 4 left x 17.5 s
    now[0] += 3600
    tally.add("failed", "k", "timeout")
    assert (tally.failed, tally.eta()) == (1, "1:00:35")  # 3 left x 1211.67 s
    assert bar.tasks[0].fields["eta"] == "1:00:35" and bar.tasks[0].completed == 7
