"""tests/suite.py: which tests run again alone, and how they are named to pytest."""

from __future__ import annotations

from pathlib import Path

from tests import suite

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


def test_a_broken_tree_is_not_run_again(tmp_path: Path) -> None:
    report = tmp_path / "side-by-side.xml"
    many = "".join(
        f'<testcase classname="tests.unit.test_suite_runner" name="t{i}"><failure/></testcase>'
        for i in range(suite.AGAIN_AT_MOST + 1)
    )
    report.write_text(f"<testsuites><testsuite>{many}</testsuite></testsuites>")
    codes = {report: 1, tmp_path / "unit.xml": 0}
    assert suite.run_again(codes, tmp_path / "again.xml", []) == codes
    assert not (tmp_path / "again.xml").exists()
    interrupted = {report: 2}
    assert suite.run_again(interrupted, tmp_path / "again.xml", []) == interrupted
