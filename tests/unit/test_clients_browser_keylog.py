"""h2lab.clients.browser.keylog: a kept browser's SSLKEYLOGFILE handed out trial by trial."""

from __future__ import annotations

from pathlib import Path

from h2lab.clients.browser.keylog import KeylogSlices

FIRST = b"CLIENT_TRAFFIC_SECRET_0 aa 11\nSERVER_TRAFFIC_SECRET_0 aa 22\n"
SECOND = b"CLIENT_TRAFFIC_SECRET_0 bb 33\n"


def test_each_trial_takes_the_lines_written_since_the_last_take(tmp_path: Path) -> None:
    log = tmp_path / "browser-keylog.txt"
    slices = KeylogSlices(log)
    log.write_bytes(FIRST)
    assert slices.take(tmp_path / "t1" / "keylog.txt") == 2
    with log.open("ab") as f:
        f.write(SECOND + b"CLIENT_HANDSHAKE_TRAFFIC_SECRET cc")  # a line still being written
    assert slices.take(tmp_path / "t2" / "keylog.txt") == 1
    assert (tmp_path / "t1" / "keylog.txt").read_bytes() == FIRST
    assert (tmp_path / "t2" / "keylog.txt").read_bytes() == SECOND
    with log.open("ab") as f:
        f.write(b" 44\n")
    assert slices.take(tmp_path / "t3" / "keylog.txt") == 1
    assert (
        tmp_path / "t3" / "keylog.txt"
    ).read_bytes() == b"CLIENT_HANDSHAKE_TRAFFIC_SECRET cc 44\n"


def test_no_new_line_and_no_file_leave_no_keylog(tmp_path: Path) -> None:
    log = tmp_path / "browser-keylog.txt"
    slices = KeylogSlices(log)
    assert slices.take(tmp_path / "none.txt") == 0  # the browser has logged nothing yet
    log.write_bytes(FIRST)
    slices.take(tmp_path / "t1.txt")
    assert slices.take(tmp_path / "t2.txt") == 0
    assert not (tmp_path / "none.txt").exists() and not (tmp_path / "t2.txt").exists()
