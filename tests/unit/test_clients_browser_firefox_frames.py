"""Firefox's recorded frames (upside down, whole window, transparent) become upright JPEGs of
the content area on white, timed from navigation start; the load's SpeedIndex comes from them
and its LCP candidates are kept. Pure: no browser."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from h2lab.clients.browser.firefox.events import BidiNetwork, RawLoad, analyse, lcp_candidates
from h2lab.clients.browser.firefox.frames import Recording, decode
from h2lab.clients.browser.firefox.options import Options
from h2lab.clients.browser.firefox.tab import AFTER_LOAD_JS, mobile_user_agent, tab_commands
from h2lab.clients.browser.options import DEVICES
from h2lab.errors import TrialFailed
from h2lab.spec.options import parse
from tests.har_schema import assert_valid_har
from tests.unit.test_clients_browser_firefox import T0_MS, _load


def parse_options(raw: dict[str, str]) -> Options:
    """What the registry makes of ``raw`` (:func:`h2lab.spec.options.parse`)."""
    return parse(Options, raw, "firefox")


WINDOW = (160, 120)
"""a small window: 160 x 120 device pixels, toolbars 40 px high, content 160 x 80"""
CONTENT = (0.0, 20.0, 80.0, 40.0)
"""content area in CSS pixels at scale 2: x 0, y 40..120 device pixels"""


def _uri(red_rows: int) -> str:
    """A window frame as the recorder gives it: bottom-up, transparent where unpainted; the
    content's top ``red_rows`` device rows are red, a toolbar row at the top is grey."""
    img = Image.new("RGBA", WINDOW, (0, 0, 0, 0))
    for y in range(red_rows):
        for x in range(WINDOW[0]):
            img.putpixel((x, 40 + y), (200, 0, 0, 255))
    for x in range(WINDOW[0]):
        img.putpixel((x, 0), (90, 90, 90, 255))  # toolbar: cut away
    buf = io.BytesIO()
    img.transpose(Image.Transpose.FLIP_TOP_BOTTOM).save(buf, "PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _pixel(img: Image.Image, x: int, y: int) -> tuple[int, int, int]:
    r, g, b = img.convert("RGB").getpixel((x, y))  # type: ignore[misc]
    return int(r), int(g), int(b)


def _recording(*frames: tuple[float, int]) -> Recording:
    return Recording(
        start_ms=T0_MS - 20, frames=[(t, _uri(rows)) for t, rows in frames],
        content=CONTENT, scale=2.0, recorded=len(frames) + 3,
    )  # fmt: skip


def test_frames_are_upright_content_on_white_timed_from_navigation_start() -> None:
    out = decode(_recording((20.0, 0), (120.0, 40)), T0_MS)
    assert [f.t_ms for f in out] == [0.0, 100.0]
    with Image.open(io.BytesIO(out[1].image)) as img:
        assert img.format == "JPEG" and img.size == (160, 80)
        top, bottom = _pixel(img, 5, 2), _pixel(img, 5, 77)
    assert top[0] > 180 and top[1] < 40  # red on top: turned upright
    assert min(bottom) > 245  # transparent became white, the toolbar is gone
    with Image.open(io.BytesIO(out[0].image)) as img:
        assert min(_pixel(img, 5, 2)) > 245


def test_speed_index_from_the_frames() -> None:
    net = BidiNetwork()
    _load(net, "1", "https://a.h2lab.test/", 500, 2, 40)
    frames = decode(_recording((20.0, 0), (220.0, 40), (420.0, 80)), T0_MS)
    timing = {"timeOrigin": T0_MS, "loadEventEnd": 130, "lcps": [["https://a/x.png", 190.5]]}
    analysis = analyse(RawLoad(timing, net.log, frames), "https://a.h2lab.test/")
    # half the content at 200 ms, all of it at 400 ms
    assert analysis.result.speed_index_ms == pytest.approx(200 + 0.5 * 200, abs=1)
    assert analysis.result.visual_complete_ms == 400
    page = analysis.har["log"]["pages"][0]
    assert page["_lcp_candidates_ms"] == {"https://a/x.png": 190.5}
    assert page["pageTimings"]["_frames"] == 3


def test_a_frame_that_is_not_a_png_fails_the_trial() -> None:
    bad = Recording(T0_MS, [(1.0, "data:image/png;base64,AAAA")], CONTENT, 1.0, 1)
    with pytest.raises(TrialFailed, match="recorded frame cannot be decoded"):
        decode(bad, T0_MS)


def test_lcp_candidates_skip_what_is_not_a_paint_time() -> None:
    got = lcp_candidates({"lcps": [["a", 10.0], ["b", 0], ["c"], "d", ["e", "x"]]})
    assert got == {"a": 10.0}
    assert "lcps: lcps" in AFTER_LOAD_JS


def test_visual_and_filmstrip_options() -> None:
    assert parse_options({}).visual and not parse_options({}).filmstrip
    assert not parse_options({"visual": "0"}).visual
    assert parse_options({"filmstrip": "1"}).filmstrip
    with pytest.raises(ValueError, match="filmstrip=1 needs the frames"):
        parse_options({"visual": "0", "filmstrip": "1"})
    with pytest.raises(ValueError, match="visual: expected 0 or 1"):
        parse_options({"visual": "yes"})


def test_a_mobile_tab_is_a_phones_viewport_screen_and_user_agent() -> None:
    desktop = tab_commands(DEVICES["desktop"], "153.7.0esr", "c1", "u1")
    assert desktop == [
        (
            "browsingContext.setViewport",
            {"context": "c1", "viewport": {"width": 1366, "height": 768}, "devicePixelRatio": 1.0},
        )
    ]
    mobile = dict(tab_commands(DEVICES["mobile"], "153.7.0esr", "c1", "u1"))
    assert mobile["browsingContext.setViewport"]["devicePixelRatio"] == 1.75
    ua = mobile["emulation.setUserAgentOverride"]
    assert ua["userAgent"] == mobile_user_agent("153.7.0esr")
    assert "Android" in ua["userAgent"] and "Firefox/153.0" in ua["userAgent"]
    assert ua["userContexts"] == ["u1"]
    assert mobile["emulation.setScreenSettingsOverride"]["screenArea"] == {
        "width": 412,
        "height": 823,
    }


def test_cpu_throttling_is_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match=r"firefox has no DevTools CPU throttling.*firefox:cores="):
        parse_options({"cpu": "4"})
    assert parse_options({"cores": "0.25"}).cores == 0.25
    assert parse_options({"device": "mobile"}).device == "mobile"
    with pytest.raises(ValueError, match="device: expected one of desktop, mobile"):
        parse_options({"device": "tablet"})


def test_resource_timing_gives_the_requests_without_network_events() -> None:
    timing = {
        "timeOrigin": T0_MS,
        "loadEventEnd": 130,
        "resources": [
            ["https://a.h2lab.test/", 0, 20.5, 40, 500, "h2", 200],
            ["https://a.h2lab.test/x.png", 45, 60, 120.25, 30_000, "h2", 200],
            # cross-origin without Timing-Allow-Origin: times only
            ["https://b.h2lab.test/y.js", 50, 0, 90, 0, "", 0],
            ["data:image/png;base64,AAAA", 1, 1, 2, 4, "", 0],
            ["https://a.h2lab.test/never", 55, 0, 0, 0, "", 0],  # not finished
            ["https://a.h2lab.test/x.png", 130, 0, 140, 30_000, "", 0],  # from the memory cache
            "junk",
        ],
    }
    analysis = analyse(RawLoad(timing, BidiNetwork().log), "https://a.h2lab.test/", network=False)
    rows = {r.url: r for r in analysis.result.resources}
    assert list(rows) == [
        "https://a.h2lab.test/", "https://a.h2lab.test/x.png", "https://b.h2lab.test/y.js"
    ]  # fmt: skip
    x = rows["https://a.h2lab.test/x.png"]
    assert (x.start_ms, x.ttfb_ms, x.end_ms, x.bytes, x.protocol, x.status) == (
        45, 60, 120.25, 30_000, "h2", 200
    )  # fmt: skip
    y = rows["https://b.h2lab.test/y.js"]
    assert (y.bytes, y.protocol, y.status, y.ttfb_ms) == (0, "", None, None)
    assert analysis.result.body_bytes == 30_500
    assert analysis.result.pdt_ms == pytest.approx(120.25)
    assert analysis.result.failed_requests == 0
    # its HAR: the page's wall-clock dates, no phases (Resource Timing of another origin
    # tells none): -1 there; no status: 0
    har = analysis.har
    assert_valid_har(har)
    page, entries = har["log"]["pages"][0], har["log"]["entries"]
    assert page["startedDateTime"] == "2023-11-14T22:13:20.000Z"
    assert [e["startedDateTime"] for e in entries] == [
        "2023-11-14T22:13:20.000Z", "2023-11-14T22:13:20.045Z", "2023-11-14T22:13:20.050Z"
    ]  # fmt: skip
    assert entries[1]["timings"] == {
        "blocked": -1, "dns": -1, "connect": -1, "ssl": -1, "send": 0, "wait": 15.0,
        "receive": 60.25,
    }  # fmt: skip
    assert entries[2]["response"]["status"] == 0 and entries[2]["timings"]["wait"] == 40.0


def test_network_option_and_its_limits() -> None:
    assert parse_options({}).network and not parse_options({"network": "0"}).network
    with pytest.raises(ValueError, match="network=0 cannot see"):
        parse_options({"network": "0", "idle": "2s"})
