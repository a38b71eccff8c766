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
    }


@pytest.mark.parametrize(
    "case", ["no common cell", "no store", "text file", "unknown metric", "out folder"]
)
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
