"""What a trial reads of its server's connections (h2lab.runner.captures.ServerCounts): the
QUIC counts between two readings over h3 only, what the QUIC stack ran under h2lab's names, the
TCP congestion control of the connections accepted during the load, and the namespace's own
where the server tells none."""

from __future__ import annotations

from pathlib import Path

from h2lab.runner.captures import ServerCounts, trial_qlog_dir
from h2lab.servers import Serving
from h2lab.servers.quic import QuicTotals


class FakeLedger:
    def __init__(self, *readings: QuicTotals | None) -> None:
        self.readings = list(readings)
        self.qlog_dir = Path("/nonexistent")
        self.taken: list[tuple[float, Path]] = []
        self.watching = False

    def totals(self) -> QuicTotals | None:
        return self.readings.pop(0)

    def take_qlogs(self, since_s: float, into: Path) -> list[Path]:
        self.taken.append((since_s, into))
        return []

    def watch(self) -> None:
        self.watching = True

    def unwatch(self) -> None:
        self.watching = False


BEFORE = QuicTotals(3, 100, 2, "reno", 40960, (("cubic", 4),))
AFTER = QuicTotals(4, 765, 14, "reno", 40960, (("bbr", 2), ("cubic", 4)))


def _counts(protocol: str, *readings: QuicTotals | None) -> tuple[ServerCounts, FakeLedger]:
    ledger = FakeLedger(*readings)
    serving = Serving(quic=ledger)  # type: ignore[arg-type]
    return ServerCounts(serving, protocol), ledger


def test_h3_counts_the_packets_and_names_what_quic_go_ran(tmp_path: Path) -> None:
    counts, ledger = _counts("h3", BEFORE, AFTER)
    assert ledger.watching  # between the readings (HAProxy's ledger reads during the load)
    counts.end(12.5, tmp_path / "qlog")
    assert ledger.taken == [(12.5, tmp_path / "qlog")] and not ledger.watching
    assert counts.metrics("cubic") == {
        "quic_sent_packets": 665,
        "quic_lost_packets": 12,
        "quic_initial_window_bytes": 40960,
        "server_quic_cc": "newreno",
        "server_tcp_cc": "bbr",  # the connections accepted during the load
    }


def test_over_tcp_only_the_tcp_congestion_control() -> None:
    counts, _ = _counts("h2s", BEFORE, AFTER)
    counts.end(0.0, None)
    assert counts.metrics("reno") == {
        "quic_sent_packets": None,
        "quic_lost_packets": None,
        "quic_initial_window_bytes": None,
        "server_quic_cc": None,
        "server_tcp_cc": "bbr",
    }
    quiet, _ = _counts("h2s", BEFORE, BEFORE)  # no connection accepted: the namespace's
    quiet.end(0.0, None)
    assert quiet.metrics("reno")["server_tcp_cc"] == "reno"
    told_nothing = ServerCounts(Serving(), "h1s")
    told_nothing.end(0.0, None)
    assert told_nothing.metrics("bbr")["server_tcp_cc"] == "bbr"
    assert ServerCounts(None, "h3").metrics("bbr")["server_tcp_cc"] is None  # over QUIC


def test_a_server_that_does_not_answer_counts_nothing() -> None:
    counts, _ = _counts("h3", None, AFTER)
    counts.end(0.0, None)
    got = counts.metrics(None)
    assert (got["quic_sent_packets"], got["quic_lost_packets"]) == (None, None)
    assert got["server_quic_cc"] == "newreno"  # the second reading still says what ran


def test_qlog_goes_with_h3_trials_that_capture_it(tmp_path: Path) -> None:
    assert trial_qlog_dir(tmp_path, "h3", ("qlog",)) == tmp_path / "qlog"
    assert trial_qlog_dir(tmp_path, "h2s", ("qlog",)) is None
    assert trial_qlog_dir(tmp_path, "h3", ("pcap",)) is None
