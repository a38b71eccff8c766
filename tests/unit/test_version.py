"""h2lab's version and commit: ``h2lab --version``, the trial's versions and the report footer."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import h2lab
from h2lab import version
from h2lab.report.build import write_report
from h2lab.store import Store
from tests.unit.test_report_build import section_html
from tests.unit.test_report_model import trial

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _fresh_commit(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("H2LAB_COMMIT", raising=False)
    version.commit.cache_clear()
    yield
    version.commit.cache_clear()


def test_version_prints_the_release_and_the_checkouts_commit() -> None:
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    done = subprocess.run(
        [sys.executable, "-m", "h2lab", "--version"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(
        rf"h2lab {re.escape(h2lab.__version__)} \(commit {head[:12]}(-dirty)?\)\n", done.stdout
    )
    assert version.commit().startswith(head)


def test_the_environment_names_the_commit_of_a_copy_without_git(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("H2LAB_COMMIT", "0123456789abcdef0123456789abcdef01234567")
    assert version.commit() == "0123456789abcdef0123456789abcdef01234567"
    assert version.version_line() == f"h2lab {h2lab.__version__} (commit 0123456789ab)"
    assert version.short_commit("0123456789abcdef0123456789abcdef01234567-dirty") == (
        "0123456789ab-dirty"
    )
    assert version.short_commit("unknown") == "unknown"


def test_outside_a_checkout_the_commit_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(version, "_git", lambda *args: None)
    assert version.commit() == "unknown"
    assert version.version_line() == f"h2lab {h2lab.__version__} (commit unknown)"


def test_the_report_footer_shows_the_trials_commits_and_the_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses

    monkeypatch.setenv("H2LAB_COMMIT", "fedcba9876543210fedcba9876543210fedcba98")
    store = Store(tmp_path)
    for r, sha in enumerate(("0123456789abcdef0123456789abcdef01234567", "aaaabbbbccccdddd")):
        for protocol, pdt in (("h1s", 100.0), ("h2s", 90.0)):
            vj = {"h2lab": "0.2.0", "h2lab_commit": sha}
            store.add_trial(dataclasses.replace(trial(protocol, r, pdt + r), versions=vj))
    store.close()
    repro = section_html(write_report(tmp_path).read_text(), "repro")
    assert "h2lab 0.2.0; h2lab commit 0123456789ab, aaaabbbbcccc" in repro
    assert f"<td>h2lab (report)</td><td>{h2lab.__version__}, commit fedcba987654</td>" in repro
