"""h2lab.metrics.visual: histograms, frame progress and SpeedIndex on images built in memory."""

from __future__ import annotations

import io
from typing import Any

import pytest
from PIL import Image

from h2lab.metrics.visual import (
    Frame,
    FrameDecodeError,
    frame_progress,
    histogram,
    visual_metrics,
)

WIDTH, HEIGHT = 800, 600
WHITE = (255, 255, 255)
RED = (255, 0, 0)
BLUE = (0, 0, 255)
GREY = (90, 120, 150)

Rgb = tuple[int, int, int]


def _encode(img: Image.Image, fmt: str) -> bytes:
    out = io.BytesIO()
    if fmt == "JPEG":
        img.save(out, format="JPEG", quality=80)
    else:
        img.save(out, format=fmt)
    return out.getvalue()


def _page(left: Rgb, right: Rgb, fmt: str = "PNG") -> bytes:
    """A viewport whose left and right halves are filled with one colour each."""
    img = Image.new("RGB", (WIDTH, HEIGHT), WHITE)
    img.paste(left, (0, 0, WIDTH // 2, HEIGHT))
    img.paste(right, (WIDTH // 2, 0, WIDTH, HEIGHT))
    return _encode(img, fmt)


def _blank(fmt: str = "PNG") -> bytes:
    return _page(WHITE, WHITE, fmt)


def _full(fmt: str = "PNG") -> bytes:
    return _page(GREY, GREY, fmt)


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
@pytest.mark.parametrize("with_blank_first", [True, False])
def test_page_painted_at_once(fmt: str, with_blank_first: bool) -> None:
    frames = [Frame(400.0, _full(fmt))]
    if with_blank_first:
        frames.insert(0, Frame(50.0, _blank(fmt)))
    vm = visual_metrics(frames)
    assert vm.speed_index_ms == pytest.approx(400.0, abs=1.0)
    assert vm.visual_complete_ms == 400.0
    assert vm.first_visual_change_ms == 400.0
    assert vm.frames == len(frames)
    assert vm.progress[-1] == (400.0, 1.0)


@pytest.mark.parametrize(("fmt", "rel"), [("PNG", 0.01), ("JPEG", 0.02)])
def test_two_half_blocks(fmt: str, rel: float) -> None:
    frames = [
        Frame(100.0, _blank(fmt)),
        Frame(300.0, _page(RED, WHITE, fmt)),
        Frame(900.0, _page(RED, BLUE, fmt)),
    ]
    vm = visual_metrics(frames)
    assert [t for t, _ in vm.progress] == [100.0, 300.0, 900.0]
    for (_, got), want in zip(vm.progress, [0.0, 0.5, 1.0], strict=True):
        assert got == pytest.approx(want, abs=0.02)
    assert vm.speed_index_ms == pytest.approx(300.0 + 0.5 * 600.0, rel=rel)
    assert vm.first_visual_change_ms == 300.0
    assert vm.visual_complete_ms == 900.0


def test_frames_are_sorted_by_time() -> None:
    frames = [
        Frame(900.0, _page(RED, BLUE)),
        Frame(100.0, _blank()),
        Frame(300.0, _page(RED, WHITE)),
    ]
    vm = visual_metrics(frames)
    assert [t for t, _ in vm.progress] == [100.0, 300.0, 900.0]
    assert vm.speed_index_ms == pytest.approx(600.0, rel=0.01)


@pytest.mark.parametrize("count", [0, 1, 3])
def test_blank_only_frames_have_no_metrics(count: int) -> None:
    frames = [Frame(100.0 * (k + 1), _blank()) for k in range(count)]
    vm = visual_metrics(frames)
    assert vm.speed_index_ms is None
    assert vm.visual_complete_ms is None
    assert vm.first_visual_change_ms is None
    assert vm.frames == count
    assert vm.progress == ()


def test_progress_regression_completes_at_reappearance() -> None:
    frames = [
        Frame(100.0, _full()),
        Frame(200.0, _blank()),
        Frame(500.0, _full()),
    ]
    vm = visual_metrics(frames)
    assert [p for _, p in vm.progress] == pytest.approx([1.0, 0.0, 1.0])
    assert vm.first_visual_change_ms == 100.0
    assert vm.visual_complete_ms == 500.0
    # blank 0..100, complete 100..200, blank again 200..500
    assert vm.speed_index_ms == pytest.approx(100.0 + 300.0)


def test_histogram_ignores_near_white_pixels() -> None:
    img = Image.new("RGB", (10, 10), WHITE)
    img.paste((251, 252, 253), (0, 0, 10, 2))  # near-white: 20 px, ignored
    img.paste((250, 255, 255), (0, 2, 10, 3))  # one channel at 250: 10 px, counted
    img.paste((0, 0, 0), (0, 3, 10, 6))  # black: 30 px, counted
    red, green, blue = histogram(_encode(img, "PNG"))
    assert sum(red) == sum(green) == sum(blue) == 40
    assert red[250] == 10
    assert green[255] == blue[255] == 10
    assert red[0] == green[0] == blue[0] == 30
    assert red[251] == green[252] == blue[253] == 0


def test_slop_matches_within_five_levels() -> None:
    def one_bin(level: int, count: int = 100) -> tuple[list[int], list[int], list[int]]:
        channel = [0] * 256
        channel[level] = count
        return list(channel), list(channel), list(channel)

    empty = ([0] * 256, [0] * 256, [0] * 256)
    final = one_bin(100)
    assert frame_progress(one_bin(105), empty, final) == 1.0
    assert frame_progress(one_bin(95), empty, final) == 1.0
    assert frame_progress(one_bin(106), empty, final) == 0.0
    assert frame_progress(one_bin(100, count=25), empty, final) == pytest.approx(0.25)
    # each frame pixel is used once: too many pixels do not push progress past 1
    assert frame_progress(one_bin(100, count=500), empty, final) == 1.0


def test_undecodable_frame_is_an_error() -> None:
    with pytest.raises(FrameDecodeError, match="cannot decode"):
        histogram(b"not an image")


def test_histogram_uses_pillow_histogram_not_pixel_loops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[dict[str, Any]] = []
    real_histogram = Image.Image.histogram

    def spy(self: Image.Image, *args: Any, **kwargs: Any) -> list[int]:
        calls.append({"mode": self.mode, "args": args, "kwargs": kwargs})
        return real_histogram(self, *args, **kwargs)

    def forbidden(*_: Any, **__: Any) -> Any:
        raise AssertionError("per-pixel access in histogram()")

    monkeypatch.setattr(Image.Image, "histogram", spy)
    monkeypatch.setattr(Image.Image, "getpixel", forbidden)
    monkeypatch.setattr(Image.Image, "getdata", forbidden)
    monkeypatch.setattr(Image.Image, "get_flattened_data", forbidden, raising=False)

    red, _, _ = histogram(_page(RED, WHITE))

    assert len(calls) == 1
    assert calls[0]["mode"] == "RGB"
    mask = calls[0]["kwargs"].get("mask", calls[0]["args"][0] if calls[0]["args"] else None)
    assert isinstance(mask, Image.Image)
    assert mask.size == (WIDTH, HEIGHT)
    assert red[255] == WIDTH // 2 * HEIGHT


def _reference_match(hist: list[int], start: list[int], final: list[int]) -> tuple[int, int]:
    """WebPageTest's loop as written there: every window scanned from its lowest bin."""
    available = [abs(h - s) for h, s in zip(hist, start, strict=True)]
    matched = total = 0
    for i in range(256):
        target = abs(final[i] - start[i])
        total += target
        for j in range(max(0, i - 5), min(256, i + 6)):
            take = min(target, available[j])
            available[j] -= take
            target -= take
            matched += take
    return matched, total


def test_channel_match_equals_the_reference_loop_on_random_histograms() -> None:
    import random

    from h2lab.metrics.visual import _channel_match

    rng = random.Random(7)
    for density in (0.05, 0.3, 1.0):
        for _ in range(40):
            h, s, f = (
                [rng.randint(1, 300) if rng.random() < density else 0 for _ in range(256)]
                for _ in range(3)
            )
            assert _channel_match(h, s, f) == _reference_match(h, s, f)


# ------------------------------------------------------------ milestones and the WPT mode


def test_milestones_follow_progress() -> None:
    """Quarters of the page appear one by one: 85% is reached with the fourth, as are 95 and
    99; the last visual change is the last frame that differs from the one before."""
    frames = [
        Frame(100.0, _blank()),
        Frame(200.0, _page(RED, WHITE)),
        Frame(600.0, _page(RED, BLUE)),
        Frame(700.0, _page(RED, BLUE)),  # no change: not the last visual change
    ]
    vm = visual_metrics(frames)
    assert vm.first_visual_change_ms == 200.0
    assert vm.last_visual_change_ms == 600.0
    assert vm.visual_complete_85_ms == vm.visual_complete_95_ms == 600.0
    assert vm.visual_complete_99_ms == vm.visual_complete_ms == 600.0
    assert vm.speed_index_ms is not None
    assert vm.first_visual_change_ms <= vm.speed_index_ms <= vm.last_visual_change_ms


def test_a_milestone_lost_is_found_again_where_progress_climbs_back() -> None:
    frames = [Frame(100.0, _full()), Frame(200.0, _page(GREY, WHITE)), Frame(500.0, _full())]
    vm = visual_metrics(frames)
    assert [p for _, p in vm.progress] == pytest.approx([1.0, 0.5, 1.0], abs=0.01)
    assert vm.visual_complete_85_ms == vm.visual_complete_99_ms == 500.0
    assert vm.first_visual_change_ms == 100.0 and vm.last_visual_change_ms == 500.0


def test_unknown_mode_is_an_error() -> None:
    with pytest.raises(ValueError, match="SpeedIndex mode must be one of h2lab, wpt"):
        visual_metrics([Frame(1.0, _full())], "lighthouse")


def test_wpt_mode_takes_the_first_frame_as_the_start_state() -> None:
    """A grey header present from the first frame is the start in WPT mode (h2lab's mode
    counts it as progress: its start is a white page)."""
    header = _page(GREY, WHITE, "PNG")
    frames = [Frame(100.0, header), Frame(300.0, _page(GREY, BLUE)), Frame(500.0, _full())]
    wpt = visual_metrics(frames, "wpt")
    h2lab = visual_metrics(frames)
    assert [p for _, p in wpt.progress] == [0.0, 0.0, 1.0]  # the blue half is no grey half
    assert wpt.first_visual_change_ms == 300.0  # the first frame that differs from the first
    assert wpt.speed_index_ms == 500.0
    assert h2lab.first_visual_change_ms == 100.0
    assert h2lab.speed_index_ms is not None and h2lab.speed_index_ms < 500.0


def test_wpt_progress_pools_channels_and_rounds_down() -> None:
    from h2lab.metrics.visual import wpt_progress

    def bins(level: int, count: int) -> list[int]:
        channel = [0] * 256
        channel[level] = count
        return channel

    empty = ([0] * 256, [0] * 256, [0] * 256)
    final = (bins(0, 1000), bins(0, 1000), bins(0, 1000))
    # red complete, green and blue at 2/3 less one pixel: (1000 + 666 + 666) / 3000 = 77.7%
    frame = (bins(0, 1000), bins(0, 666), bins(0, 666))
    assert wpt_progress(frame, empty, final) == 0.77
    # no slop: a level away matches nothing
    assert wpt_progress((bins(1, 1000),) * 3, empty, final) == 0.0


def _painted_page(step: int, steps: int) -> bytes:
    """A 'page' painting in rows of coloured text-like stripes, ``step`` of ``steps`` done."""
    img = Image.new("RGB", (WIDTH, HEIGHT), WHITE)
    rows = 12
    for row in range(rows * step // steps):
        colour = (30 + 17 * row % 200, 80 + 29 * row % 150, 200 - 13 * row % 180)
        top = row * HEIGHT // rows
        for x in range(20, WIDTH - 20, 40):
            img.paste(colour, (x, top + 8, x + 28, top + HEIGHT // rows - 8))
    return _encode(img, "JPEG")


@pytest.mark.parametrize("regress", [False, True])
def test_wpt_mode_agrees_with_visualmetrics(tmp_path: Any, regress: bool) -> None:
    """The same JPEG frames to h2lab's WPT mode and to browsertime's visualmetrics-portable:
    SpeedIndex within 1%, the visual change and complete times equal."""
    from tests.unit.visualmetrics_reference import run_visualmetrics, write_frames

    times = [0, 180, 260, 410, 650, 900, 1320]
    frames = [Frame(float(t), _painted_page(k, len(times) - 1)) for k, t in enumerate(times)]
    if regress:  # the page is partly cleared, then repainted
        frames.insert(5, Frame(800.0, _painted_page(2, len(times) - 1)))
    same = write_frames(frames, tmp_path / "frames")
    reference = run_visualmetrics(tmp_path / "frames")
    ours = visual_metrics(same, "wpt")
    print(f"regress={regress}: h2lab-wpt SpeedIndex {ours.speed_index_ms:.1f}, visualmetrics "
          f"{reference['SpeedIndex']}; progress {reference['VisualProgress']}")  # fmt: skip
    assert ours.speed_index_ms == pytest.approx(float(str(reference["SpeedIndex"])), rel=0.01)
    assert ours.first_visual_change_ms == reference["FirstVisualChange"]
    assert ours.last_visual_change_ms == reference["LastVisualChange"]
    for mark in (85, 95, 99):
        assert getattr(ours, f"visual_complete_{mark}_ms") == reference[f"VisualComplete{mark}"]
    got = ", ".join(f"{t:.0f}={round(100 * p)}" for t, p in ours.progress)
    assert got == reference["VisualProgress"]
