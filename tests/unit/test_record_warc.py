"""h2lab.record.warc: a recording written as a WARC 1.1 reads back, through the WARC
importer, to the page the recording is stored as (same page id)."""

from __future__ import annotations

from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from h2lab.pages.importers import import_warc, read_warc
from h2lab.record import store_recording
from h2lab.record.log import build_recording
from h2lab.record.warc import write_warc
from tests.unit.test_record_log import A, small_load


def test_the_warc_of_a_recording_imports_to_the_same_page(tmp_path: Path) -> None:
    rec = build_recording(f"{A}/old", small_load().log)
    warc = tmp_path / "rec.warc.gz"
    with warc.open("wb") as out:
        write_warc(rec, out)
    with warc.open("rb") as f:
        records = [(r.rec_type, r.rec_headers.get_header("WARC-Target-URI")) for r in
                   ArchiveIterator(f)]  # fmt: skip
    assert records[0] == ("warcinfo", None)
    assert records[1:3] == [("response", f"{A}/old"), ("request", f"{A}/old")]
    assert len(records) == 1 + 2 * len(rec.exchanges)
    with warc.open("rb") as f:
        assert all(r.rec_headers.protocol == "WARC/1.1" for r in ArchiveIterator(f))

    capture = read_warc(warc)
    assert [(r.method, r.url, r.status, r.body) for r in capture.responses] == [
        (r.method, r.url, r.status, r.body) for r in rec.responses
    ]
    assert capture.entry_url == rec.entry_url
    stored = store_recording(rec, "recorded", tmp_path / "a")
    imported = import_warc(warc, root=tmp_path / "b")
    assert imported.digest == stored.digest
    assert stored.source == f"record:{A}/old"
    beacon = next(r for r in imported.resources if r.path == "/beacon")
    assert (beacon.method, beacon.status) == ("POST", 204)
    doc = next(r for r in imported.resources if r.path == "/")
    assert doc.headers == (("link", "</a.js>; rel=preload"), ("link", "</b.css>; rel=preload"))
