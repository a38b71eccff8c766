"""The ``tls`` factor end to end (issue #29): an experiment's levels reach the servers, the
clients see the handshake they should, and the stored rows say which version ran.

TLS 1.2's full handshake takes one round trip more than TLS 1.3's (RFC 5246 §7.3, RFC 8446 §2;
:func:`h2lab.analysis.lower_bound.handshake_rtts`). h2load waits for the whole handshake before
its request: its connect and first-byte times grow by one RTT. Chromium does not: with an
ECDHE + AEAD suite and ALPN it sends the request after its own Finished, before the server's
(TLS False Start, RFC 7918), so its first byte comes as early with 1.2 as with 1.3. It did
speak 1.2: the server offered nothing else (tests/integration/test_tls_versions.py), and a
Chromium keylog of such a load has only ``CLIENT_RANDOM`` lines, the TLS 1.2 kind."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from h2lab.analysis.lower_bound import handshake_rtts
from h2lab.results import TrialRecord
from tests.integration.conftest import run_experiment

pytestmark = pytest.mark.alone  # a connect time within 10% of its round trips

RTT_MS = 100.0
ONE_RTT_MS = (handshake_rtts("h1s", "1.2") - handshake_rtts("h1s", "1.3")) * RTT_MS
TOLERANCE = 0.10


def _median(trials: list[TrialRecord], client: str, tls: str, metric: str) -> float:
    values: list[float] = [
        getattr(t, metric)
        for t in trials
        if t.status == "ok" and t.cell.client.startswith(client) and t.cell["tls"] == tls
    ]
    assert values, (client, tls, metric)
    return statistics.median(values)


def test_tls_version_reaches_servers_and_costs_h2load_one_round_trip(tmp_path: Path) -> None:
    trials = run_experiment(
        tmp_path,
        "tls",
        {
            "protocol": ["h1s"],
            "network": [f"rtt={RTT_MS:g}ms,rate=10Mbps"],
            "page": ["synthetic:n=1,size=10KB"],
            "server": ["origin"],
            "client": ["h2load", "chromium"],
            "tls": ["1.2", "1.3"],
        },
        seed=29,
        repetitions=2,
    )
    assert [t.error for t in trials if t.status != "ok"] == []
    assert {(t.cell.client, t.cell["tls"]) for t in trials} == {
        (c, v) for c in ("h2load", "chromium") for v in ("1.2", "1.3")
    }
    for metric in ("connect_ms", "ttfb_ms"):
        extra = _median(trials, "h2load", "1.2", metric) - _median(trials, "h2load", "1.3", metric)
        assert abs(extra - ONE_RTT_MS) <= TOLERANCE * ONE_RTT_MS, (metric, extra)
    # Chromium: TLS 1.2 with False Start, no round trip more before connectEnd or the first byte
    for metric in ("connect_ms", "ttfb_ms"):
        extra = _median(trials, "chromium", "1.2", metric)
        extra -= _median(trials, "chromium", "1.3", metric)
        assert abs(extra) < TOLERANCE * ONE_RTT_MS, (metric, extra)
