"""What every run starts with, before any lab: its trials, ``DIR/experiment.json`` (the run's
meta: what the report's reproducibility section reads) and the trials stored in ``DIR`` that
the experiment no longer has."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from h2lab.artifacts import EXPERIMENT_FILE
from h2lab.runner.matrix import TrialSpec, expand, select
from h2lab.spec.experiment import Experiment, factor_levels
from h2lab.spec.factors import COMPARABLE
from h2lab.store import Store


@dataclass(frozen=True)
class StartedRun:
    trials: list[TrialSpec]
    """the run's trials (those ``only`` selects), in run order"""
    strangers: list[str]
    """keys of trials stored ok under the experiment's name that it does not have (sorted):
    kept, and reported beside the run's (an edited file, or page paths resolved from another
    folder: a key holds the page spec with a file path resolved from the current folder)"""


def listed_levels(exp: Experiment) -> dict[str, list[str]]:
    """Each factor listed with more than one level, its levels as stored in the order the file
    lists them: the report compares the others against the first (issue #56)."""
    levels = {
        name: list(dict.fromkeys(v for f in exp.matrices for v in factor_levels(f, name)))
        for name in COMPARABLE
    }
    return {name: lv for name, lv in levels.items() if len(lv) > 1}


def write_meta(out: Path, exp: Experiment, exp_path: Path | None, n_trials: int) -> None:
    """``out/experiment.json``: the experiment's settings, and its file's text when there is
    one (``n_trials``: how many trials the whole experiment has)."""
    (out / EXPERIMENT_FILE).write_text(
        json.dumps(
            {
                "name": exp.name,
                "source": str(exp_path or exp.source),
                "seed": exp.seed,
                "repetitions": exp.repetitions,
                "retries": exp.retries,
                "warmup": exp.warmup,
                "outlier_rule": exp.outlier_rule,
                "fail_on": exp.fail_on,
                "capture": list(exp.capture),
                "compare": dataclasses.asdict(exp.compare) if exp.compare else None,
                "levels": listed_levels(exp),
                "trials": n_trials,
                "text": exp_path.read_text() if exp_path else None,
            },
            indent=1,
        )
    )


def start_run(
    exp: Experiment, exp_path: Path | None, out: Path, only: Mapping[str, frozenset[str]]
) -> StartedRun:
    """Expand ``exp``, create the store in ``out`` (its schema), write ``experiment.json``,
    and find the stored trials the experiment does not have."""
    trials = expand(exp)
    store = Store(out)
    try:
        write_meta(out, exp, exp_path, len(trials))
        rekey_paths(store, exp.name, trials)
        strangers = sorted(store.done_keys(exp.name) - {t.key for t in trials})
    finally:
        store.close()
    return StartedRun(select(trials, only), strangers)


def rekey_paths(store: Store, experiment: str, trials: list[TrialSpec]) -> int:
    """Give the stored trials of ``experiment`` whose key names a server's ``conf=`` file or
    a page's file by its absolute path (h2lab 0.8, 0.9.0) the key that names it by content,
    so a store written before resumes, and its report sees one level per configuration and
    page; how many attempts were moved."""
    moves = {
        old: (t.key, str(t.cell["server"]), str(t.cell["page"]))
        for t in trials
        for old in t.keys_by_path
    }
    return store.rekey(experiment, moves)
