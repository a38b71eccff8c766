"""h2lab.runner.start: what every run writes before any lab (experiment.json)."""

from __future__ import annotations

import json
from pathlib import Path

from h2lab.artifacts import EXPERIMENT_FILE
from h2lab.runner.start import write_meta
from h2lab.spec.experiment import Experiment, Factors
from h2lab.spec.network import parse_network


def _experiment(**settings: object) -> Experiment:
    factors = Factors.of(
        protocol=("h2s",), page=("synthetic:n=2",), network=(parse_network("cable"),)
    )
    return Experiment(name="meta", factors=factors, **settings)  # type: ignore[arg-type]


def test_experiment_json_says_what_every_trial_captured(tmp_path: Path) -> None:
    write_meta(tmp_path, _experiment(capture=("pcap",)), None, 2)
    meta = json.loads((tmp_path / EXPERIMENT_FILE).read_text())
    assert (meta["capture"], meta["trials"]) == (["pcap"], 2)
    write_meta(tmp_path, _experiment(), None, 2)
    assert json.loads((tmp_path / EXPERIMENT_FILE).read_text())["capture"] == []
