"""h2lab.har: the pieces of every HAR h2lab writes, against the HAR 1.2 schema."""

from __future__ import annotations

import pytest

from h2lab import har
from tests.har_schema import assert_valid_har, har_errors


def test_dates_are_iso_8601_in_utc_to_the_millisecond() -> None:
    assert har.iso_date(1_795_000_000.0) == "2026-11-18T11:06:40.000Z"
    assert har.iso_date(1_795_000_000.1234) == "2026-11-18T11:06:40.123Z"


def test_extras_have_one_underscore() -> None:
    assert [har.extra(k) for k in ("plt_ms", "_frames")] == ["_plt_ms", "_frames"]


def test_a_page_and_log_validate_and_missing_events_are_minus_one() -> None:
    page = har.page("https://a.test/", 1_795_000_000.0, None, 120.5, {"plt_ms": 120.5})
    assert page["pageTimings"] == {"onContentLoad": -1, "onLoad": 120.5, "_plt_ms": 120.5}
    log = har.log([], [page])
    assert_valid_har(log)
    assert log["log"]["creator"]["name"] == "h2lab"


@pytest.mark.parametrize(
    ("expires", "iso"),
    [
        ("Wed, 21 Oct 2026 07:28:00 GMT", "2026-10-21T07:28:00.000Z"),
        ("Wed, 21-Oct-2026 07:28:00 GMT", "2026-10-21T07:28:00.000Z"),
        ("Wednesday, 21-Oct-26 07:28:00 GMT", "2026-10-21T07:28:00.000Z"),
        ("tomorrow", None),
    ],
)
def test_response_cookies_take_the_dates_servers_write(expires: str, iso: str | None) -> None:
    (cookie,) = har.response_cookies({"Set-Cookie": f"a=b; Expires={expires}; Secure"})
    assert cookie.get("expires") == iso and cookie["secure"] is True


def test_server_addresses_are_bare_addresses_or_nothing() -> None:
    assert har.ip_address("10.2.0.1") == "10.2.0.1"
    assert har.ip_address("10.2.0.1:443") == "10.2.0.1"
    assert har.ip_address("[::1]:443") == "::1"
    assert har.ip_address("") is None and har.ip_address("o1.h2lab.test") is None


def test_time_is_the_sum_of_the_timings_that_apply_ssl_aside() -> None:
    timings = {"blocked": -1, "dns": 1, "connect": 40, "ssl": 20, "send": 0.5, "wait": 20}
    assert har.total_ms({**timings, "receive": 3}) == 64.5


def test_the_schema_check_rejects_what_har_1_2_forbids() -> None:
    """The test helper itself: relative dates, a negative wait, a host name as the server
    address and a page's missing load times are errors; ``min`` and formats are checked."""
    page = har.page("https://a.test/", 1_795_000_000.0, 10.0, 20.0, {})
    entry = {
        "startedDateTime": "+119.462ms",
        "time": 1.0,
        "request": {
            "method": "GET", "url": "https://a.test/", "httpVersion": "h2", "cookies": [],
            "headers": [], "queryString": [], "headersSize": -1, "bodySize": 0,
        },
        "response": {
            "status": 200, "statusText": "", "httpVersion": "h2", "cookies": [], "headers": [],
            "content": {"size": 0, "mimeType": ""}, "redirectURL": "", "headersSize": -1,
            "bodySize": 0,
        },
        "cache": {},
        "timings": {"send": 0, "wait": -2, "receive": 0},
        "serverIPAddress": "o1.h2lab.test",
    }  # fmt: skip
    page["pageTimings"]["onLoad"] = None
    errors = har_errors(har.log([entry], [page]))
    assert any("startedDateTime" in e and "date-time" in e for e in errors), errors
    assert any("timings.wait" in e and "minimum of -1" in e for e in errors), errors
    assert any("serverIPAddress" in e for e in errors), errors
    assert any("pageTimings.onLoad" in e for e in errors), errors
