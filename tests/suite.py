"""The whole suite, as ``make test`` runs it: side by side, then alone, then the slowest.

    python tests/suite.py [--lanes N] [--lint CMD] [PYTEST ARG...]

1. Side by side: the integration tests not marked ``alone``, in N lanes (pytest-xdist
   workers, each in a lane of its own: tests/lane.py), a test file's tests in one lane, one
   after another (its module fixtures start once; its fixed ports and names are never in use
   twice), the files with the most known seconds first (tests/conftest.py). This run keeps
   both cores busy.
2. Alone: the tests marked ``alone`` (their assertions are about time: a measured RTT, a paint
   time, a bound on a duration), one after another in one lane. They mostly wait on an
   emulated network and leave most of the machine idle, so beside them, at the idle
   scheduling class (``SCHED_IDLE``: a core they leave free, never one they want), run the
   :data:`IDLE_FILES` in :data:`IDLE_LANES` lanes, the unit tests in a lane, and the lint
   command (``--lint CMD``; ``make test``: ``make lint``). Their output comes after.
3. Again, alone: when every test that failed in its first run is marked ``timing`` (a bound on
   a measured time; every ``alone`` test is one) and they are at most ``AGAIN_AT_MOST``, they
   run once more with nothing beside them. Any other failure (a unit test, a race in a reader
   thread) fails the run at once: it does not pass on a second try. Every rerun is appended
   to the ledger, tests/reruns.tsv (tests/ledger.py: the test, what it measured against which
   bound, the commit, the date), with a row for the run; a test that ran again in 3 of the
   last 10 whole-suite runs fails the run with a line saying so.
4. The 20 slowest tests, with their durations, read from the runs' JUnit XML reports.

``--durations-out FILE`` also writes every test's duration there (tests/durations.json, which
orders the next run). Every group always runs; the exit status is the first failing group's
(a group counts as passed when every test that failed there was a timing test and passed
again alone), else the ledger's (1 for a test that keeps running again), else 0.
Extra arguments go to every pytest run (``-x``, ``-k NAME``, a path or test id: each run takes
the paths that are its own).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests import ledger
from tests.conftest import TIMING_PROPERTY

ROOT = Path(__file__).resolve().parents[1]
LANE = ROOT / "tests" / "lane.py"
PYTHON = ROOT / ".venv" / "bin" / "python"
UNIT = ROOT / "tests" / "unit"
IDLE_FILES = tuple(
    ROOT / "tests" / "integration" / f"test_{name}.py"
    for name in ("seed_experiments", "interrupt", "cli")
)
"""Integration files that run beside the alone group at the idle scheduling class, in
``IDLE_LANES`` lanes, instead of side by side: long (the seed experiments' quick runs, killed
runs, the demo: 464 s of lane time side by side), and their assertions are about what is
stored and printed, not about time. The alone group leaves about 1.8 cores idle for most of
its minutes (vmstat, docs/testing.md). More beside it costs more than it saves: with 3 idle
lanes and the chaos soak, README's recipe and the corpus added, 12 alone tests missed their
bounds (RTTs 2-5 ms long, jitter 3.4 ms for 2), the alone run took 690 s rather than 643 and
the unit tests 591 s rather than 318; README's recipe timed out at the idle class."""
IDLE_LANES = 2
DEFAULT_LANES = 4
"""Two cores, and most integration tests wait on an emulated network, not on a CPU:
measured on this machine kind in docs/testing.md."""
SLOWEST = 20
AGAIN_AT_MOST = 8
"""More timing failures than this is not a busy machine but a broken tree: no rerun. (4 was too
few: one run beside three lanes at a load of 8 had 5, each of which holds alone.)"""
PYTEST_TESTS_FAILED = 1
PYTEST_NO_TESTS = 5
IDLE = ["chrt", "--idle", "0"]
"""Linux's idle scheduling class: runs only on a core nothing else wants, and gives it up at
once when something else does."""
REPORTS = ROOT / ".test-reports"
"""The runs' JUnit XML reports, kept after the run (for CI, and for the slowest list)."""


def under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


@dataclass
class Selection:
    """Which paths each run takes: ``make test`` gives none, meaning the whole suite."""

    options: list[str] = field(default_factory=list)
    lanes: list[str] = field(default_factory=list)
    """side by side (without the unit folder and the idle files)"""
    idle: list[str] = field(default_factory=list)
    unit: list[str] = field(default_factory=list)
    alone: list[str] = field(default_factory=list)


def split_paths(extra: list[str]) -> Selection:
    """``extra`` (pytest options and paths or test ids) -> what each run selects."""
    is_path = [(ROOT / a.split("::")[0]).exists() for a in extra]
    chosen = Selection(options=[a for a, p in zip(extra, is_path, strict=True) if not p])
    for a in [a for a, p in zip(extra, is_path, strict=True) if p] or ["tests"]:
        full = (ROOT / a.split("::")[0]).resolve()
        if under(full, UNIT):
            chosen.unit.append(a)
            continue
        chosen.alone.append(a)
        if any(under(full, f) for f in IDLE_FILES):
            chosen.idle.append(a)
            continue
        chosen.lanes.append(a)
        chosen.idle += [str(f.relative_to(ROOT)) for f in IDLE_FILES if under(f, full)]
        if under(UNIT, full):  # a folder holding the unit tests
            chosen.unit.append(str(UNIT.relative_to(ROOT)))
    return chosen


def pytest(marker: str, report: Path, args: list[str]) -> list[str]:
    return [str(PYTHON), "-m", "pytest", "-m", marker, f"--junitxml={report}", *args]


def in_lanes(lanes: int) -> list[str]:
    """pytest-xdist options: ``lanes`` workers, each in a lane, a file's tests in one."""
    worker = f"{PYTHON} {LANE} {PYTHON}"
    return ["--dist", "loadfile", "--tx", f"{lanes}*popen//python={worker}"]


def side_by_side(lanes: int, report: Path, args: list[str]) -> list[str]:
    ignored = [f"--ignore={p}" for p in (UNIT, *IDLE_FILES)]
    return pytest("not alone", report, [*in_lanes(lanes), *ignored, *args])


def idle_lanes(report: Path, args: list[str]) -> list[str]:
    """The :data:`IDLE_FILES`, in :data:`IDLE_LANES` lanes at the idle scheduling class."""
    return [*IDLE, *pytest("not alone", report, [*in_lanes(IDLE_LANES), "-q", *args])]


def alone(report: Path, args: list[str], marker: str = "alone") -> list[str]:
    return [str(PYTHON), str(LANE), *pytest(marker, report, [f"--ignore={UNIT}", *args])]


def unit_beside(report: Path, args: list[str]) -> list[str]:
    """The unit tests in a lane, at the idle scheduling class."""
    return [*IDLE, *alone(report, ["-q", *args], marker="not alone")]


def again(report: Path, failed: list[str], options: list[str]) -> list[str]:
    """The tests ``failed`` in their first run, alone (selected by their ids, any marker)."""
    return [str(PYTHON), str(LANE), *pytest("", report, [*options, *failed])]


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


def run(title: str, argv: list[str]) -> int:
    """Run one pytest phase, framed by its title and its exit status and seconds."""
    print(f"\n=== {title} ===", flush=True)
    t0 = time.monotonic()
    code = subprocess.run(argv, cwd=ROOT).returncode
    print(f"=== {title}: exit {code} in {time.monotonic() - t0:.0f} s ===", flush=True)
    return 0 if code == PYTEST_NO_TESTS else code  # nothing selected (e.g. -k)


class Beside:
    """A command run in the background, its output kept in a file and shown, with its own
    seconds, when it is waited for."""

    def __init__(self, title: str, argv: list[str]) -> None:
        self.title = title
        self.out = tempfile.TemporaryFile()  # noqa: SIM115 (closed by wait)
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=self.out, stderr=subprocess.STDOUT)
        self.ended: tuple[int, float] | None = None

        def watch() -> None:
            self.ended = (proc.wait(), time.monotonic() - t0)

        self.watcher = threading.Thread(target=watch, daemon=True)
        self.watcher.start()

    def wait(self) -> int:
        self.watcher.join()
        assert self.ended is not None
        code, seconds = self.ended
        self.out.seek(0)
        print(f"\n=== {self.title} (beside the alone run) ===", flush=True)
        sys.stdout.write(self.out.read().decode(errors="replace"))
        print(f"=== {self.title}: exit {code} in {seconds:.0f} s ===", flush=True)
        self.out.close()
        return 0 if code == PYTEST_NO_TESTS else code


def properties(case: ET.Element) -> dict[str, str]:
    """A JUnit XML ``testcase``'s properties (``record_property``, tests/conftest.py)."""
    return {p.get("name", ""): p.get("value", "") for p in case.iter("property")}


def timing(case: ET.Element) -> bool:
    """Whether the case is a ``timing`` test's (tests/conftest.py writes it as a property)."""
    return properties(case).get(TIMING_PROPERTY[0]) == TIMING_PROPERTY[1]


def what_failed(case: ET.Element) -> tuple[str, str]:
    """(measured, bound) for the ledger: the properties tests/timing.py records, else the
    failure's first line and no bound."""
    props = properties(case)
    if "measured" in props:
        return props["measured"], props.get("bound", "")
    found = case.find("failure")
    found = found if found is not None else case.find("error")
    message = "" if found is None else found.get("message", "") or (found.text or "")
    return (message.strip().splitlines() or [""])[0], ""


@dataclass
class Again:
    """What running failures again decided: each group's status, and the reruns' rows."""

    codes: dict[Path, int]
    reruns: list[ledger.Row] = field(default_factory=list)


def run_again(
    codes: dict[Path, int], report: Path, options: list[str], this_run: ledger.Row
) -> Again:
    """Each group's status once its failures have run again alone: only ``timing`` tests do,
    and only when every failure is one and there are at most :data:`AGAIN_AT_MOST`; any other
    failure fails the run as it is."""
    retry = {r for r, code in codes.items() if code == PYTEST_TESTS_FAILED}
    first = {test_id(c): c for r in sorted(retry) for c in cases([r]) if bad(c)}
    others = [t for t, c in first.items() if not timing(c)]
    if others:
        print(f"\n=== {len(others)} failed and are not marked timing: nothing runs again ===")
        print("".join(f"  {t}\n" for t in others), end="")
    if not first or others or len(first) > AGAIN_AT_MOST:
        return Again(codes)
    title = f"again, alone: {len(first)} timing tests failed in their first run"
    again_code = run(title, again(report, list(first), options))
    passed = {test_id(c) for c in cases([report]) if not bad(c)}
    rows = [
        ledger.Row(
            this_run.run,
            this_run.commit,
            "rerun",
            t,
            "passed alone" if t in passed else "failed alone",
            *what_failed(c),
        )
        for t, c in first.items()
    ]
    print(f"\n=== {len(passed)} of {len(first)} failed beside other work, passed alone ===")
    for row in rows:
        print(f"  {row.outcome}: {row.test}\n    {row.measured} {row.bound}".rstrip())
    return Again({r: (again_code if r in retry else code) for r, code in codes.items()}, rows)


def keep_in_ledger(
    run: ledger.Row, reruns: list[ledger.Row], status: int, path: Path = ledger.LEDGER
) -> int:
    """Append this run and its reruns to the ledger and print the ledger's view of them; a
    test that ran again in :data:`ledger.FLAKY_RUNS` of the last :data:`ledger.WINDOW`
    whole-suite runs fails the run (status 1)."""
    past = ledger.read(path)
    rows = [*reruns, run]
    flaky = ledger.frequent([*past, *rows])
    for test, count in flaky.items():
        print(
            f"\n=== {test} ran again in {count} of the last {ledger.WINDOW} whole-suite runs "
            f"(tests/reruns.tsv): its bound does not hold; fix it or move it to bench/ ==="
        )
    status = status or (1 if flaky else 0)
    outcome = "failed" if status else "passed"
    ledger.append([*reruns, replace(run, outcome=outcome, measured=f"{len(reruns)} reruns")], path)
    print(f"\n=== rerun ledger (tests/reruns.tsv): {len(reruns)} this run ===")
    return status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--durations-out", type=Path)
    parser.add_argument("--lint", help="a command run beside the alone run")
    parser.add_argument("--lanes", type=int, default=int(os.environ.get("LANES") or DEFAULT_LANES))
    args, extra = parser.parse_known_args()
    started = ledger.now()
    chosen = split_paths(extra)
    opts = chosen.options
    REPORTS.mkdir(exist_ok=True)
    names = ("side-by-side", "idle", "unit", "alone", "again")
    reports = [REPORTS / f"{n}.xml" for n in names]
    side, idle, unit, lone, repeat = reports
    for report in reports:
        report.unlink(missing_ok=True)
    codes = {side: 0, idle: 0, unit: 0, lone: 0}
    if chosen.lanes:
        title = f"side by side, {args.lanes} lanes"
        codes[side] = run(title, side_by_side(args.lanes, side, [*opts, *chosen.lanes]))
    beside = {
        idle: Beside(f"idle lanes ({IDLE_LANES})", idle_lanes(idle, [*opts, *chosen.idle]))
        if chosen.idle
        else None,
        unit: Beside("unit tests", unit_beside(unit, [*opts, *chosen.unit]))
        if chosen.unit
        else None,
    }
    lint = Beside("lint", [*IDLE, "sh", "-c", args.lint]) if args.lint else None
    if chosen.alone:
        codes[lone] = run("alone", alone(lone, [*opts, *chosen.alone]))
    codes.update({r: b.wait() for r, b in beside.items() if b is not None})
    lint_code = lint.wait() if lint else 0
    run_row = ledger.Row(
        started, ledger.commit(ROOT), "run", " ".join(extra) or ledger.WHOLE_SUITE, ""
    )
    again_result = run_again(codes, repeat, opts, run_row)
    codes = again_result.codes
    if args.durations_out:
        measured = {t: round(s, 2) for t, s in sorted(durations(reports).items())}
        args.durations_out.write_text(json.dumps(measured, indent=0) + "\n")
    print(f"\n=== the {SLOWEST} slowest tests ===")
    for seconds, name in slowest(reports):
        print(f"{seconds:8.1f} s  {name}")
    status = next((c for c in (lint_code, *codes.values()) if c), 0)
    return keep_in_ledger(run_row, again_result.reruns, status)


if __name__ == "__main__":
    sys.exit(main())
