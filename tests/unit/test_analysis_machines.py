"""h2lab.analysis.machines: how many machines ran the trials, one row per machine, and the
cells whose trials ran on machines that differ in CPU model or kernel."""

from __future__ import annotations

import dataclasses

from h2lab.analysis.machines import MachineRow, MixedCell, machines, setup_of
from h2lab.results import TrialRecord
from tests.unit.test_report_model import cell, trial

CPU = "AMD EPYC 7B13"


def on(
    t: TrialRecord,
    machine: str | None,
    *,
    cpu: str | None = CPU,
    kernel: str | None = "6.1.0-18-amd64",
    overhead: str | None = "0.150",
    **versions: str,
) -> TrialRecord:
    """``t`` as run on ``machine`` whose versions record ``cpu``, ``kernel`` and the
    delay overhead (None: the key is absent, as in rows older than it)."""
    keys = {"cpu_model": cpu, "kernel": kernel, "rattan_delay_overhead_ms": overhead}
    recorded = {"h2lab": "0.1.0", **{k: v for k, v in keys.items() if v is not None}, **versions}
    if machine is not None:
        recorded |= {"machine": machine, "host": machine.split("/")[0]}
    return dataclasses.replace(t, machine=machine, versions=recorded)


def test_two_machines_that_agree_give_counts_and_no_flag() -> None:
    records = [
        on(trial("h1s", 0, 100.0), "a/0123456789ab", overhead="0.120"),
        on(trial("h2s", 0, 90.0), "a/0123456789ab", overhead="0.180"),
        on(trial("h1s", 1, 101.0), "b/fedcba987654"),
        on(trial("h2s", 1, None, status="failed"), "b/fedcba987654", overhead=None),
        on(trial("h2s", 1, 91.0, attempt=2), "b/fedcba987654"),
    ]
    ms = machines(records)
    assert (ms.count, ms.attempts, ms.unrecorded) == (2, 5, 0)
    assert ms.rows == (
        MachineRow("a/0123456789ab", 2, 2, (CPU,), ("6.1.0-18-amd64",), (0.12, 0.18)),
        MachineRow("b/fedcba987654", 3, 2, (CPU,), ("6.1.0-18-amd64",), (0.15, 0.15)),
    )
    assert ms.mixed == ()


def test_a_cell_whose_machines_differ_in_kernel_is_flagged_and_only_that_cell() -> None:
    far = "rtt=100ms"
    records = [
        on(trial("h1s", 0, 100.0), "a"),
        on(trial("h2s", 0, 90.0), "b", kernel="6.8.0-31-generic"),
        on(trial("h1s", 0, 100.0, network=far), "a"),
        on(trial("h2s", 0, 90.0, network=far), "a"),
    ]
    ms = machines(records)
    assert ms.count == 2
    assert ms.mixed == (
        MixedCell(
            cell(),
            ("kernel",),
            (("a", CPU, "6.1.0-18-amd64"), ("b", CPU, "6.8.0-31-generic")),
        ),
    )


def test_a_differing_cpu_model_is_flagged_too() -> None:
    records = [
        on(trial("h1s", 0, 100.0), "a"),
        on(trial("h2s", 0, 90.0), "b", cpu="Intel(R) Xeon(R) Gold 6230"),
    ]
    (mixed,) = machines(records).mixed
    assert mixed.differs == ("cpu_model",)


def test_unknown_cpu_model_or_kernel_never_differs() -> None:
    """Rows older than the keys (absent), or a machine whose /proc/cpuinfo named no model."""
    records = [
        on(trial("h1s", 0, 100.0), "a"),
        on(trial("h2s", 0, 90.0), "b", cpu=None, kernel=None),
        on(trial("h1s", 1, 100.0), "c", cpu="unknown"),
        on(trial("h2s", 1, 90.0), None, cpu=None, kernel=None, overhead=None),
    ]
    ms = machines(records)
    assert ms.mixed == ()
    assert (ms.count, ms.attempts, ms.unrecorded) == (3, 4, 1)
    assert ms.rows[1] == MachineRow("b", 1, 1, (), (), (0.15, 0.15))
    assert ms.rows[-1] == MachineRow(None, 1, 1, (), (), None)


def test_failed_attempts_and_warm_ups_do_not_flag_a_cell() -> None:
    records = [
        on(trial("h1s", 0, 100.0), "a"),
        on(trial("h2s", 0, None, status="failed"), "b", kernel="6.8.0"),
        on(trial("h2s", 0, 90.0, attempt=2), "a"),
        dataclasses.replace(on(trial("h2s", 0, 90.0), "c", kernel="5.10"), warmup=True),
    ]
    ms = machines(records)
    assert ms.mixed == ()
    assert (ms.count, ms.attempts) == (2, 3)  # the warm-up's machine is not counted


def test_the_machine_column_comes_first_then_versions_json() -> None:
    """A record without the column (restored from an older CSV) names its machine from
    ``versions_json``: ``machine``, else ``host``; unreadable JSON names nothing."""
    assert setup_of('{"machine": "a/0123", "host": "a"}', "b").machine == "b"
    assert setup_of('{"machine": "a/0123", "host": "a"}', None).machine == "a/0123"
    assert setup_of('{"host": "a"}', None).machine == "a"
    got = setup_of("not json", None)
    assert (got.machine, got.cpu_model, got.kernel, got.delay_overhead_ms) == (
        None,
        None,
        None,
        None,
    )
    assert setup_of('{"rattan_delay_overhead_ms": "n/a"}', None).delay_overhead_ms is None


def test_no_records() -> None:
    ms = machines([])
    assert (ms.count, ms.attempts, ms.unrecorded, ms.rows, ms.mixed) == (0, 0, 0, (), ())
