"""``h2lab compare DIR_A DIR_B``, through the CLI's own ``main``: the table on stdout and the page
written; bad input is one stderr line naming the file (or ``command line``) and the field, exit
code 2, and nothing written."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from h2lab import cli
from tests.unit.test_analysis_ab import CLIENT, FCFS
from tests.unit.test_analysis_steps import journey_folder
from tests.unit.test_report_ab import folder


@dataclass(frozen=True)
class Done:
    code: int
    stdout: str
    stderr: str


def h2lab(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> Done:
    monkeypatch.setattr(sys, "argv", ["h2lab", *args])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    out = capsys.readouterr()
    return Done(int(exited.value.code or 0), out.out, out.err)


def listing(*dirs: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for d in dirs for p in sorted(d.rglob("*"))}


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    a = folder(tmp_path / "a", FCFS, [1000, 1100, 1200, 1300], protocols=("h1s", "h2s"))
    b = folder(tmp_path / "b", CLIENT, [900, 990, 1080, 1170], protocols=("h1s", "h2s"))
    return a, b


def test_compare_prints_the_table_and_writes_the_page(
    runs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = runs
    done = h2lab(monkeypatch, capsys, "compare", str(a), str(b))
    assert done.code == 0 and done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[:3] == [
        f"A: {a} (experiment e, 8 trial attempts)",
        f"B: {b} (experiment e, 8 trial attempts)",
        f"differs: server: A {FCFS}; B {CLIENT} (set aside: cells matched without it)",
    ]
    rows = [ln for ln in lines if "plt_ms" in ln]
    assert [("h1s" in r, "h2s" in r) for r in rows] == [(True, False), (False, True)]
    for r in rows:
        assert "4 pairs (A 4, B 4)" in r and "0.900 [0.900, 0.900]" in r
        assert "0.1250" in r and r.rstrip(" │").endswith("B faster")
    assert lines[-1] == f"compare: {b / 'compare.html'}"
    assert "0.900 [0.900, 0.900]" in (b / "compare.html").read_text()

    page = b / "elsewhere.html"
    done = h2lab(monkeypatch, capsys, "compare", str(a), str(b), "--out", str(page))
    assert done.code == 0 and done.stdout.endswith(f"compare: {page}\n") and page.is_file()


def bad_cases(a: Path, b: Path, tmp: Path) -> dict[str, tuple[list[str], str]]:
    """case -> (arguments, the start of the one error line)"""
    other = folder(tmp / "other", CLIENT, [900, 990], page="synthetic:n=9,size=1KB")
    (tmp / "text").mkdir()
    (tmp / "text" / "results.sqlite").write_text("yesterday's notes, not a database\n")
    (tmp / "none").mkdir()
    return {
        "no common cell": (
            [str(a), str(other)],
            f"{other / 'results.sqlite'}: cells: no cell in common with {a / 'results.sqlite'}",
        ),
        "no store": ([str(a), str(tmp / "none")], f"{tmp / 'none'}: results.sqlite: no results"),
        "text file": (
            [str(tmp / "text"), str(b)],
            f"{tmp / 'text' / 'results.sqlite'}: trials: not a readable results store (file is "
            "not a database)",
        ),
        "unknown metric": (
            [str(a), str(b), "--metric", "load_ms"],
            "command line: --metric: unknown metric 'load_ms' (pdt_ms, plt_ms, speed_index_ms,",
        ),
        "out folder": (
            [str(a), str(b), "--out", str(tmp / "nowhere" / "x.html")],
            f"command line: --out: no such folder: {tmp / 'nowhere'}",
        ),
        "budget syntax": (
            [str(a), str(b), "--budget", "plt_ms:h2s:5"],
            "command line: --budget: 'plt_ms:h2s:5': expected METRIC[:PROTOCOL]:PERCENT%, "
            "e.g. plt_ms:h2s:5%",
        ),
        "budget metric": (
            [str(a), str(b), "--budget", "load_ms:5%"],
            "command line: --budget: 'load_ms:5%': unknown metric 'load_ms' (pdt_ms, plt_ms,",
        ),
        "budget protocol": (
            [str(a), str(b), "--budget", "plt_ms:h4:5%"],
            "command line: --budget: 'plt_ms:h4:5%': unknown protocol 'h4' (h1c, h1p,",
        ),
        "budget percentage": (
            [str(a), str(b), "--budget", "plt_ms:5000%"],
            "command line: --budget: 'plt_ms:5000%': the percentage must be between 0 and 1000",
        ),
        "step not in both": (
            [str(a), str(b), "--metric", "step:cart"],
            "command line: --metric: 'step:cart': no step 'cart' in both runs (steps after the "
            "first: A none; B none)",
        ),
        "budget step field": (
            [str(a), str(b), "--budget", "step:cart/requests:h2s:5%"],
            "command line: --budget: 'step:cart/requests:h2s:5%': a step has no 'requests' "
            "(duration_ms, ttfb_ms,",
        ),
        "budget step not in both": (
            [str(a), str(b), "--budget", "step:cart:5%"],
            "command line: --budget: 'step:cart': no step 'cart' in both runs",
        ),
        "budget without cells": (
            [str(a), str(b), "--budget", "plt_ms:h3:5%"],
            "command line: --budget: 'plt_ms:h3:5%': no cell of both runs has h3's plt_ms",
        ),
    }


BAD_CASES = (
    "no common cell", "no store", "text file", "unknown metric", "out folder", "budget syntax",
    "budget metric", "budget protocol", "budget percentage", "budget without cells",
    "step not in both", "budget step field", "budget step not in both",
)  # fmt: skip


@pytest.mark.parametrize("case", BAD_CASES)
def test_bad_input_is_one_line_exit_2_and_nothing_written(
    case: str,
    runs: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    a, b = runs
    args, start = bad_cases(a, b, tmp_path)[case]
    before = listing(tmp_path)
    done = h2lab(monkeypatch, capsys, "compare", *args)
    assert done.code == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"h2lab: {start}"), line
    assert listing(tmp_path) == before


def test_a_budget_fails_the_slower_run_and_names_its_cells(
    runs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """B 10% faster than A in every pair: a 5% budget holds for B against A and breaks for A
    against B (s = 1.111, the whole interval above 1.05); a 15% budget holds both ways."""
    a, b = runs
    done = h2lab(monkeypatch, capsys, "compare", str(a), str(b), "--budget", "plt_ms:h2s:5%")
    assert done.code == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "budget kept: plt_ms:h2s:5% in 1 cells"

    args = ("--budget", "plt_ms:5%", "--budget", "plt_ms:h1s:15%", "--out", str(b / "x.html"))
    done = h2lab(monkeypatch, capsys, "compare", str(b), str(a), *args)
    assert done.code == 1 and done.stderr == ""
    tail = done.stdout.splitlines()[-4:]
    assert tail == [
        "budget broken: plt_ms:5% in 2 of 2 cells (B slower than A by more than 5%: the whole "
        "95% CI of s = B/A above 1.050)",
        "  the one cell | h1s: s = 1.111 [1.111, 1.111]",
        "  the one cell | h2s: s = 1.111 [1.111, 1.111]",
        "budget kept: plt_ms:h1s:15% in 1 cells",
    ]
    assert (b / "x.html").is_file()  # the page is written before the exit code says "broken"


def test_journeys_are_compared_step_by_step_and_a_step_has_its_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """B's ``cart`` step 20% slower, its ``search`` and its first load the same: the step table
    says so, the page has it, and a budget on the step breaks naming it while one on the
    first load (plt_ms) and on the other step holds."""
    a = journey_folder(tmp_path / "a", FCFS, [500, 510, 520, 530])
    b = journey_folder(tmp_path / "b", FCFS, [600, 612, 624, 636])
    budgets = ("step:cart:h2s:10%", "step:search:5%", "plt_ms:5%")
    args = [arg for text in budgets for arg in ("--budget", text)]
    done = h2lab(monkeypatch, capsys, "compare", str(a), str(b), *args)
    assert done.code == 1 and done.stderr == "", done.stderr
    step_rows = [ln for ln in done.stdout.splitlines() if "step:" in ln and "pairs" in ln]
    assert ["step:search" in r for r in step_rows] == [True, False], step_rows
    assert "1.200 [1.200, 1.200]" in step_rows[1] and "A faster" in step_rows[1]
    assert done.stdout.splitlines()[-4:] == [
        "budget broken: step:cart:h2s:10% in 1 of 1 cells (B slower than A by more than 10%: "
        "the whole 95% CI of s = B/A above 1.100)",
        "  the one cell | h2s: s = 1.200 [1.200, 1.200]",
        "budget kept: step:search:5% in 1 cells",
        "budget kept: plt_ms:5% in 1 cells",
    ]
    page = (b / "compare.html").read_text()
    assert "B against A, step by step" in page and "step:cart" in page
