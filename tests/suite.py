"""The whole suite, as ``make test`` runs it: side by side, then alone, then the slowest.

    python tests/suite.py [--lanes N] [PYTEST ARG...]

1. Side by side: every test not marked ``alone``, in N lanes (pytest-xdist workers, each in a
   lane of its own: tests/lane.py), a test file's tests in one lane, one after another (its
   module fixtures start once; its fixed ports and names are never in use twice), the files
   with the most known seconds first (tests/conftest.py).
2. Alone: the tests marked ``alone`` (their assertions are about time: a measured RTT, a paint
   time, a bound on a duration), one after another in one lane, with nothing beside them.
3. The 20 slowest tests of both, with their durations, read from the two JUnit XML reports.

``--lint CMD`` runs the lint command CMD (``make test``: ``make lint``) beside the side-by-side
run, its output shown after it (lint is a few seconds of CPU; the lanes mostly wait).
``--durations-out FILE`` also writes every test's duration there (tests/durations.json, which
orders the next run). Both groups always run; the exit status is the first failing group's,
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


def alone(report: Path, extra: list[str]) -> list[str]:
    pytest = [str(PYTHON), "-m", "pytest", "-m", "alone"]
    return [str(PYTHON), str(LANE), *pytest, f"--junitxml={report}", *extra]


def module_file(parts: list[str]) -> str:
    """``["tests", "unit", "test_x"]`` -> ``"tests/unit/test_x.py"``."""
    return "/".join(parts) + ".py"


def durations(reports: list[Path]) -> dict[str, float]:
    """Test id (``tests/unit/test_x.py::test_y[param]``) -> seconds, from JUnit XML
    ``reports`` (their ``classname`` is the dotted module path, then any class)."""
    found: dict[str, float] = {}
    for report in reports:
        if not report.exists():
            continue
        for case in ET.parse(report).iter("testcase"):
            classname = case.get("classname", "")
            parts = classname.split(".")
            # the module is the longest prefix that is a file under tests/
            cuts = (
                c for c in range(len(parts), 0, -1) if (ROOT / module_file(parts[:c])).is_file()
            )
            cut = next(cuts, 0)
            module = module_file(parts[:cut]) if cut else classname
            test_id = "::".join([module, *parts[cut:], case.get("name", "")])
            found[test_id] = float(case.get("time", "0"))
    return found


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--durations-out", type=Path)
    parser.add_argument("--lint", help="a command run beside the side-by-side run")
    parser.add_argument("--lanes", type=int, default=int(os.environ.get("LANES") or DEFAULT_LANES))
    args, extra = parser.parse_known_args()
    codes = []
    REPORTS.mkdir(exist_ok=True)
    reports = [REPORTS / "side-by-side.xml", REPORTS / "alone.xml"]
    for report in reports:
        report.unlink(missing_ok=True)
    lint = None
    if args.lint:
        lint = subprocess.Popen(
            args.lint, shell=True, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
    for title, argv in (
        (f"side by side, {args.lanes} lanes", side_by_side(args.lanes, reports[0], extra)),
        ("alone", alone(reports[1], extra)),
    ):
        print(f"\n=== {title} ===", flush=True)
        t0 = time.monotonic()
        code = subprocess.run(argv, cwd=ROOT).returncode
        print(f"=== {title}: exit {code} in {time.monotonic() - t0:.0f} s ===", flush=True)
        codes.append(0 if code == 5 else code)  # 5: nothing selected (e.g. -k)
        if lint is not None:
            codes.insert(0, finish_lint(lint))
            lint = None
    if args.durations_out:
        measured = {t: round(s, 2) for t, s in sorted(durations(reports).items())}
        args.durations_out.write_text(json.dumps(measured, indent=0) + "\n")
    print(f"\n=== the {SLOWEST} slowest tests ===")
    for seconds, name in slowest(reports):
        print(f"{seconds:8.1f} s  {name}")
    return next((c for c in codes if c), 0)


if __name__ == "__main__":
    sys.exit(main())
