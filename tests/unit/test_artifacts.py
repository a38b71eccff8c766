"""h2lab.artifacts: the names the writers use are the names the report finds."""

from __future__ import annotations

from pathlib import Path

from h2lab.artifacts import FILMSTRIP_DIR, FILMSTRIP_FRAME, NGHTTP_OUT
from h2lab.report.artifacts import filmstrip_frames, frame_log_rows


def test_filmstrip_frames_written_by_name_are_found_in_time_order(tmp_path: Path) -> None:
    strip = tmp_path / FILMSTRIP_DIR
    strip.mkdir()
    for t_ms in (1250.0, 33.3, 400.0):
        (strip / FILMSTRIP_FRAME.format(t_ms=t_ms)).write_bytes(b"")
    assert filmstrip_frames(tmp_path) == [
        (33.3, "0000033.3ms.jpg"),
        (400.0, "0000400.0ms.jpg"),
        (1250.0, "0001250.0ms.jpg"),
    ]


def test_the_report_reads_the_nghttp_frame_logs_by_their_name(tmp_path: Path) -> None:
    log = (
        "[  0.010] recv DATA frame <length=100, flags=0x00, stream_id=13>\n"
        "[  0.020] recv DATA frame <length=50, flags=0x01, stream_id=13>\n"
    )
    (tmp_path / NGHTTP_OUT.format(i=0)).write_text(log)
    (tmp_path / "other.out").write_text(log)
    rows, files = frame_log_rows(tmp_path)
    assert files == ["nghttp-0.out"]
    assert [(r.label, len(r.spans)) for r in rows] == [("nghttp-0 stream 13", 2)]
