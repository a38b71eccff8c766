"""h2lab.record and h2lab.cli.record without a browser: what is refused before one starts, and
that a failure after the recording leaves neither a page nor a WARC (a fake recorder)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from h2lab import record
from h2lab.cli.record import parse_host_map
from h2lab.errors import SpecError
from h2lab.pages.importers import import_warc
from h2lab.record.log import RecordLog
from tests.unit.test_record_log import A, small_load


def _no_browser(*args: Any, **kwargs: Any) -> tuple[RecordLog, tuple[str, ...]]:
    raise AssertionError("the browser must not start")


def _fake_browser(*args: Any, **kwargs: Any) -> tuple[RecordLog, tuple[str, ...]]:
    return small_load().log, ("a note from the load",)


@pytest.mark.parametrize(
    ("kwargs", "line"),
    [
        ({"url": "ftp://x"}, "command line: URL: ftp://x: only http:// and https://"),
        ({"url": "file:///etc/passwd"}, "command line: URL: file:///etc/passwd: only http"),
        ({"url": f"{A}/", "timeout_s": 0}, "command line: --timeout: expected 0..3600 seconds"),
        ({"url": f"{A}/", "warc": Path("/no/such/dir/x.warc.gz")},
         "command line: --warc: /no/such/dir/x.warc.gz: no such folder /no/such/dir"),
        ({"url": f"{A}/", "warc": Path("/tmp")}, "command line: --warc: /tmp is a folder"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_before_the_browser_starts(
    monkeypatch: pytest.MonkeyPatch, kwargs: dict[str, Any], line: str
) -> None:
    monkeypatch.setattr(record, "record_live", _no_browser)
    with pytest.raises(SpecError) as info:
        record.record_page(**kwargs)
    assert info.value.line().startswith(line)


def test_a_recording_is_stored_with_its_warc(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(record, "record_live", _fake_browser)
    warc = tmp_path / "r.warc.gz"
    result = record.record_page(f"{A}/old", warc=warc, root=tmp_path / "pages")
    assert result.page.name == "www.a.test" and result.warc == warc
    assert result.recording.notes[0] == "a note from the load"
    assert import_warc(warc, root=tmp_path / "again").digest == result.page.digest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again", "pages", "r.warc.gz"]


def test_a_failure_after_recording_leaves_no_page_and_no_warc(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(record, "record_live", _fake_browser)
    monkeypatch.setattr(record, "store_recording", broken)
    with pytest.raises(OSError, match="disk full"):
        record.record_page(f"{A}/old", warc=tmp_path / "r.warc.gz", root=tmp_path / "pages")
    assert list(tmp_path.iterdir()) == []


def test_host_map_options() -> None:
    assert parse_host_map(["WWW.a.test=10.2.0.1", "b.test=10.2.0.2"]) == {
        "www.a.test": "10.2.0.1",
        "b.test": "10.2.0.2",
    }
    with pytest.raises(SpecError, match=r"--host: expected NAME=IP, got 'a\.test'"):
        parse_host_map(["a.test"])
