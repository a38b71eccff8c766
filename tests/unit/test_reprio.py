"""h2lab.reprio.client: the frame codec and the client's session (frames in, bytes out), and
h2lab.reprio.study's pure parts (spans, what an outcome says)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from PIL import Image

from h2lab.reprio import study as reprio
from h2lab.reprio.client import (
    DATA,
    END_HEADERS,
    END_STREAM,
    HEADERS,
    PADDED,
    PING,
    PREFACE,
    PRIORITY_FLAG,
    PRIORITY_UPDATE,
    SETTINGS,
    STATUS_200,
    WINDOW_UPDATE,
    Frame,
    FrameReader,
    Plan,
    Session,
    StreamLog,
    frame,
    priority_field,
    request_headers,
)
from h2lab.reprio.study import Outcome, spans

PLAN = Plan("o1.h2lab.test", ("/a.jpg", "/b.jpg"), "/late.css", late_after_bytes=20_000)


def _frames(data: bytes) -> list[Frame]:
    return list(FrameReader().feed(data))


def test_frame_header_is_length_type_flags_stream() -> None:
    f = frame(HEADERS, END_STREAM | END_HEADERS, 3, b"abc")
    assert f[:9] == b"\x00\x00\x03\x01\x05\x00\x00\x00\x03" and f[9:] == b"abc"


def test_reader_yields_whole_frames_across_feeds() -> None:
    data = frame(DATA, 0, 1, b"x" * 10) + frame(PING, 0, 0, b"12345678")
    reader = FrameReader()
    assert list(reader.feed(data[:12])) == []
    got = list(reader.feed(data[12:]))
    assert [(f.kind, f.stream_id, f.data_bytes) for f in got] == [(DATA, 1, 10), (PING, 0, 0)]


def test_padded_data_counts_only_the_data() -> None:
    f = _frames(frame(DATA, PADDED, 1, bytes([3]) + b"hello" + b"\0\0\0"))[0]
    assert f.data_bytes == 5


def test_priority_field_sets_exclusive_bit_and_weight_minus_one() -> None:
    assert priority_field(0, 256, True) == b"\x80\x00\x00\x00\xff"
    assert priority_field(5, 16, False) == b"\x00\x00\x00\x05\x0f"
    with pytest.raises(ValueError, match=r"weight must be 1\.\.256"):
        priority_field(0, 0, False)


def test_request_headers_are_literal_fields_without_indexing() -> None:
    block = request_headers("h", "/p")
    assert block.startswith(b"\x00\x07:method\x03GET")
    assert b"\x00\x0a:authority\x01h" in block and block.endswith(b"\x00\x05:path\x02/p")


def test_session_starts_with_preface_settings_window_and_the_low_requests() -> None:
    s = Session(PLAN, now_ms=1000.0)
    out = s.start()
    assert out.startswith(PREFACE)
    frames = _frames(out[len(PREFACE) :])
    assert [f.kind for f in frames] == [SETTINGS, WINDOW_UPDATE, HEADERS, HEADERS]
    assert struct.unpack(">HIHI", frames[0].payload) == (2, 0, 4, 6 * 1024 * 1024)
    heads = frames[2:]
    assert [f.stream_id for f in heads] == [1, 3]
    assert all(f.flags == END_STREAM | END_HEADERS | PRIORITY_FLAG for f in heads)
    assert all(f.payload[:5] == b"\x00\x00\x00\x00\x0f" for f in heads)  # root, weight 16


def test_session_asks_for_the_late_request_after_enough_low_bytes_and_logs_times() -> None:
    s = Session(PLAN, now_ms=1000.0)
    s.start()
    assert s.receive(Frame(SETTINGS, 0, 0, b""), 1050.0) == frame(SETTINGS, 1, 0, b"")
    assert s.receive(Frame(HEADERS, END_HEADERS, 1, bytes([STATUS_200])), 1100.0) == b""
    assert s.receive(Frame(DATA, 0, 1, b"x" * 16_000), 1120.0) == b""
    late = _frames(s.receive(Frame(DATA, 0, 3, b"y" * 4_000), 1130.0))
    assert [(f.kind, f.stream_id) for f in late] == [(HEADERS, 5)]
    assert late[0].payload[:5] == b"\x80\x00\x00\x00\xff"  # exclusive on the root, 256
    s.receive(Frame(HEADERS, END_HEADERS, 5, bytes([STATUS_200])), 1200.0)
    s.receive(Frame(DATA, END_STREAM, 5, b"c" * 100), 1210.0)
    css = s.streams[5]
    assert (css.requested_ms, css.headers_ms, css.ended_ms, css.bytes) == (130.0, 200.0, 210.0, 100)
    assert css.duration_ms == 80.0 and css.status_200 and css.exclusive
    assert s.streams[1].arrivals == [(120.0, 16_000)] and not s.done
    s.receive(Frame(DATA, END_STREAM, 1, b""), 1300.0)
    s.receive(Frame(DATA, END_STREAM, 3, b""), 1310.0)
    assert s.done


def test_session_answers_pings_and_returns_connection_window_per_mebibyte() -> None:
    s = Session(PLAN, now_ms=0.0)
    s.start()
    assert s.receive(Frame(PING, 0, 0, b"12345678"), 1.0) == frame(PING, 1, 0, b"12345678")
    out = b""
    for i in range(70):
        out += s.receive(Frame(DATA, 0, 1, b"x" * 16_000), 2.0 + i)
    updates = [f for f in _frames(out) if f.kind == WINDOW_UPDATE]
    assert [(f.stream_id, struct.unpack(">I", f.payload)[0]) for f in updates] == [(0, 1_056_000)]


def _log(path: str, requested: float, arrivals: list[tuple[float, int]], excl: bool) -> StreamLog:
    log = StreamLog(path, 1, 256 if excl else 16, excl, requested, status_200=True)
    log.arrivals = arrivals
    log.bytes = sum(n for _, n in arrivals)
    log.ended_ms = arrivals[-1][0]
    return log


def test_outcome_counts_images_after_the_late_one_and_bytes_ahead_of_it() -> None:
    a = _log("/img/00.jpg", 0.0, [(100.0, 10), (500.0, 20), (900.0, 30)], False)
    b = _log("/img/01.jpg", 0.0, [(150.0, 10), (350.0, 40)], False)
    css = _log("/late.css", 300.0, [(600.0, 5)], True)
    o = Outcome("x", (a, b, css))
    assert o.high_ms == 300.0
    assert o.low_median_ms == 625.0
    assert o.low_after_high == 1
    assert o.bytes_ahead == 20 + 40  # arrived in (300, 600]


def test_spans_join_frames_closer_than_the_gap() -> None:
    assert spans([(0.0, 1), (10.0, 2), (50.0, 4), (60.0, 8)], gap_ms=20.0) == [
        (0.0, 10.0, 3),
        (50.0, 60.0, 12),
    ]


def test_page_is_ten_images_and_a_stylesheet_drawn_from_the_seed(tmp_path: Path) -> None:
    a = reprio.page(tmp_path / "a")
    b = reprio.page(tmp_path / "b")
    assert a.digest == b.digest != reprio.page(tmp_path / "c", seed=1).digest
    sizes = {r.path: r.size_bytes for r in a.resources}
    assert sizes["/late.css"] == reprio.CSS_BYTES
    assert [sizes[p] for p in reprio.plan().low] == [reprio.IMAGE_BYTES] * reprio.IMAGES


def test_browser_page_has_decodable_images_and_adds_the_stylesheet_late(tmp_path: Path) -> None:
    page = reprio.browser_page(tmp_path)
    by_path = {r.path: r for r in page.resources}
    png = by_path["/img/00.png"]
    with Image.open(page.body_file(png)) as im:
        assert im.size == (reprio.PNG_SIDE_PX, reprio.PNG_SIDE_PX)
    assert abs(png.size_bytes - reprio.IMAGE_BYTES) < 1000
    html = page.body_file(page.entry).read_text()
    assert html.count("<img ") == reprio.IMAGES
    assert (
        f"l.href = '/late.css'; document.head.appendChild(l); }}, {reprio.BROWSER_LATE_MS});"
        in html
    )
    assert by_path["/late.css"].size_bytes == reprio.CSS_BYTES


def test_session_gives_a_streams_window_back_when_half_used() -> None:
    plan = Plan("h", ("/a",), "/c", late_after_bytes=10**9, stream_window_bytes=65_535)
    s = Session(plan, now_ms=0.0)
    frames = _frames(s.start()[len(PREFACE) :])
    assert struct.unpack(">HIHI", frames[0].payload)[3] == 65_535
    assert s.receive(Frame(DATA, 0, 1, b"x" * 16_384), 1.0) == b""
    out = _frames(s.receive(Frame(DATA, 0, 1, b"x" * 16_384), 2.0))
    assert [(f.kind, f.stream_id, struct.unpack(">I", f.payload)[0]) for f in out] == [
        (WINDOW_UPDATE, 1, 32_768)
    ]


def test_rfc9218_plan_sends_priority_fields_without_weights_and_priority_updates() -> None:
    plan = Plan(
        "o1", ("/a", "/b"), "/c.css", 20_000, also_high=("/d.js",), low_priority="u=5, i",
        high_priority="u=5, i", high_update="u=0", rfc7540=False,
    )  # fmt: skip
    s = Session(plan, now_ms=0.0)
    heads = _frames(s.start()[len(PREFACE) :])[2:]
    assert all(f.flags == END_STREAM | END_HEADERS for f in heads)  # no RFC 7540 fields
    assert all(f.payload.endswith(b"\x08priority\x06u=5, i") for f in heads)
    late = _frames(s.receive(Frame(DATA, 0, 1, b"x" * 20_000), 10.0))
    assert [(f.kind, f.stream_id) for f in late] == [
        (HEADERS, 5), (PRIORITY_UPDATE, 0), (HEADERS, 7), (PRIORITY_UPDATE, 0),
    ]  # fmt: skip
    assert late[1].payload == struct.pack(">I", 5) + b"u=0"
    assert late[3].payload == struct.pack(">I", 7) + b"u=0"
    assert s.streams[5].late and s.streams[7].late and not s.streams[1].late
    assert not s.done
