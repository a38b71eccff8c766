"""tests/suite.py: which tests run again alone, and how they are named to pytest."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

from tests import ledger, suite

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="1" failures="2" tests="5">
<testcase classname="tests.unit.test_suite_runner" name="test_ok" time="0.5"/>
<testcase classname="tests.unit.test_suite_runner" name="test_bound[a.b/c d]" time="2.0">
  <failure message="assert 14 &gt;= 15">E assert 14 &gt;= 15</failure></testcase>
<testcase classname="tests.unit.test_suite_runner.TestK" name="test_in_class" time="1.0">
  <failure message="x">x</failure></testcase>
<testcase classname="tests.unit.test_suite_runner.TestK" name="test_in_class" time="0.1">
  <error message="teardown">y</error></testcase>
<testcase classname="tests.unit.test_suite_runner" name="test_out" time="0.2">
  <system-out>printed</system-out></testcase>
</testsuite></testsuites>
"""


def test_failures_and_errors_are_named_as_pytest_names_them_once(tmp_path: Path) -> None:
    report = tmp_path / "side-by-side.xml"
    report.write_text(JUNIT)
    assert suite.failed(report) == [
        "tests/unit/test_suite_runner.py::test_bound[a.b/c d]",
        "tests/unit/test_suite_runner.py::TestK::test_in_class",
    ]
    assert suite.durations([report])["tests/unit/test_suite_runner.py::test_ok"] == 0.5
    assert suite.failed(tmp_path / "absent.xml") == []


def test_again_selects_by_id_with_the_options() -> None:
    ids = ["tests/unit/test_suite_runner.py::test_bound[x]"]
    argv = suite.again(Path("again.xml"), ids, ["-x", "-k", "bound"])
    assert argv[:2] == [str(suite.PYTHON), str(suite.LANE)]
    assert argv[argv.index("pytest") + 1 : argv.index("pytest") + 3] == ["-m", ""]  # any marker
    assert argv[-4:] == ["-x", "-k", "bound", *ids]


def test_paths_go_to_the_runs_they_belong_to() -> None:
    whole = suite.split_paths([])
    idle = [f"tests/integration/test_{n}.py" for n in ("seed_experiments", "interrupt", "cli")]
    assert (whole.lanes, whole.idle, whole.unit, whole.alone) == (
        ["tests"],
        idle,
        ["tests/unit"],
        ["tests"],
    )
    one = suite.split_paths(["-x", "-k", "net", "tests/integration/test_net.py"])
    assert one.options == ["-x", "-k", "net"]
    assert (one.lanes, one.idle, one.unit) == (["tests/integration/test_net.py"], [], [])
    unit = "tests/unit/test_suite_runner.py::test_ok"
    cli = "tests/integration/test_cli.py::test_demo_runs_the_shipped_experiment_and_exports"
    mixed = suite.split_paths([unit, cli])
    assert (mixed.lanes, mixed.idle, mixed.unit, mixed.alone) == ([], [cli], [unit], [cli])


def test_the_unit_run_and_lint_leave_the_alone_run_its_cores() -> None:
    argv = suite.unit_beside(Path("unit.xml"), ["tests/unit"])
    assert argv[:3] == ["chrt", "--idle", "0"] and str(suite.LANE) in argv
    side = suite.side_by_side(4, Path("side.xml"), ["tests"])
    assert f"--ignore={suite.UNIT}" in side
    assert all(f"--ignore={f}" in side for f in suite.IDLE_FILES)
    idle = suite.idle_lanes(Path("idle.xml"), ["tests/integration/test_cli.py"])
    assert idle[:3] == ["chrt", "--idle", "0"] and f"{suite.IDLE_LANES}*popen" in " ".join(idle)


RUN = ledger.Row("2026-11-28T00:00:00Z", "abc", "run", ledger.WHOLE_SUITE, "")
TIMING = '<properties><property name="timing" value="1"/></properties>'


def _cases(n: int, timing: bool) -> str:
    return "".join(
        f'<testcase classname="tests.unit.test_suite_runner" name="t{i}">'
        f"{TIMING if timing else ''}<failure message='took 12 ms'/></testcase>"
        for i in range(n)
    )


def test_a_broken_tree_is_not_run_again(tmp_path: Path) -> None:
    report = tmp_path / "side-by-side.xml"
    report.write_text(
        f"<testsuites><testsuite>{_cases(suite.AGAIN_AT_MOST + 1, True)}</testsuite></testsuites>"
    )
    codes = {report: 1, tmp_path / "unit.xml": 0}
    assert suite.run_again(codes, tmp_path / "again.xml", [], RUN).codes == codes
    assert not (tmp_path / "again.xml").exists()
    interrupted = {report: 2}
    assert suite.run_again(interrupted, tmp_path / "again.xml", [], RUN).codes == interrupted


def test_only_timing_tests_run_again(tmp_path: Path) -> None:
    """A failure of a test not marked timing (a unit test's, a race's) fails the run at once,
    and nothing runs again, not even the timing tests beside it."""
    report = tmp_path / "unit.xml"
    report.write_text(f"<testsuites><testsuite>{_cases(1, False)}</testsuite></testsuites>")
    codes = {report: 1}
    again = suite.run_again(codes, tmp_path / "again.xml", [], RUN)
    assert again.codes == codes and again.reruns == []
    assert not (tmp_path / "again.xml").exists()
    both = tmp_path / "alone.xml"
    both.write_text(
        f"<testsuites><testsuite>{_cases(1, True)}{_cases(1, False).replace('t0', 'u0')}"
        "</testsuite></testsuites>"
    )
    assert suite.run_again({both: 1}, tmp_path / "again.xml", [], RUN).codes == {both: 1}
    assert not (tmp_path / "again.xml").exists()


def test_the_ledger_takes_what_a_timing_test_measured(tmp_path: Path) -> None:
    case = ET.fromstring(
        '<testcase classname="a" name="b"><properties>'
        '<property name="timing" value="1"/>'
        '<property name="measured" value="ratio: 1.3 [1.2, 1.4]"/>'
        '<property name="bound" value="(-inf, 1.25)"/>'
        '</properties><failure message="x"/></testcase>'
    )
    assert suite.timing(case)
    assert suite.what_failed(case) == ("ratio: 1.3 [1.2, 1.4]", "(-inf, 1.25)")
    plain = ET.fromstring(
        '<testcase classname="a" name="b">'
        '<failure message="assert 14 &gt;= 15&#10;more"/></testcase>'
    )
    assert not suite.timing(plain)
    assert suite.what_failed(plain) == ("assert 14 >= 15", "")


def test_a_test_that_keeps_running_again_fails_the_run(tmp_path: Path) -> None:
    path = tmp_path / "reruns.tsv"
    flaky = "tests/integration/test_x.py::test_bound"
    for i in range(ledger.FLAKY_RUNS - 1):
        run = replace(RUN, run=f"2026-11-2{i}T00:00:00Z")
        rerun = ledger.Row(run.run, "abc", "rerun", flaky, "passed alone", "12\tms", "")
        assert suite.keep_in_ledger(run, [rerun], 0, path) == 0  # twice in 10 runs: still a pass
    rows = ledger.read(path)
    assert [r.kind for r in rows] == ["rerun", "run"] * (ledger.FLAKY_RUNS - 1)
    assert rows[0].measured == "12 ms" and rows[1].outcome == "passed"
    last = replace(RUN, run="2026-11-29T00:00:00Z")
    third = ledger.Row(last.run, "abc", "rerun", flaky, "passed alone")
    assert suite.keep_in_ledger(last, [third], 0, path) == 1
    assert ledger.read(path)[-1].outcome == "failed"
    assert ledger.frequent(ledger.read(path)) == {flaky: 3}
    # a run of a part of the suite is kept, but does not count: it selects other tests
    part = replace(RUN, run="2026-11-30T00:00:00Z", test="tests/integration/test_x.py")
    assert suite.keep_in_ledger(part, [replace(third, run=part.run)], 0, path) == 1
    assert ledger.frequent(ledger.read(path)) == {flaky: 3}
    # ten whole-suite runs without it push its reruns out of the window
    old = [replace(RUN, run=f"2026-12-{i:02}T00:00:00Z") for i in range(1, ledger.WINDOW + 1)]
    assert ledger.frequent([*ledger.read(path), *old]) == {}
