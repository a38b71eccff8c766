"""``capture = ["qlog"]`` and the QUIC packet counts (issue #55, item 3): over a link losing 2 %
of its packets, an h3 trial from the origin to curl keeps both ends' qlog files (JSON-SEQ with
a version in their header), the trial's stored ``quic_lost_packets`` is not 0 and within 20 %
of the losses the server's qlog shows, and the report links the files and draws the window.
A server that counts nothing (nginx 1.26) stores None, as does the origin over TCP."""

from __future__ import annotations

import json
from pathlib import Path

from h2lab.artifacts import QLOG_DIR
from h2lab.metrics.qlog import summarize
from h2lab.report import write_report
from h2lab.runner.matrix import expand
from h2lab.runner.run import run_trials
from h2lab.spec.experiment import Experiment, validate_factors
from h2lab.store import Store

NETWORK = "rtt=40ms,rate=20Mbps,loss=2%"
PAGE = "synthetic:n=8,size=100KB"
"""about 650 packets from the server per trial: some 13 lost at 2 %"""


def _run(out: Path, name: str, factors: dict[str, list[str]]) -> Store:
    exp = Experiment(
        name=name,
        factors=validate_factors(
            "test", {"network": [NETWORK], "page": [PAGE], "client": ["curl"], **factors}
        ),
        seed=55,
        repetitions=2,
        capture=("qlog",),
    )
    store = Store(out)
    run_trials(expand(exp), store, timeout_s=60, capture=exp.capture)
    return store


def _header(path: Path) -> dict[str, object]:
    """The first JSON-SEQ record of a qlog file: its header."""
    first = path.read_bytes().split(b"\x1e")[1]
    header = json.loads(first)
    assert isinstance(header, dict)
    return header


def test_origin_h3_keeps_both_qlogs_and_counts_the_losses_they_show(tmp_path: Path) -> None:
    store = _run(tmp_path, "qlog", {"protocol": ["h2s", "h3"], "server": ["origin"]})
    try:
        trials = store.trials(experiment="qlog")
        assert [t.error for t in trials if t.status != "ok"] == []
        h3 = [t for t in trials if t.protocol == "h3"]
        assert len(h3) == 2
        kept = []
        for t in h3:
            folder = store.artifacts_dir(t.trial_key, t.attempt) / QLOG_DIR
            servers = sorted(folder.glob("*_server.sqlog"))
            clients = sorted(folder.glob("*_client.sqlog"))
            assert len(servers) == len(clients) == 1, sorted(folder.iterdir())
            kept.append(servers[0].name)
            for f in servers + clients:
                header = _header(f)
                assert header["qlog_version"] == "0.3", (
                    header
                )  # quic-go keeps it beside its file_schema
            server = summarize(servers[0])
            assert (server.vantage, summarize(clients[0]).vantage) == ("server", "client")
            sent = servers[0].read_bytes().count(b'"name":"transport:packet_sent"')
            assert t.quic_lost_packets is not None and t.quic_lost_packets > 0
            assert abs(t.quic_lost_packets - server.lost_packets) <= 0.2 * server.lost_packets
            assert t.quic_sent_packets == sent, (t.quic_sent_packets, sent)
            assert server.cwnd and server.cwnd[0][1] == 40960  # quic-go's 32 x 1280 bytes
        for t in trials:
            if t.protocol == "h2s":
                assert (t.quic_sent_packets, t.quic_lost_packets) == (None, None)
                assert not (store.artifacts_dir(t.trial_key, t.attempt) / QLOG_DIR).exists()
    finally:
        store.close()
    report = write_report(tmp_path).read_text()
    # the median h3 trial's files, one of the two
    assert any(f'/{QLOG_DIR}/{n}">{QLOG_DIR}/{n}</a>' in report for n in kept)
    assert "packet(s) declared lost" in report and "congestion window (bytes)" in report


def test_a_server_that_counts_nothing_stores_none_and_curl_still_writes(tmp_path: Path) -> None:
    store = _run(tmp_path, "qlog-nginx", {"protocol": ["h3"], "server": ["nginx@1.26"]})
    try:
        trials = store.trials(experiment="qlog-nginx")
        assert [t.error for t in trials if t.status != "ok"] == []
        for t in trials:
            assert (t.quic_sent_packets, t.quic_lost_packets) == (None, None)
            folder = store.artifacts_dir(t.trial_key, t.attempt) / QLOG_DIR
            assert [p.name.endswith("_client.sqlog") for p in folder.iterdir()] == [True]
    finally:
        store.close()


def test_firefox_writes_its_own_qlog_beside_the_servers(tmp_path: Path) -> None:
    """neqo's qlog (a preference, into the browser's TMPDIR) moved into each h3 trial's."""
    factors = {"network": [NETWORK], "page": ["synthetic:n=8,size=20KB"], "client": ["firefox"],
               "server": ["origin"], "protocol": ["h3"]}  # fmt: skip
    exp = Experiment(name="ff", factors=validate_factors("test", factors), seed=5, repetitions=2,
                     capture=("qlog",))  # fmt: skip
    store = Store(tmp_path)
    try:
        run_trials(expand(exp), store, timeout_s=60, capture=exp.capture)
        trials = store.trials()
        assert [t.error for t in trials if t.status != "ok"] == []
        for t in trials:
            folder = store.artifacts_dir(t.trial_key, t.attempt) / QLOG_DIR
            mine = sorted(folder.glob("o1.h2lab.test_*.qlog.sqlog"))
            assert len(mine) == 1 and len(list(folder.glob("*_server.sqlog"))) == 1
            assert _header(mine[0])["qlog_version"] == "0.3"
            assert summarize(mine[0]).vantage == "client" and summarize(mine[0]).events > 100
    finally:
        store.close()


def test_caddy_211_writes_a_qlog_per_connection(tmp_path: Path) -> None:
    """Caddy 2.11 (built by setup: Debian 13's 2.6 writes none) leaves its server qlog beside
    curl's in each h3 trial, in quic-go 0.63's format: JSON-SEQ whose header names its
    ``file_schema`` (the qlog drafts since main-schema 10 dropped ``qlog_version`` for it),
    the losses the link made in it; it counts nothing itself (None stored)."""
    store = _run(tmp_path, "qlog-caddy", {"protocol": ["h3"], "server": ["caddy@2.11"]})
    try:
        trials = store.trials(experiment="qlog-caddy")
        assert [t.error for t in trials if t.status != "ok"] == [] and len(trials) == 2
        for t in trials:
            assert t.versions["caddy@2.11"].startswith("2.11.")
            assert (t.quic_sent_packets, t.quic_lost_packets) == (None, None)
            folder = store.artifacts_dir(t.trial_key, t.attempt) / QLOG_DIR
            (server,) = folder.glob("*_server.sqlog")
            assert len(list(folder.glob("*_client.sqlog"))) == 1
            header = _header(server)
            assert header["file_schema"] == "urn:ietf:params:qlog:file:sequential", header
            summary = summarize(server)
            assert summary.vantage == "server" and summary.events > 100
            assert summary.lost_packets > 0 and summary.cwnd  # 2 % of ~650 packets lost
    finally:
        store.close()
