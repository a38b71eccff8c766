"""Request header bytes as the server counted them (nginx ``$request_length``)."""

from __future__ import annotations

from pathlib import Path

from h2lab.servers import BACKEND_DIR, REQUEST_LOG, RequestLog, request_header_bytes


def test_http2_lines_gain_the_frame_header_and_http1_lines_do_not() -> None:
    lines = "583 HTTP/1.1\n48 HTTP/2.0\n12 HTTP/2.0\nnot a line\n\n"
    assert request_header_bytes(lines) == 583 + (48 + 9) + (12 + 9)


def test_request_log_counts_only_what_was_logged_since_the_mark(tmp_path: Path) -> None:
    log = tmp_path / REQUEST_LOG
    backend = tmp_path / BACKEND_DIR / REQUEST_LOG
    requests = RequestLog(tmp_path)
    assert requests.since(requests.mark()) is None  # a server that keeps no log
    log.write_text("100 HTTP/1.1\n")
    mark = requests.mark()
    with log.open("a") as f:
        f.write("200 HTTP/1.1\n30 HTTP/2.0\n")
    assert requests.since(mark) == 200 + 39
    # behind HAProxy the backend logs; a log that started again is read from its start
    backend.parent.mkdir()
    backend.write_text("7 HTTP/2.0\n")
    mark = requests.mark()
    log.write_text("5 HTTP/1.1\n")
    assert requests.since(mark) == 5
