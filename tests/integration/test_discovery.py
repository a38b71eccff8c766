"""How a browser finds HTTP/3 (the ``discovery`` factor, issue #54): ``alt-svc`` leaves
Chromium and Firefox to learn it from the servers' ``Alt-Svc`` headers, as shipped. A first
view then starts over TCP: the navigation goes over h2, and a request goes over h3 only after
a response of its origin carried the header; a repeat view (Chromium) keeps what it learnt and
goes over h3 from its first request."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from h2lab.results import TrialRecord
from tests.integration.conftest import run_experiment

SERVERS = ("nginx@1.26", "caddy")
PAGE = "synthetic:n=6,size=10KB,origins=2"

SQL = """
SELECT url, origin, protocol, start_ms, ttfb_ms FROM resources
WHERE trial_id = ? AND error IS NULL AND from_cache = 0 ORDER BY start_ms
"""


def _resources(db: sqlite3.Connection, r: TrialRecord) -> list[tuple[str, str, str, float, float]]:
    return db.execute(SQL, (r.id,)).fetchall()


def test_alt_svc_first_views_start_over_tcp_and_learn_h3(tmp_path: Path) -> None:
    out = tmp_path / "out"
    records = run_experiment(
        out, "alt-svc",
        {"protocol": ["h3"], "network": ["rtt=40ms,rate=20Mbps"], "page": [PAGE],
         "server": list(SERVERS), "client": ["chromium", "firefox"], "discovery": ["alt-svc"]},
        seed=5, repetitions=1,
    )  # fmt: skip
    assert all(r.status == "ok" for r in records), [r.error for r in records if r.error]
    assert len(records) == 4
    db = sqlite3.connect(out / "results.sqlite")
    for r in records:
        rows = _resources(db, r)
        print(r.cell["server"], r.cell["client"], f"{r.tcp_connections} TCP connections",
              [(u.rsplit("/", 1)[-1], o.split(".")[0], p) for u, o, p, *_ in rows])  # fmt: skip
        (document, *_) = rows
        assert document[2] == "h2" and r.tcp_connections and r.tcp_connections >= 1, document
        assert {p for _, _, p, *_ in rows} <= {"h2", "h3"}
        for url, origin, protocol, start_ms, _ in rows:
            if protocol != "h3":
                continue
            # over h3 only once a response of its origin had come (with its Alt-Svc header)
            learnt = [t for _, o, p, _, t in rows if o == origin and p == "h2" and t is not None]
            assert learnt and min(learnt) <= start_ms, (url, rows)


def test_alt_svc_repeat_views_go_over_h3_from_the_first_request(tmp_path: Path) -> None:
    out = tmp_path / "out"
    records = run_experiment(
        out, "alt-svc-repeat",
        {"protocol": ["h3"], "network": ["rtt=40ms,rate=20Mbps"], "page": [PAGE],
         "server": list(SERVERS), "client": ["chromium"], "discovery": ["alt-svc"],
         "view": ["repeat"]},
        seed=5, repetitions=1,
    )  # fmt: skip
    assert all(r.status == "ok" for r in records), [r.error for r in records if r.error]
    db = sqlite3.connect(out / "results.sqlite")
    for r in records:
        rows = _resources(db, r)
        print(r.cell["server"], f"{r.tcp_connections} TCP connections",
              [(u.rsplit("/", 1)[-1], p) for u, _, p, *_ in rows])  # fmt: skip
        assert rows and {p for _, _, p, *_ in rows} == {"h3"}
