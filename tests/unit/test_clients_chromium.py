from __future__ import annotations

import base64
import io
from typing import Any

import pytest
from PIL import Image

from h2lab import clients
from h2lab.clients.chromium import (
    Chromium,
    NetworkLog,
    Options,
    _Tab,
    describe_failed,
    describe_unfinished,
    failed_page_requests,
    launch_flags,
    page_url,
    parse_options,
    trace_frames,
)
from h2lab.errors import SpecError
from h2lab.pages import resolve_page


def test_options_default_and_parsed() -> None:
    assert parse_options({}) == Options()
    got = parse_options({"device": "mobile", "cpu": "4", "filmstrip": "1"})
    assert got == Options(device="mobile", cpu_slowdown=4.0, filmstrip=True)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"device": "tablet"}, "device must be one of desktop, mobile, got 'tablet'"),
        ({"cpu": "fast"}, "cpu must be a slowdown factor like 4, got 'fast'"),
        ({"cpu": "0.5"}, "cpu slowdown must be 1..20, got 0.5"),
        ({"netlog": "yes"}, "netlog must be 0 or 1, got 'yes'"),
        ({"gpu": "1"}, "unknown chromium option 'gpu'"),
    ],
)
def test_bad_options_name_the_option(options: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(".", r"\.")):
        parse_options(options)


def test_client_spec_errors_are_spec_errors() -> None:
    with pytest.raises(SpecError) as exc:
        clients.get("chromium:device=tablet", "x.toml", "factors.client[0]")
    assert exc.value.field == "factors.client[0]"
    with pytest.raises(SpecError, match="not key=value"):
        clients.get("chromium:mobile", "x.toml", "factors.client[0]")
    with pytest.raises(SpecError, match="h2load takes only the options clients and per_host"):
        clients.get("h2load:cpu=4", "x.toml", "factors.client[0]")
    with pytest.raises(SpecError, match=r"clients must be an integer 1\.\.100, got '0'"):
        clients.get("h2load:clients=0", "x.toml", "factors.client[0]")
    with pytest.raises(SpecError, match=r"per_host must be an integer 1\.\.1000, got 'x'"):
        clients.get("h2load:per_host=x", "x.toml", "factors.client[0]")


def test_chromium_protocols_exclude_pipelining_and_cleartext_h2() -> None:
    c = clients.get("chromium")
    assert c.protocols == frozenset({"h1c", "h1s", "h2s", "h3"})


def test_h3_forces_quic_for_every_lab_origin() -> None:
    hosts = {"o2.h2lab.test": "10.2.0.2", "o1.h2lab.test": "10.2.0.1"}
    h3 = launch_flags("h3", hosts, "AAAA=")
    assert "--disable-quic" not in h3 and "--enable-quic" in h3
    assert "--origin-to-force-quic-on=o1.h2lab.test:443,o2.h2lab.test:443" in h3
    assert "--disable-quic" in launch_flags("h2s", hosts, None)


def test_idle_option_parses_a_duration() -> None:
    assert parse_options({"idle": "2s"}).idle_ms == 2000
    assert parse_options({}).idle_ms == 0
    with pytest.raises(ValueError, match="idle must be a duration"):
        parse_options({"idle": "soon"})
    with pytest.raises(ValueError, match=r"0\.\.30s"):
        parse_options({"idle": "31s"})


def test_launch_flags_per_protocol() -> None:
    hosts = {"o2.h2lab.test": "10.2.0.2", "o1.h2lab.test": "10.2.0.1"}
    h2 = launch_flags("h2s", hosts, "AAAA=")
    h1 = launch_flags("h1s", hosts, "AAAA=")
    assert "--disable-http2" in h1 and "--disable-http2" not in h2
    assert "--no-sandbox" in h2 and "--disable-quic" in h2
    rules = next(f for f in h2 if f.startswith("--host-resolver-rules="))
    assert rules == (
        "--host-resolver-rules=MAP o1.h2lab.test 10.2.0.1, MAP o2.h2lab.test 10.2.0.2, "
        "MAP * ~NOTFOUND"
    )
    assert "--ignore-certificate-errors-spki-list=AAAA=" in h2
    assert not any(f == "--ignore-certificate-errors" for f in h2)
    # h1c must not be upgraded to https behind our back
    assert any("HttpsUpgrades" in f for f in launch_flags("h1c", hosts, None))


def test_page_url_scheme_per_protocol(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("H2LAB_CACHE", str(tmp_path))
    page = resolve_page("synthetic:n=2,size=1KB,origins=1")
    assert page_url(page, "h1c") == "http://o1.h2lab.test/index.html"
    assert page_url(page, "h2s") == "https://o1.h2lab.test/index.html"


def _jpeg(colour: tuple[int, int, int]) -> str:
    buf = io.BytesIO()
    Image.new("RGB", (40, 30), colour).save(buf, "JPEG")
    return base64.b64encode(buf.getvalue()).decode()


def test_trace_frames_are_timed_from_the_main_frame_navigation() -> None:
    trace = {
        "traceEvents": [
            {"name": "Screenshot", "ts": 900_000, "args": {"snapshot": _jpeg((255, 255, 255))}},
            {
                "name": "navigationStart",
                "ts": 500_000,
                "args": {"data": {"isLoadingMainFrame": True, "documentLoaderURL": ""}},
            },
            {
                "name": "navigationStart",
                "ts": 1_000_000,
                "args": {
                    "data": {"isLoadingMainFrame": True, "documentLoaderURL": "https://a.test/"}
                },
            },
            {"name": "Screenshot", "ts": 1_250_000, "args": {"snapshot": _jpeg((200, 0, 0))}},
            {"name": "Screenshot", "ts": 1_400_000, "args": {"snapshot": _jpeg((0, 0, 200))}},
        ]
    }
    nav_s, frames = trace_frames(trace)
    assert nav_s == 1.0
    assert [f.t_ms for f in frames] == [250.0, 400.0]


def test_network_log_rows_and_har() -> None:
    log = NetworkLog()
    log.on(
        "Network.requestWillBeSent",
        {
            "requestId": "1",
            "timestamp": 10.0,
            "request": {"url": "https://o1.h2lab.test/a.png", "initialPriority": "Low"},
        },
    )
    log.on(
        "Network.responseReceived",
        {
            "requestId": "1",
            "response": {
                "protocol": "h2",
                "connectionId": 42,
                "status": 200,
                "timing": {"requestTime": 10.0, "receiveHeadersEnd": 30.0},
            },
        },
    )
    log.on("Network.dataReceived", {"requestId": "1", "dataLength": 600})
    log.on("Network.dataReceived", {"requestId": "1", "dataLength": 400})
    log.on("Network.loadingFinished", {"requestId": "1", "timestamp": 10.05})
    log.on(
        "Network.requestWillBeSent",
        {"requestId": "2", "timestamp": 10.01, "request": {"url": "https://o1.h2lab.test/b"}},
    )
    log.on("Network.loadingFailed", {"requestId": "2", "timestamp": 10.02, "errorText": "x"})
    (row,) = log.resources(t0_s=9.99)
    assert row.origin == "o1.h2lab.test"
    assert row.start_ms == pytest.approx(10.0)
    assert row.ttfb_ms == pytest.approx(40.0)
    assert row.end_ms == pytest.approx(60.0)
    assert (row.bytes, row.protocol, row.connection, row.priority) == (1000, "h2", "42", "Low")
    har = log.har("https://o1.h2lab.test/", 9.99, {"plt_ms": 70.0})
    (entry,) = har["log"]["entries"]
    assert entry["connection"] == "42"
    assert entry["response"]["httpVersion"] == "h2"
    assert entry["_priority"] == "Low"
    assert har["log"]["pages"][0]["pageTimings"]["onLoad"] == 70.0
    # a failed load's log: every request, the failed and the unfinished ones marked
    log.on(
        "Network.requestWillBeSent",
        {"requestId": "3", "timestamp": 10.03, "request": {"url": "https://o1.h2lab.test/c"}},
    )
    every = log.har("https://o1.h2lab.test/", 9.99, {}, every=True)["log"]["entries"]
    assert [(e["request"]["url"][-1], e.get("_error")) for e in every] == [
        ("g", None),
        ("b", "x"),
        ("c", "unfinished"),
    ]


def test_network_log_keeps_a_redirect_as_its_own_row_with_statuses() -> None:
    log = NetworkLog()
    req = {"url": "https://a.test/old", "headers": {}, "initialPriority": "VeryHigh"}
    log.on("Network.requestWillBeSent", {"requestId": "1", "timestamp": 1.0, "request": req})
    moved = {"url": "https://a.test/new", "headers": {}, "initialPriority": "VeryHigh"}
    redirect = {"status": 301, "protocol": "h2", "connectionId": 7}
    log.on("Network.requestWillBeSent", {"requestId": "1", "timestamp": 1.1, "request": moved,
                                         "redirectResponse": redirect})  # fmt: skip
    resp = {"status": 200, "protocol": "h2", "connectionId": 7, "headers": {}}
    log.on("Network.responseReceived", {"requestId": "1", "timestamp": 1.2, "response": resp})
    log.on("Network.dataReceived", {"requestId": "1", "dataLength": 10})
    log.on("Network.loadingFinished", {"requestId": "1", "timestamp": 1.3})
    rows = log.resources(1.0)
    assert [(r.url, r.status, r.end_ms) for r in rows] == [
        ("https://a.test/old", 301, pytest.approx(100.0)),
        ("https://a.test/new", 200, pytest.approx(300.0)),
    ]


class _FakeCdp:
    """Answers SystemInfo.getProcessInfo with the browser's summed CPU seconds in turn."""

    def __init__(self, cpu_s: list[float]) -> None:
        self.cpu_s = cpu_s
        self.calls = 0

    def call(self, method: str, params: Any = None, session: str = "", timeout_s: float = 0) -> Any:
        assert method == "SystemInfo.getProcessInfo"
        value = self.cpu_s[min(self.calls, len(self.cpu_s) - 1)]
        self.calls += 1
        return {"processInfo": [{"type": "browser", "id": 1, "cpuTime": value}]}


def test_wait_quiet_returns_after_two_quiet_polls_in_a_row() -> None:
    # a renderer starting: 40 ms of CPU per 50 ms poll, then 1 ms, a burst, then quiet
    cdp = _FakeCdp([0.0, 0.04, 0.08, 0.12, 0.121, 0.16, 0.161, 0.162])
    Chromium._wait_quiet(cdp)  # type: ignore[arg-type]
    assert cdp.calls == 8  # the lone quiet poll after 0.12 s did not count


def test_wait_quiet_gives_up_at_its_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("h2lab.clients.chromium.QUIET_TIMEOUT_S", 0.3)
    busy = [0.04 * i for i in range(100)]
    cdp = _FakeCdp(busy)
    Chromium._wait_quiet(cdp)  # type: ignore[arg-type]
    assert 4 <= cdp.calls <= 8  # polls at 50 ms for 0.3 s, then the load goes on


def test_a_timeout_names_the_requests_still_unfinished() -> None:
    log = NetworkLog()
    assert describe_unfinished(log) == ""
    for i in range(6):
        url = f"https://o1.h2lab.test/{i}.js"
        log.on(
            "Network.requestWillBeSent",
            {"requestId": str(i), "timestamp": 10.0 + i, "request": {"url": url}},
        )
    log.on("Network.loadingFinished", {"requestId": "0", "timestamp": 11.0})
    log.on("Network.loadingFailed", {"requestId": "1", "timestamp": 11.0, "errorText": "x"})
    log.on("Network.dataReceived", {"requestId": "2", "dataLength": 12000})
    assert describe_unfinished(log) == (
        "; 4 of 6 requests unfinished: https://o1.h2lab.test/2.js (12,000 B received), "
        "https://o1.h2lab.test/3.js (0 B received), https://o1.h2lab.test/4.js (0 B received), "
        "and 1 more"
    )


def test_failed_requests_for_the_pages_own_resources_fail_the_load() -> None:
    """Seed 000 Fig. 1(c) sharded on cellular poor: 18 of 30 images failed, the load event
    fired without them, and the trial stored plt 168 s for a 2.6 MB page of 6.5 MB. Only
    failures of the page's own resources count: not a cancel by the page, not a URL the page
    does not have."""
    page = resolve_page("synthetic:n=4,size=1KB,origins=1")
    log = NetworkLog()
    urls = [r.url() for r in page.resources] + ["https://tracker.example/x.gif"]
    for i, url in enumerate(urls):
        log.on(
            "Network.requestWillBeSent",
            {"requestId": str(i), "timestamp": 10.0 + i, "request": {"url": url}},
        )
    log.on("Network.loadingFinished", {"requestId": "0", "timestamp": 11.0})
    assert failed_page_requests(log, page) == []
    for rid, error in (
        ("1", "net::ERR_ABORTED"),  # cancelled by the page
        ("5", "net::ERR_NAME_NOT_RESOLVED"),  # not the page's
        ("3", "net::ERR_CONNECTION_TIMED_OUT"),
        ("2", "net::ERR_HTTP2_PING_FAILED"),
    ):
        log.on("Network.loadingFailed", {"requestId": rid, "timestamp": 12.0, "errorText": error})
    failed = failed_page_requests(log, page)
    assert [r.url for r in failed] == [urls[2], urls[3]]
    assert describe_failed(failed, log) == (
        "2 of 6 requests for the page's resources failed: "
        "https://o1.h2lab.test/obj/00001.png (net::ERR_HTTP2_PING_FAILED), "
        "https://o1.h2lab.test/obj/00002.png (net::ERR_CONNECTION_TIMED_OUT)"
    )


def test_a_failed_request_wakes_the_loads_wait() -> None:
    tab = _Tab("ctx", "page")
    sent = {"requestId": "1", "timestamp": 1.0, "request": {"url": "https://a.test/x.png"}}
    tab.on("Network.requestWillBeSent", sent)
    assert not tab.signal.is_set() and not tab.request_failed
    tab.on("Network.loadingFailed", {"requestId": "1", "timestamp": 2.0, "errorText": "net::X"})
    assert tab.signal.is_set() and tab.request_failed
    assert tab.log.requests["1"].failed == "net::X"
