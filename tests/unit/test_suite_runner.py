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


def test_again_selects_by_id_keeps_options_and_drops_paths(tmp_path: Path) -> None:
    ids = ["tests/unit/test_suite_runner.py::test_bound[x]"]
    argv = suite.again(tmp_path / "again.xml", ids, ["-x", "-k", "bound", "tests/unit"])
    assert argv[:2] == [str(suite.PYTHON), str(suite.LANE)]
    assert argv[argv.index("pytest") + 1 : argv.index("pytest") + 3] == ["-m", "not alone"]
    assert argv[-4:] == ["-x", "-k", "bound", *ids]
    assert "tests/unit" not in argv


def test_a_broken_tree_is_not_run_again(tmp_path: Path) -> None:
    report = tmp_path / "side-by-side.xml"
    many = "".join(
        f'<testcase classname="tests.unit.test_suite_runner" name="t{i}"><failure/></testcase>'
        for i in range(suite.AGAIN_AT_MOST + 1)
    )
    report.write_text(f"<testsuites><testsuite>{many}</testsuite></testsuites>")
    assert suite.run_again(1, report, tmp_path / "again.xml", []) == 1
    assert not (tmp_path / "again.xml").exists()
    assert suite.run_again(2, report, tmp_path / "again.xml", []) == 2  # interrupted: as it was
