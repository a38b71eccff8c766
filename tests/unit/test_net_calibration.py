"""h2lab.net.calibration: Rattan's own latency, kept per boot (no lab: the measurement is
faked; tests/integration/test_link.py measures it for real)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from h2lab.net import calibration
from h2lab.net.calibration import Calibration, overhead_from
from h2lab.net.rattan import DELAY_OVERHEAD_MS, build_config, calibrated_delay_ms
from h2lab.spec.network import parse_network


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("H2LAB_CACHE", str(tmp_path / "cache"))
    boot = tmp_path / "boot_id"
    boot.write_text("boot-1\n")
    monkeypatch.setattr(calibration, "BOOT_ID", boot)
    return boot


def _cal(overhead_ms: float, boot: str = "boot-1") -> Calibration:
    return Calibration(overhead_ms, 20.0, 20.0 + 2 * overhead_ms, 30, boot, "2026-11-25T10:00:00Z")


def test_overhead_is_half_the_median_excess_and_refused_when_implausible() -> None:
    assert overhead_from(20.0, [20.30, 20.34, 20.40, 25.0, 20.1]) == 0.17
    assert overhead_from(20.0, [19.5, 19.6, 19.7]) is None  # shorter than asked: not Rattan's
    assert overhead_from(20.0, [24.5, 24.6, 24.7]) is None  # 2.3 ms per direction: a busy machine


def _probe(median_ms: float, calls: list[tuple[float, int]]) -> calibration.RttProbe:
    """A fake link: three round trips of median ``median_ms``, each call recorded."""

    def probe(rtt_ms: float, count: int) -> list[float]:
        calls.append((rtt_ms, count))
        return [median_ms - 0.02, median_ms, median_ms + 0.5]

    return probe


def test_first_use_measures_once_then_reads_the_cache(machine: Path) -> None:
    calls: list[tuple[float, int]] = []
    assert calibration.load() is None
    assert calibration.delay_overhead_ms(_probe(20.34, calls)) == 0.17
    assert calibration.delay_overhead_ms(_probe(25.0, calls)) == 0.17  # kept: not measured again
    assert calls == [(calibration.CALIBRATION_RTT_MS, calibration.PROBES)]
    kept = json.loads(calibration.calibration_file().read_text())
    assert kept["overhead_ms"] == 0.17 and kept["boot_id"] == "boot-1"
    assert kept["measured_rtt_ms"] == 20.34 and kept["asked_rtt_ms"] == 20.0


def test_a_reboot_measures_again(machine: Path) -> None:
    path = calibration.calibration_file()
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(_cal(0.45).__dict__))
    assert calibration.load() == _cal(0.45)
    machine.write_text("boot-2\n")
    assert calibration.load() is None
    calls: list[tuple[float, int]] = []
    assert calibration.delay_overhead_ms(_probe(20.4, calls)) == 0.2
    assert len(calls) == 1
    reloaded = calibration.load()
    assert reloaded is not None and reloaded.boot_id == "boot-2"


def test_a_refused_measurement_falls_back_and_is_not_kept(machine: Path) -> None:
    busy = _probe(24.6, [])  # 2.3 ms per direction: a busy machine
    assert calibration.delay_overhead_ms(busy) == DELAY_OVERHEAD_MS
    assert not calibration.calibration_file().exists()


def test_a_corrupt_cache_file_is_measured_over(machine: Path) -> None:
    path = calibration.calibration_file()
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert calibration.load() is None
    path.write_text(json.dumps({"overhead_ms": 0.2}))  # fields missing
    assert calibration.load() is None


def test_the_delay_cells_take_the_calibrated_overhead_off() -> None:
    assert calibrated_delay_ms(20.0, 0.17) == pytest.approx(19.83)
    assert calibrated_delay_ms(0.5, 0.17) == pytest.approx(0.4)  # at most 20% of the delay
    assert calibrated_delay_ms(20.0, 0.0) == 20.0
    files = build_config(
        parse_network("rtt=40ms"), 1, Path("/run/x"), Path("/run/x/h.pid"), delay_overhead_ms=0.17
    )
    assert files.config_toml.count('delay = "19830us"') == 2
