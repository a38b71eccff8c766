"""The report's links to a median trial's files and its QUIC section (h2lab.report.quic):
relative links that follow the folder, escaped names, the server's qlog drawn, and one line
when there is none."""

from __future__ import annotations

import json
from pathlib import Path

from h2lab.report.quic import quic_part, trial_files

RS = b"\x1e"


def _qlog(path: Path, vantage: str, lost: int) -> None:
    header = {"qlog_version": "0.3", "trace": {"vantage_point": {"type": vantage}}}
    events = [{"time": 1, "name": "recovery:metrics_updated", "data": {"congestion_window": 40960}}]
    events += [{"time": 10 + i, "name": "recovery:packet_lost", "data": {}} for i in range(lost)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(RS + json.dumps(r).encode() for r in [header, *events]))


def test_files_are_linked_relative_to_the_report(tmp_path: Path) -> None:
    trial = tmp_path / "artifacts" / "a<b>.1"
    trial.mkdir(parents=True)
    (trial / "page.har").write_text("{}")
    (trial / "netlog-1.json").write_text("{}")
    _qlog(trial / "qlog" / "ab_server.sqlog", "server", 0)
    html = trial_files({"h3": trial, "h2s": tmp_path / "none"}, tmp_path)
    assert html.count("<p>") == 1 and html.startswith("<p>h3 files: ")
    assert '<a href="artifacts/a&lt;b&gt;.1/page.har">page.har</a>' in html
    assert 'href="artifacts/a&lt;b&gt;.1/qlog/ab_server.sqlog"' in html and "netlog-1.json" in html
    assert trial_files({"h3": tmp_path / "none"}, tmp_path) == ""


def test_the_servers_qlog_is_drawn_and_its_losses_counted(tmp_path: Path) -> None:
    _qlog(tmp_path / "qlog" / "ab_server.sqlog", "server", 3)
    _qlog(tmp_path / "qlog" / "ab_client.sqlog", "client", 1)
    html = quic_part({"h3": tmp_path})
    assert "h3: 2 qlog file(s), 3 packet(s) declared lost" in html
    assert html.count("<svg") == 2 and "congestion window (bytes)" in html


def test_no_qlog_is_one_line(tmp_path: Path) -> None:
    assert "no qlog kept" in quic_part({"h3": tmp_path, "h2s": tmp_path})
