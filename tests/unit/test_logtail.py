"""A log read from a mark on: the part written since, the whole of a log started again, at most
the limit."""

from __future__ import annotations

from pathlib import Path

from h2lab.logtail import read_since, size_of


def test_read_since_a_mark_a_restarted_log_and_the_limit(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    assert size_of(log) is None
    log.write_text("before\n")
    mark = size_of(log)
    assert mark == 7
    with log.open("a") as f:
        f.write("during\n")
    assert read_since(log, mark) == "during\n"
    log.write_text("new\n")  # the server started again: a log shorter than the mark
    assert read_since(log, mark) == "new\n"
    log.write_bytes(b"\xff" + b"a" * 100)
    assert read_since(log, 0, limit=4) == "\ufffdaaa"
