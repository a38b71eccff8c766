"""Decompression bombs: about 1 KB of WARC that would decode to 600 MB (more than the page
budget) is refused in one line naming the file, the place and the limit, in milliseconds and
without the memory (fuzz/bombs/, made by fuzz/bombs.py)."""

from __future__ import annotations

import resource
import time
import zlib
from pathlib import Path

import pytest

from fuzz import bombs
from h2lab.errors import SpecError
from h2lab.pages.importers import import_source
from h2lab.pages.importers.common import (
    MAX_PAGE_BYTES,
    MAX_RATIO,
    RATIO_FREE_BYTES,
    Bomb,
    bomb_cap,
    decode_body,
)
from tests.unit.test_pages_import import leftovers


def _peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@pytest.mark.parametrize(
    ("name", "where"),
    [
        # the body's record is skipped, and with it the only response
        ("br-body.warc", "warc: no response records (1 unusable; the first: skipped record 0"),
        ("gzip2-body.warc", "warc: no response records (1 unusable; the first: skipped record 0"),
        ("gzip-twice.warc.gz", "warc: decodes to more than"),  # the WARC itself is the bomb
    ],
)
def test_a_1kb_warc_bomb_is_refused_fast_naming_the_limit(
    tmp_path: Path, name: str, where: str
) -> None:
    source = bombs.FOLDER / name
    assert source.stat().st_size < 1500  # about 1 KB ...
    path = tmp_path / name
    path.write_bytes(source.read_bytes())
    rss_before = _peak_rss_bytes()
    start = time.process_time()  # CPU seconds: wall time beside the alone lane is the scheduler's
    with pytest.raises(SpecError) as info:
        import_source(f"warc:{path}", root=tmp_path / "pages")
    cpu_s = time.process_time() - start
    line = info.value.line()
    assert line.startswith(f"{path}: {where}")
    assert "decompression bomb" in line and "MAX_RATIO" in line and "\n" not in line
    assert cpu_s < 0.5, cpu_s  # 16 MB of inflating at most, not 600 MB
    assert _peak_rss_bytes() - rss_before < 200 * 1024**2
    assert leftovers(tmp_path / "pages") == []
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no temporary file left


@pytest.mark.parametrize(
    ("coding", "name", "layers"),
    [("br", "br.bin", "br"), ("gzip, gzip", "gzip2.bin", "gzip, gzip")],
)
def test_decode_body_stops_a_bomb_at_its_ratio_cap(coding: str, name: str, layers: str) -> None:
    raw = (bombs.FOLDER / name).read_bytes()
    with pytest.raises(Bomb, match=f"over {MAX_RATIO} times its {len(raw)} encoded") as info:
        decode_body(raw, None, coding, MAX_PAGE_BYTES)
    assert f"(layers: {layers}; a decompression bomb;" in str(info.value)


def test_a_deflate_bomb_is_not_tried_again_as_raw_deflate() -> None:
    """zlib-format deflate past the cap is a bomb, not a cue to read it as raw deflate."""
    raw = zlib.compress(bytes(RATIO_FREE_BYTES + 1), 9)
    with pytest.raises(Bomb, match=f"more than {RATIO_FREE_BYTES} bytes"):
        decode_body(raw, None, "deflate", MAX_PAGE_BYTES)


def test_the_ratio_cap_lets_real_bodies_through() -> None:
    """Up to 16 MB whatever the ratio; past it, up to 1000 times the encoded size."""
    assert bomb_cap(1000) == RATIO_FREE_BYTES
    assert bomb_cap(100 * 1000**2) == 100 * 1000**3
    import gzip

    zeros = bytes(RATIO_FREE_BYTES)  # 16 MB of zeros: about 16 KB of gzip, ratio 1000+
    assert decode_body(gzip.compress(zeros), None, "gzip", MAX_PAGE_BYTES) == zeros
