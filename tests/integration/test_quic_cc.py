"""QUIC's congestion control as a level (issue #55, item 2): ``origin:cc=cubic,initcwnd=10``
makes quic-go's senders CUBIC with a 10-packet window and every trial stores what its stack
ran, read back from the server (and the qlog agrees); the default stays quic-go's own (NewReno,
32 packets); TCP's algorithm is read from the server's sockets; ``haproxy@3.0:cc=newreno``
runs (HAProxy 3.0 tells no algorithm: None); ``ngtcp2:cc=bbr``, BBR over h3, read back from
the running server and its qlog."""

from __future__ import annotations

from pathlib import Path

import pytest

from h2lab.artifacts import QLOG_DIR
from h2lab.errors import SpecError
from h2lab.pages import resolve_page
from h2lab.runner.levels import validate_factors as validate_levels
from h2lab.runner.matrix import expand
from h2lab.runner.run import run_trials
from h2lab.spec.experiment import Experiment, validate_factors
from h2lab.store import Store

NETWORK = "rtt=20ms,rate=50Mbps"
PAGE = "synthetic:n=4,size=100KB"


def _trials(out: Path, servers: list[str], protocols: list[str], cc: str = "cubic") -> Store:
    factors = {"network": [NETWORK], "page": [PAGE], "client": ["curl"], "server": servers,
               "protocol": protocols, "congestion_control": [cc]}  # fmt: skip
    exp = Experiment(
        name="cc", factors=validate_factors("test", factors), seed=2, capture=("qlog",)
    )
    store = Store(out)
    run_trials(expand(exp), store, timeout_s=60, capture=exp.capture)
    return store


def test_the_origin_runs_and_reports_the_asked_quic_congestion_control(tmp_path: Path) -> None:
    store = _trials(tmp_path, ["origin", "origin:cc=cubic,initcwnd=10"], ["h2s", "h3"], "bbr")
    try:
        trials = {(t.cell.columns()["server"], t.protocol): t for t in store.trials()}
        assert [t.error for t in trials.values() if t.status != "ok"] == []
        own, asked = trials[("origin", "h3")], trials[("origin:cc=cubic,initcwnd=10", "h3")]
        assert (own.server_quic_cc, own.quic_initial_window_bytes) == ("newreno", 40960)
        assert (asked.server_quic_cc, asked.quic_initial_window_bytes) == ("cubic", 12800)
        folder = store.artifacts_dir(asked.trial_key, asked.attempt) / QLOG_DIR
        qlog = next(folder.glob("*_server.sqlog")).read_text()
        assert '"initial_congestion_window":12800' in qlog  # quic-go's own record agrees
        for server in ("origin", "origin:cc=cubic,initcwnd=10"):
            assert trials[(server, "h2s")].server_tcp_cc == "bbr"  # from its sockets
            assert trials[(server, "h2s")].server_quic_cc is None
    finally:
        store.close()


def test_haproxy_runs_newreno_and_tells_no_algorithm(tmp_path: Path) -> None:
    store = _trials(tmp_path, ["haproxy@3.0:backend=nginx,cc=newreno", "nginx@1.26"], ["h2s", "h3"])
    try:
        trials = store.trials()
        assert [t.error for t in trials if t.status != "ok"] == []
        assert sorted((t.cell.columns()["server"], t.protocol) for t in trials) == [
            ("haproxy@3.0:backend=nginx,cc=newreno", "h2s"),
            ("haproxy@3.0:backend=nginx,cc=newreno", "h3"),
            ("nginx@1.26", "h2s"),
            ("nginx@1.26", "h3"),
        ]
        for t in trials:
            assert t.server_quic_cc is None and t.quic_initial_window_bytes is None
            # over TCP, the servers' namespace's algorithm (the factor's level)
            assert t.server_tcp_cc == ("cubic" if t.protocol == "h2s" else None)
    finally:
        store.close()


def test_ngtcp2_runs_bbr_over_h3_and_tells_what_it_ran(tmp_path: Path) -> None:
    """``ngtcp2:cc=bbr`` and its default: every body served over h3 (curl's bytes), the
    algorithm read from the running servers, the 12,000-byte window (10 packets of 1,200 B)
    from its qlog; Chromium loads a page of two origins from it (one process each)."""
    store = _trials(tmp_path, ["ngtcp2:cc=bbr", "ngtcp2"], ["h3"])
    try:
        trials = {t.cell.columns()["server"]: t for t in store.trials()}
        assert [t.error for t in trials.values() if t.status != "ok"] == []
        page_bytes = resolve_page(PAGE).total_body_bytes
        ran = {s: (t.server_quic_cc, t.quic_initial_window_bytes, t.body_bytes)
               for s, t in trials.items()}  # fmt: skip
        assert ran == {"ngtcp2:cc=bbr": ("bbr", 12000, page_bytes),
                       "ngtcp2": ("cubic", 12000, page_bytes)}  # fmt: skip
    finally:
        store.close()
    factors = {"network": [NETWORK], "page": ["synthetic:n=6,size=20KB,origins=2"],
               "client": ["chromium"], "server": ["ngtcp2:cc=bbr"], "protocol": ["h3"]}  # fmt: skip
    exp = Experiment(name="cc-browser", factors=validate_factors("test", factors), seed=3)
    store = Store(tmp_path / "browser")
    try:
        run_trials(expand(exp), store, timeout_s=60)
        (t,) = store.trials()
        assert t.status == "ok", t.error
        assert t.tcp_connections in (0, None) and t.plt_ms is not None
        assert {r["protocol"] for r in store.resources(t.id or 0)} == {"h3"}
    finally:
        store.close()


def test_ngtcp2_serves_no_tcp_and_no_other_algorithm() -> None:
    for factors, says in (
        ({"server": ["ngtcp2"], "protocol": ["h2s"]}, "ngtcp2 cannot serve protocol h2s"),
        (
            {"server": ["ngtcp2:cc=vegas"], "protocol": ["h3"]},
            "expected one of cubic, newreno, bbr",
        ),
    ):
        full = {"network": [NETWORK], "page": [PAGE], "client": ["curl"], **factors}
        with pytest.raises(SpecError, match=says):
            validate_levels("test", full)  # as `h2lab run` validates a file
