"""h2lab.units: values with units -> numbers, and back."""

from __future__ import annotations

import pytest

from h2lab.errors import UnitError
from h2lab.units import (
    format_rate,
    format_size,
    parse_duration_ms,
    parse_rate_bps,
    parse_ratio,
    parse_size_bytes,
)


@pytest.mark.parametrize(
    ("text", "bps"),
    [
        ("10Mbps", 10_000_000),
        ("10mbps", 10_000_000),
        ("1500kbps", 1_500_000),
        ("1.6Mbps", 1_600_000),
        ("1Gbps", 1_000_000_000),
        ("2Mbit", 2_000_000),
        ("768kbit", 768_000),
        ("100bps", 100),
        (" 10 Mbps ", 10_000_000),
    ],
)
def test_parse_rate_bps(text: str, bps: int) -> None:
    assert parse_rate_bps(text) == bps


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("10Mbs", "unknown rate unit in '10Mbs'"),
        ("10", "unknown rate unit in '10'"),
        ("10MB", "unknown rate unit in '10MB'"),
        ("-10Mbps", "rate must not be negative: '-10Mbps'"),
        ("0Mbps", "rate must be positive: '0Mbps'"),
        ("fast", "not a rate: 'fast'"),
        ("", "not a rate: ''"),
    ],
)
def test_parse_rate_bps_rejects(text: str, message: str) -> None:
    with pytest.raises(UnitError) as exc:
        parse_rate_bps(text)
    assert message in str(exc.value)


@pytest.mark.parametrize(
    ("text", "ms"),
    [("1s", 1000.0), ("50ms", 50.0), ("500us", 0.5), ("0ms", 0.0), ("1.5s", 1500.0)],
)
def test_parse_duration_ms(text: str, ms: float) -> None:
    assert parse_duration_ms(text) == pytest.approx(ms)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-5ms", "duration must not be negative: '-5ms'"),
        ("5", "unknown time unit in '5'"),
        ("5min", "unknown time unit in '5min'"),
    ],
)
def test_parse_duration_ms_rejects(text: str, message: str) -> None:
    with pytest.raises(UnitError) as exc:
        parse_duration_ms(text)
    assert message in str(exc.value)


@pytest.mark.parametrize(
    ("text", "ratio"), [("1%", 0.01), ("0%", 0.0), ("100%", 1.0), ("0.5%", 0.005)]
)
def test_parse_ratio(text: str, ratio: float) -> None:
    assert parse_ratio(text) == pytest.approx(ratio)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("150%", "a percentage cannot exceed 100%: '150%'"),
        ("100.1%", "cannot exceed 100%"),
        ("1", "a loss rate needs a % sign: '1'"),
        ("0.01", "needs a % sign"),
        ("-1%", "percentage must not be negative: '-1%'"),
    ],
)
def test_parse_ratio_rejects(text: str, message: str) -> None:
    with pytest.raises(UnitError) as exc:
        parse_ratio(text)
    assert message in str(exc.value)


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("64KB", 64_000),
        ("1MiB", 1_048_576),
        ("1KiB", 1024),
        ("100B", 100),
        ("100", 100),
        ("2MB", 2_000_000),
        ("1.5KB", 1500),
    ],
)
def test_parse_size_bytes(text: str, size: int) -> None:
    assert parse_size_bytes(text) == size


@pytest.mark.parametrize(
    ("text", "message"),
    [("64KBs", "unknown size unit in '64KBs'"), ("-1KB", "size must not be negative")],
)
def test_parse_size_bytes_rejects(text: str, message: str) -> None:
    with pytest.raises(UnitError) as exc:
        parse_size_bytes(text)
    assert message in str(exc.value)


@pytest.mark.parametrize(
    ("bps", "text"),
    [
        (10_000_000, "10Mbps"),
        (1_600_000, "1600kbps"),
        (2_000_000_000, "2Gbps"),
        (1_500, "1500bps"),
        (999, "999bps"),
    ],
)
def test_format_rate(bps: int, text: str) -> None:
    assert format_rate(bps) == text
    assert parse_rate_bps(text) == bps


@pytest.mark.parametrize(
    ("size", "text"),
    [(10_000, "10KB"), (2_000_000, "2MB"), (1500, "1500B"), (999, "999B"), (1024, "1024B")],
)
def test_format_size(size: int, text: str) -> None:
    assert format_size(size) == text
    assert parse_size_bytes(text) == size
