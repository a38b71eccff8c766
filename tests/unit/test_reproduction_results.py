"""The committed reproduction results (reproduction/<name>/trials.csv, issue #8) still belong to
their experiment files: every stored trial is a trial of the file as it is now, with the seed it
would get now, and the CSV restores into a store. Otherwise a resumed `scripts/reproduce.sh`
would quietly run a different experiment beside the stored one and report the mix."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from h2lab.runner.matrix import expand, select
from h2lab.spec.experiment import load_experiment, parse_only
from h2lab.store import Store
from h2lab.store.restore import restore_store

ROOT = Path(__file__).resolve().parents[2]
RESULTS = sorted(p.parent for p in (ROOT / "reproduction").glob("*/trials.csv"))


def _experiment_file(name: str) -> Path:
    """As scripts/reproduce.sh finds it: a seed's file, else one beyond the seeds."""
    seed = Path("experiments", "seeds", f"{name}.toml")
    return seed if seed.exists() else Path("experiments", f"{name}.toml")


def test_there_are_committed_results() -> None:
    assert len(RESULTS) >= 10


@pytest.mark.parametrize("folder", RESULTS, ids=[p.name for p in RESULTS])
def test_stored_trials_are_trials_of_the_experiment_file(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as scripts/reproduce.sh runs it: from the project folder, the file named relative to it
    # (a trial key holds a page file's path as resolved from the current folder)
    monkeypatch.chdir(ROOT)
    exp = load_experiment(_experiment_file(folder.name))
    seeds = {t.key: t.seed for t in expand(exp)}
    csv.field_size_limit(sys.maxsize)
    with (folder / "trials.csv").open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["warmup"] in ("", "0")]
    assert {r["experiment"] for r in rows} == {exp.name}
    strangers = [r["trial_key"] for r in rows if r["trial_key"] not in seeds]
    assert strangers == [], f"{len(strangers)} stored trials the file no longer has"
    reseeded = [r["trial_key"] for r in rows if int(r["seed"]) != seeds[r["trial_key"]]]
    assert reseeded == [], f"{len(reseeded)} stored trials would get another seed now"

    shutil.copy(folder / "trials.csv", tmp_path / "trials.csv")
    done = restore_store(tmp_path)
    store = Store(tmp_path)
    try:
        assert done.trials == len(store.trials(include_warmup=True))
        ok = {r["trial_key"] for r in rows if r["status"] == "ok"}
        assert store.done_keys(exp.name) == ok
    finally:
        store.close()


def _sharded_first(name: str) -> list[str]:
    """The --only selections scripts/reproduce.sh runs first as shards for experiment ``name``."""
    text = (ROOT / "scripts" / "reproduce.sh").read_text()
    start = text.index("sharded_first() {")
    body = text[start : text.index("\n}\n", start) + 3]
    out = subprocess.run(
        ["bash", "-c", f'{body}\nsharded_first "$1"', "bash", name],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.split()


@pytest.mark.parametrize(
    ("name", "networks"),
    [
        ("000-fig1-images-hol", 1),
        ("corpus-real-pages", 1),
        ("002-average-web-page", 24),  # one-way delays of 250, 300, 500, 1000 ms x 6 losses
        ("001-table1-factor-grid", 0),
    ],
)
def test_reproduce_sh_shards_first_the_cells_it_names(
    name: str, networks: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """reproduce.sh's sharded pass selects levels the experiment file has (a selection matching
    none fails the run), and as many networks as the benchmarks that justify it measured."""
    monkeypatch.chdir(ROOT)
    exp = load_experiment(Path("experiments", "seeds", f"{name}.toml"))
    only = parse_only(exp, _sharded_first(name))
    assert len(only.get("network", ())) == networks
    if networks:
        assert {t.network.name for t in select(expand(exp), only)} == only["network"]
