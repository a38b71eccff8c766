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

from pathlib import Path

import pytest

from h2lab.analysis.lower_bound import handshake_rtts
from h2lab.results import TrialRecord
from tests.integration.conftest import run_experiment
from tests.timing import Interval, RecordProperty, assert_within, paired_difference

pytestmark = pytest.mark.alone  # connect and first-byte times, paired per repetition

RTT_MS = 100.0
ONE_RTT_MS = (handshake_rtts("h1s", "1.2") - handshake_rtts("h1s", "1.3")) * RTT_MS
REPETITIONS = 8
"""Paired repetitions per cell: the extra time of TLS 1.2 is a t interval of 8 paired
differences (tests/timing.py). Medians of 2 against a bound of 10 % of a round trip missed it
beside other work (Chromium's 21.8 ms against 10); so did 5 against half a round trip once
(Chromium's first byte: -17.3 [-50.97, 16.37] against -50)."""


def _by_repetition(trials: list[TrialRecord], client: str, tls: str, metric: str) -> list[float]:
    values = {
        t.repetition: getattr(t, metric)
        for t in trials
        if t.status == "ok" and t.cell.client.startswith(client) and t.cell["tls"] == tls
    }
    assert len(values) == REPETITIONS and None not in values.values(), (client, tls, metric)
    return [values[i] for i in sorted(values)]


def _extra(trials: list[TrialRecord], client: str, metric: str) -> Interval:
    """What TLS 1.2 adds to ``metric`` over TLS 1.3, paired by repetition."""
    return paired_difference(
        _by_repetition(trials, client, "1.2", metric), _by_repetition(trials, client, "1.3", metric)
    )


def test_tls_version_reaches_servers_and_costs_h2load_one_round_trip(
    tmp_path: Path, record_property: RecordProperty
) -> None:
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
        repetitions=REPETITIONS,
    )
    assert [t.error for t in trials if t.status != "ok"] == []
    assert {(t.cell.client, t.cell["tls"]) for t in trials} == {
        (c, v) for c in ("h2load", "chromium") for v in ("1.2", "1.3")
    }
    # A round trip more or none: each interval must sit nearer its expected count of round
    # trips than the other count (within half a round trip of it).
    half = ONE_RTT_MS / 2
    for metric in ("connect_ms", "ttfb_ms"):
        extra = _extra(trials, "h2load", metric)
        assert_within(record_property, f"h2load TLS 1.2 extra {metric}", extra, half, 3 * half)
    # Chromium: TLS 1.2 with False Start, no round trip more before connectEnd or the first byte
    for metric in ("connect_ms", "ttfb_ms"):
        extra = _extra(trials, "chromium", metric)
        assert_within(record_property, f"chromium TLS 1.2 extra {metric}", extra, -half, half)
