"""Whole trials through the runner: every protocol lands in the store with sane counters."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from h2lab.pages import resolve_page
from tests.har_schema import assert_valid_har_file
from tests.integration.conftest import run_experiment

DEMO_PAGE = "synthetic:n=32,size=10KB,origins=2"


def test_all_protocols_run_and_land_in_store(tmp_path: Path) -> None:
    records = run_experiment(
        tmp_path,
        "protocols",
        {
            "protocol": ["h1c", "h1p", "h1s", "h2c", "h2s"],
            "network": ["rtt=40ms,down=10Mbps,up=2Mbps"],
            "page": [DEMO_PAGE],
        },
        seed=5,
        repetitions=1,
    )
    page = resolve_page(DEMO_PAGE)
    by_proto = {r.protocol: r for r in records}
    assert set(by_proto) == {"h1c", "h1p", "h1s", "h2c", "h2s"}
    for proto, r in by_proto.items():
        assert r.status == "ok", (proto, r.error)
        assert r.pdt_ms is not None and r.pdt_ms > 40  # at least one round trip
        assert r.bytes_down is not None and r.bytes_down >= page.total_body_bytes
        assert r.body_bytes == page.total_body_bytes
        assert r.bytes_up is not None and r.bytes_up > 0
        assert r.emulator_drops == 0  # Rattan's sockets held every packet of a 10 Mbit/s load
        print(
            f"{proto}: pdt_ms={r.pdt_ms:.1f} tcp_connections={r.tcp_connections} "
            f"bytes_down={r.bytes_down} (page body {page.total_body_bytes})"
        )
    # one connection per origin for multiplexed/pipelined protocols
    for proto in ("h2s", "h2c", "h1p"):
        assert by_proto[proto].tcp_connections == len(page.origins), proto
    # browser-like HTTP/1.1: at most 6 per origin (and here exactly 6: 16 objects per origin)
    for proto in ("h1s", "h1c"):
        assert by_proto[proto].tcp_connections == 6 * len(page.origins), proto
    # the rows are committed: another connection sees them, with their resources
    db = sqlite3.connect(tmp_path / "results.sqlite")
    n_trials = db.execute("SELECT COUNT(*) FROM trials WHERE status = 'ok'").fetchone()[0]
    n_res = db.execute("SELECT COUNT(*) FROM resources").fetchone()[0]
    conns = db.execute(
        "SELECT COUNT(DISTINCT connection) FROM resources JOIN trials ON trials.id = trial_id "
        "WHERE trials.protocol = 'h2s'"
    ).fetchone()[0]
    db.close()
    assert n_trials == 5
    assert n_res == 5 * len(page.resources)
    assert conns == len(page.origins)
    # every trial's h2load HAR is valid HAR 1.2, an entry per resource
    hars = sorted((tmp_path / "artifacts").glob("*/page.har"))
    assert len(hars) == 5
    for path in hars:
        assert len(assert_valid_har_file(path)["log"]["entries"]) == len(page.resources)


def test_parallel_h2load_clients_each_load_the_whole_page(tmp_path: Path) -> None:
    """Seed 002's parallel clients: ``h2load:clients=4`` loads the page 4 times at once, each
    client with its own connection per origin; nginx counts 4 times the requests of one."""
    one, four = (
        run_experiment(
            tmp_path / name,
            name,
            {
                "protocol": ["h1p", "h2c"],
                "network": ["rtt=40ms,down=10Mbps,up=2Mbps"],
                "page": [DEMO_PAGE],
                "client": [client],
            },
            seed=5,
            repetitions=1,
        )
        for name, client in (("one", "h2load"), ("four", "h2load:clients=4"))
    )
    page = resolve_page(DEMO_PAGE)
    for single, r in zip(
        sorted(one, key=lambda r: r.protocol), sorted(four, key=lambda r: r.protocol), strict=True
    ):
        assert r.status == "ok", r.error
        print(
            f"{r.protocol}: pdt_ms 1 client {single.pdt_ms:.0f}, 4 clients {r.pdt_ms:.0f}; "
            f"tcp_connections {single.tcp_connections} / {r.tcp_connections}; "
            f"request_header_bytes {single.request_header_bytes} / {r.request_header_bytes}"
        )
        assert r.body_bytes == 4 * page.total_body_bytes
        assert r.tcp_connections == 4 * len(page.origins)
        assert r.request_header_bytes is not None and single.request_header_bytes is not None
        assert r.request_header_bytes >= 4 * single.request_header_bytes * 0.9
        assert r.pdt_ms is not None and single.pdt_ms is not None and r.pdt_ms > single.pdt_ms
    db = sqlite3.connect(tmp_path / "four" / "results.sqlite")
    assert db.execute("SELECT COUNT(*) FROM resources").fetchone()[0] == 0
    db.close()
