"""The CLI end to end: doctor, load --json, demo, export."""

from __future__ import annotations

import csv
import json
import os
import re
import sqlite3
import subprocess
from pathlib import Path

from h2lab.store.sqlite import TRIAL_COLUMNS
from tests.integration.conftest import H2LAB, ROOT


def test_doctor_reports_versions() -> None:
    from h2lab.net.lab import Lab

    with Lab() as lab:  # measures Rattan's delay overhead unless this boot has it
        overhead_ms = lab.delay_overhead_ms()
    env = {**os.environ, "COLUMNS": "200"}
    done = subprocess.run([H2LAB, "doctor"], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "rattan" in out and "0.1.1" in out
    row = rf"rattan delay overhead\s*│\s*ok\s*│\s*{overhead_ms:.3f} ms per direction, measured"
    assert re.search(row, out), out
    assert "nginx" in out and "1.22" in out
    # Debian 13's builds, as setup.sh made them: nginx 1.26 (QUIC), HAProxy 3.0, curl 8.14
    assert re.search(r"nginx \(Debian 13\)\s*│\s*ok\s*│\s*1\.26\.", out), out
    assert re.search(r"haproxy \(Debian 13\)\s*│\s*ok\s*│\s*3\.0\.", out), out
    assert re.search(r"curl \(Debian 13\)\s*│\s*ok\s*│\s*8\.14\.", out), out
    assert "h2load" in out and "1.52" in out
    assert "missing" not in out


def test_load_json_prints_trial_rows(tmp_path: Path) -> None:
    done = subprocess.run(
        [H2LAB, "load", "synthetic:n=4,size=1KB,origins=1", "--protocol", "h1c,h2c",
         "--network", "rtt=20ms,rate=20Mbps", "--repeat", "2", "--json", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert len(rows) == 4
    assert all(list(r) == list(TRIAL_COLUMNS) for r in rows)
    assert sorted(r["protocol"] for r in rows) == ["h1c", "h1c", "h2c", "h2c"]
    assert all(r["status"] == "ok" and r["pdt_ms"] > 20 for r in rows)
    # a second identical question is run again, not skipped as "already stored"
    again = subprocess.run(
        [H2LAB, "load", "synthetic:n=4,size=1KB,origins=1", "--protocol", "h2c",
         "--network", "rtt=20ms,rate=20Mbps", "--json", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert len(json.loads(again.stdout)) == 1


def test_demo_runs_the_shipped_experiment_and_exports(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    env = {**os.environ, "COLUMNS": "200"}
    done = subprocess.run(
        [H2LAB, "demo", "--out", str(out)],
        capture_output=True, text=True, timeout=900, cwd=ROOT, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    print(done.stdout)
    for header in ("median pdt_ms", "median plt_ms", "median speed_index_ms", "h2s/h1s (paired)"):
        assert header in done.stdout, header
    # the store is closed whole: no -wal/-shm left beside it (the export reads it immutable)
    assert sorted(p.name for p in out.glob("results.sqlite*")) == ["results.sqlite"]
    db = sqlite3.connect(out / "results.sqlite")
    rows = db.execute(
        "SELECT client, protocol, status, tcp_connections, plt_ms, speed_index_ms FROM trials"
    ).fetchall()
    db.close()
    assert len(rows) == 24
    assert all(status == "ok" for _, _, status, *_ in rows)
    h2load_h2s = {c for client, p, _, c, _, _ in rows if client == "h2load" and p == "h2s"}
    assert h2load_h2s == {2}  # one per origin, 2 origins
    browser = [r for r in rows if r[0].startswith("chromium")]
    assert len(browser) == 12 and all(plt and si for *_, plt, si in browser)
    assert all(plt is None for client, *_, plt, _ in rows if client == "h2load")
    report = (out / "report.html").read_text()
    assert f"report: {out / 'report.html'}" in done.stdout
    assert report.count("data:image/jpeg") >= 2  # filmstrips of the median trials, inline
    exported = subprocess.run([H2LAB, "export", str(out), "--csv"], capture_output=True, text=True)
    assert exported.returncode == 0, exported.stderr
    with (out / "trials.csv").open() as f:
        table = list(csv.DictReader(f))
    assert len(table) == 24 and list(table[0]) == list(TRIAL_COLUMNS)
    with (out / "resources.csv").open() as f:
        assert len(list(csv.DictReader(f))) == 24 * 33  # index + 32 objects per trial
