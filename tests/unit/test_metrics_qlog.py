"""qlog files read for the report (h2lab.metrics.qlog): both generations of the draft that the
lab's stacks write, delta and relative times, and hostile bytes bounded and skipped."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from h2lab.metrics import qlog
from h2lab.metrics.qlog import summarize

RS = b"\x1e"


def _write(path: Path, header: Mapping[str, object] | None, events: Sequence[object]) -> Path:
    records = ([header] if header is not None else []) + list(events)
    path.write_bytes(b"".join(RS + json.dumps(r).encode() + b"\n" for r in records))
    return path


def _cwnd(t: float, cwnd: int) -> dict[str, object]:
    return {"time": t, "name": qlog.METRICS, "data": {"congestion_window": cwnd}}


def _lost(t: float) -> dict[str, object]:
    return {"time": t, "name": qlog.LOST, "data": {"header": {"packet_number": 1}}}


def test_quic_go_relative_times_from_the_first_event(tmp_path: Path) -> None:
    header = {"file_schema": "urn:ietf:params:qlog:file:sequential", "qlog_version": "0.3",
              "trace": {"vantage_point": {"type": "server"}}}  # fmt: skip
    events = [_cwnd(10.0, 40960), _cwnd(11.0, 40960), _lost(83.0), _cwnd(84.0, 28672), _lost(90)]
    s = summarize(_write(tmp_path / "a_server.sqlog", header, events))
    assert (s.version, s.vantage, s.lost_packets, s.events) == ("0.3", "server", 2, 5)
    assert s.cwnd == [(0.0, 40960), (74.0, 28672)]  # kept where it changed
    assert s.losses_ms == [73.0, 80.0]


def test_openssl_delta_times_add_up(tmp_path: Path) -> None:
    header = {"qlog_version": "0.3", "trace": {"common_fields": {"time_format": "delta"},
              "vantage_point": {"type": "client"}}}  # fmt: skip
    events = [_cwnd(5, 12000), {"name": "x"}, _lost(10), _cwnd(2.5, 6000)]
    s = summarize(_write(tmp_path / "b_client.sqlog", header, events))
    assert (s.vantage, s.lost_packets) == ("client", 1)
    assert s.cwnd == [(0.0, 12000), (12.5, 6000)] and s.losses_ms == [10.0]


def test_the_new_schema_without_a_version_is_named_by_its_file_schema(tmp_path: Path) -> None:
    header = {"file_schema": "urn:ietf:params:qlog:file:sequential"}
    s = summarize(_write(tmp_path / "c.sqlog", header, [_lost(1)]))
    assert s.version == "urn:ietf:params:qlog:file:sequential" and s.lost_packets == 1


def test_bad_records_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "d.sqlog"
    good = json.dumps(_lost(3)).encode()
    bad = [b"{not json", b"[1, 2]", b'{"time": "soon", "name": "recovery:packet_lost"}',
           b'{"time": true, "name": "recovery:packet_lost"}', b"\xff\xfe"]  # fmt: skip
    path.write_bytes(RS + RS.join([*bad, good]))
    s = summarize(path)
    assert (s.version, s.lost_packets, s.skipped) == (None, 1, 5)


def test_a_record_past_the_bound_is_skipped_without_being_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(qlog, "MAX_RECORD_BYTES", 1000)
    monkeypatch.setattr(qlog, "CHUNK_BYTES", 256)
    path = tmp_path / "e.sqlog"
    huge = b'{"time": 1, "name": "' + b"a" * 5000 + b'"}'
    path.write_bytes(RS + huge + RS + json.dumps(_lost(2)).encode())
    s = summarize(path)
    assert (s.skipped, s.lost_packets) == (1, 1)


def test_only_the_beginning_of_a_file_past_the_bound_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(qlog, "MAX_BYTES", 200)
    path = tmp_path / "f.sqlog"
    path.write_bytes(b"".join(RS + json.dumps(_lost(i)).encode() for i in range(100)))
    s = summarize(path)
    assert s.truncated and 0 < s.lost_packets < 10
