"""A results folder written before this h2lab resumes with nothing run again (issue #29): the
trial keys did not change when the factors got one definition and the ``tls`` factor was added
(its default level adds nothing to a key), so `h2lab restore` of a committed ``trials.csv``
followed by `h2lab run` of the same file finds every trial stored."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from pathlib import Path

from tests.integration.conftest import H2LAB, ROOT

NAME = "001-push"  # 120 trials (nghttp and okhttp), all stored ok; its report is quick to write


def _rows(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as con:
        return list(con.execute("SELECT trial_key, tls FROM trials ORDER BY id"))


def test_a_restored_reproduction_resumes_with_zero_trials_run(tmp_path: Path) -> None:
    out = tmp_path / NAME
    out.mkdir()
    shutil.copy(ROOT / "reproduction" / NAME / "trials.csv", out / "trials.csv")
    restored = subprocess.run(
        [H2LAB, "restore", str(out)], capture_output=True, text=True, timeout=120
    )
    assert restored.returncode == 0, restored.stderr
    before = _rows(out / "results.sqlite")
    assert len(before) == 120 and {tls for _, tls in before} == {"1.3"}
    # as scripts/reproduce.sh runs it: from the project folder, the file named relative to it
    run = subprocess.run(
        [H2LAB, "run", f"experiments/seeds/{NAME}.toml", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    assert _rows(out / "results.sqlite") == before  # not one trial run again
    assert "120/120" in run.stderr and "trial failed" not in run.stderr
    assert not (out / "artifacts").exists()  # no trial started
    assert (out / "report.html").is_file()
