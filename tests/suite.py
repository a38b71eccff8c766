"""The whole suite, as ``make test`` runs it: side by side, then alone, then the slowest.

    python tests/suite.py [--lanes N] [PYTEST ARG...]

1. Side by side: every test not marked ``alone``, in N lanes (pytest-xdist workers, each in a
   lane of its own: tests/lane.py), a test file's tests in one lane, one after another (its
   module fixtures start once; its fixed ports and names are never in use twice), the files
   with the most known seconds first (tests/conftest.py).
2. Alone: the tests marked ``alone`` (their assertions are about time: a measured RTT, a paint
   time, a bound on a duration), one after another in one lane, with nothing beside them.
3. Again, alone: a test that failed side by side (at most ``AGAIN_AT_MOST`` of them) runs
   once more, alone, as every test ran before the lanes. A timing bound that holds on a free
   core may not hold beside three busy lanes; a broken test fails twice. The run names every
   test that needed this, so that a test that keeps needing it is marked ``alone``.
4. The 20 slowest tests, with their durations, read from the runs' JUnit XML reports.

``--lint CMD`` runs the lint command CMD (``make test``: ``make lint``) beside the side-by-side
run, its output shown after it (lint is a few seconds of CPU; the lanes mostly wait).
``--durations-out FILE`` also writes every test's duration there (tests/durations.json, which
orders the next run). Both groups always run; the exit status is the first failing group's
(the side-by-side run counts as passed when every test that failed there passed again alone),
else 0. Extra arguments go to both pytest runs (``-x``, ``-k NAME``, a path).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LANE = ROOT / "tests" / "lane.py"
PYTHON = ROOT / ".venv" / "bin" / "python"
DEFAULT_LANES = 4
"""Two cores, and most integration tests wait on an emulated network, not on a CPU:
measured on this machine kind in docs/testing.md."""
SLOWEST = 20
AGAIN_AT_MOST = 8
"""More failures side by side than this is not a busy machine but a broken tree: no rerun."""
PYTEST_TESTS_FAILED = 1
PYTEST_NO_TESTS = 5
REPORTS = ROOT / ".test-reports"
"""The two runs' JUnit XML reports, kept after the run (for CI, and for the slowest list)."""


def side_by_side(lanes: int, report: Path, extra: list[str]) -> list[str]:
    worker = f"{PYTHON} {LANE} {PYTHON}"
    return [
        str(PYTHON),
        "-m",
        "pytest",
        "-m",
        "not alone",
        "--dist",
        "loadfile",
        "--tx",
        f"{lanes}*popen//python={worker}",
        f"--junitxml={report}",
        *extra,
    ]


def alone(report: Path, extra: list[str], marker: str = "alone") -> list[str]:
    pytest = [str(PYTHON), "-m", "pytest", "-m", marker]
    return [str(PYTHON), str(LANE), *pytest, f"--junitxml={report}", *extra]


def again(report: Path, failed: list[str], extra: list[str]) -> list[str]:
    """The tests ``failed`` side by side, alone (``extra`` without its paths: the ids select)."""
    paths = [a for a in extra if (ROOT / a.split("::")[0]).exists()]
    options = [a for a in extra if a not in paths]
    return alone(report, [*options, *failed], marker="not alone")


def module_file(parts: list[str]) -> str:
    """``["tests", "unit", "test_x"]`` -> ``"tests/unit/test_x.py"``."""
    return "/".join(parts) + ".py"


def test_id(case: ET.Element) -> str:
    """A JUnit XML ``testcase``'s pytest id (``tests/unit/test_x.py::test_y[param]``): its
    ``classname`` is the dotted module path, then any class."""
    classname = case.get("classname", "")
    parts = classname.split(".")
    # the module is the longest prefix that is a file under tests/
    cuts = (c for c in range(len(parts), 0, -1) if (ROOT / module_file(parts[:c])).is_file())
    cut = next(cuts, 0)
    module = module_file(parts[:cut]) if cut else classname
    return "::".join([module, *parts[cut:], case.get("name", "")])


def cases(reports: list[Path]) -> list[ET.Element]:
    """Every ``testcase`` of the JUnit XML ``reports`` that exist, in order."""
    return [c for r in reports if r.exists() for c in ET.parse(r).iter("testcase")]


def durations(reports: list[Path]) -> dict[str, float]:
    """Test id -> seconds, from JUnit XML ``reports`` (a later report's figure wins)."""
    return {test_id(case): float(case.get("time", "0")) for case in cases(reports)}


def bad(case: ET.Element) -> bool:
    """Whether a ``testcase`` failed or errored (in its call, set-up or teardown)."""
    return any(case.find(tag) is not None for tag in ("failure", "error"))


def failed(report: Path) -> list[str]:
    """The ids of the tests that failed or errored in JUnit XML ``report``, each once."""
    return list(dict.fromkeys(test_id(c) for c in cases([report]) if bad(c)))


def slowest(reports: list[Path], n: int = SLOWEST) -> list[tuple[float, str]]:
    """The ``n`` longest test cases of the JUnit XML ``reports`` (seconds, test id)."""
    return sorted(((s, t) for t, s in durations(reports).items()), reverse=True)[:n]


def finish_lint(lint: subprocess.Popen[bytes]) -> int:
    """Wait for the lint command, show what it printed; its exit status."""
    out, _ = lint.communicate()
    print("\n=== lint ===", flush=True)
    sys.stdout.write(out.decode(errors="replace"))
    print(f"=== lint: exit {lint.returncode} ===", flush=True)
    return lint.returncode


def run(title: str, argv: list[str]) -> int:
    """Run one pytest phase, framed by its title and its exit status and seconds."""
    print(f"\n=== {title} ===", flush=True)
    t0 = time.monotonic()
    code = subprocess.run(argv, cwd=ROOT).returncode
    print(f"=== {title}: exit {code} in {time.monotonic() - t0:.0f} s ===", flush=True)
    return 0 if code == PYTEST_NO_TESTS else code  # nothing selected (e.g. -k)


def run_again(code: int, side: Path, report: Path, extra: list[str]) -> int:
    """The side-by-side run's status once its failures (if few) have run again alone."""
    failures = failed(side) if code == PYTEST_TESTS_FAILED else []
    if not failures or len(failures) > AGAIN_AT_MOST:
        return code
    title = f"again, alone: {len(failures)} failed side by side"
    again_code = run(title, again(report, failures, extra))
    passed = list(dict.fromkeys(test_id(c) for c in cases([report]) if not bad(c)))
    print(f"\n=== {len(passed)} of {len(failures)} failed beside other lanes, passed alone ===")
    for name in passed:
        print(f"  {name}")
    return again_code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--durations-out", type=Path)
    parser.add_argument("--lint", help="a command run beside the side-by-side run")
    parser.add_argument("--lanes", type=int, default=int(os.environ.get("LANES") or DEFAULT_LANES))
    args, extra = parser.parse_known_args()
    REPORTS.mkdir(exist_ok=True)
    side, lone, repeat = (REPORTS / f"{n}.xml" for n in ("side-by-side", "alone", "again"))
    reports = [side, lone, repeat]
    for report in reports:
        report.unlink(missing_ok=True)
    lint = None
    if args.lint:
        lint = subprocess.Popen(
            args.lint, shell=True, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
    side_code = run(f"side by side, {args.lanes} lanes", side_by_side(args.lanes, side, extra))
    lint_code = finish_lint(lint) if lint is not None else 0
    alone_code = run("alone", alone(lone, extra))
    side_code = run_again(side_code, side, repeat, extra)
    if args.durations_out:
        measured = {t: round(s, 2) for t, s in sorted(durations(reports).items())}
        args.durations_out.write_text(json.dumps(measured, indent=0) + "\n")
    print(f"\n=== the {SLOWEST} slowest tests ===")
    for seconds, name in slowest(reports):
        print(f"{seconds:8.1f} s  {name}")
    return next((c for c in (lint_code, side_code, alone_code) if c), 0)


if __name__ == "__main__":
    sys.exit(main())
