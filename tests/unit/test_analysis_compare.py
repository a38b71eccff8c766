"""h2lab.analysis.compare: every level of a factor against its baseline, paired per repetition;
[compare] in experiment files; the report's comparison section."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest

from h2lab.analysis.compare import compare_levels, nearest_baselines
from h2lab.errors import SpecError
from h2lab.report import write_report
from h2lab.results import TrialRecord
from h2lab.runner.matrix import expand
from h2lab.spec.experiment import parse_experiment
from h2lab.store import Store
from tests.unit.test_report_model import trial

NONE, PUSH, RR = "origin:push=none", "origin:push=all", "origin:scheduler=rr"


def on(server: str, protocol: str, rep: int, pdt: float | None, **kw: object) -> TrialRecord:
    t = trial(protocol, rep, pdt, **kw)  # type: ignore[arg-type]
    block = t.block.replace("|nginx|", f"|{server}|")
    return dataclasses.replace(
        t, cell=t.cell.replace("server", server), block=block, trial_key=f"{block}|{protocol}"
    )


def test_each_level_is_paired_with_the_baseline_of_its_repetition() -> None:
    # push is 0.8× none in every repetition, whatever the repetition's own level
    trials = [on(NONE, "h2s", r, 100.0 * (r + 1)) for r in range(6)]
    trials += [on(PUSH, "h2s", r, 80.0 * (r + 1)) for r in range(6)]
    trials += [on(RR, "h2s", r, 100.0 * (r + 1)) for r in range(6)]
    rows = compare_levels(trials, np.random.default_rng(0), "server", (NONE,))
    by_level = {r.level: r for r in rows}
    assert set(by_level) == {PUSH, RR}
    push = by_level[PUSH]
    assert push.n_pairs == 6 and push.protocol == "h2s"
    assert push.median_ratio == pytest.approx(0.8)
    assert push.ci_low_ratio == pytest.approx(0.8) and push.ci_high_ratio == pytest.approx(0.8)
    assert push.outcome == "level faster"
    assert push.baseline_median_ms == pytest.approx(350.0)
    assert push.level_median_ms == pytest.approx(280.0)
    assert by_level[RR].outcome == "tie" and by_level[RR].median_ratio == pytest.approx(1.0)


def test_missing_and_failed_repetitions_are_not_paired_and_protocols_stay_apart() -> None:
    trials = [on(NONE, p, r, 100.0) for p in ("h1s", "h2s") for r in range(4)]
    trials += [on(PUSH, "h2s", r, 130.0) for r in range(3)]  # repetition 3 never ran
    trials.append(on(PUSH, "h2s", 3, None, status="failed"))
    rows = compare_levels(trials, np.random.default_rng(0), "server", (NONE,))
    assert [(r.protocol, r.n_pairs, r.outcome) for r in rows] == [("h2s", 3, "baseline faster")]


def test_one_pair_is_too_few() -> None:
    trials = [on(NONE, "h2s", 0, 100.0), on(PUSH, "h2s", 0, 50.0)]
    (row,) = compare_levels(trials, np.random.default_rng(0), "server", (NONE,))
    assert row.outcome == "too few blocks" and row.n_pairs == 1


def test_each_level_meets_the_baseline_of_its_own_table() -> None:
    # push levels measured with nghttp, early-hints levels with chromium: two baselines
    hints_none, hints_css = "origin:early_hints=none", "origin:early_hints=critical-css"
    trials = [on(NONE, "h2s", r, 100.0, client="nghttp") for r in range(3)]
    trials += [on(PUSH, "h2s", r, 90.0, client="nghttp") for r in range(3)]
    trials += [on(hints_none, "h2s", r, 200.0, client="chromium") for r in range(3)]
    trials += [on(hints_css, "h2s", r, 300.0, client="chromium") for r in range(3)]
    rows = compare_levels(trials, np.random.default_rng(0), "server", (NONE, hints_none))
    got: list[tuple[object, ...]] = [
        (r.cell.client, r.level, r.baseline, r.median_ratio) for r in rows
    ]
    assert got == [
        ("chromium", hints_css, hints_none, pytest.approx(1.5)),
        ("nghttp", PUSH, NONE, pytest.approx(0.9)),
    ]


def test_each_level_meets_its_nearest_baseline_when_both_cells_exist() -> None:
    # seed 003: buffers with and without sleepy images, a no-buffer baseline for each
    plain, sleepy = (
        "haproxy:backend=origin:delay_css=80ms",
        "haproxy:backend=origin:delay_css=80ms;delay_image=200ms",
    )
    base_plain, base_sleepy = f"{plain},buffer=none", f"{sleepy},buffer=none"
    levels = {
        f"{plain},buffer=1MB": 2.0,
        f"{sleepy},buffer=1MB": 3.0,
        base_plain: 1.0,
        base_sleepy: 1.5,
    }
    trials = [on(s, "h2s", r, 100.0 * v) for s, v in levels.items() for r in range(3)]
    rows = compare_levels(trials, np.random.default_rng(0), "server", (base_plain, base_sleepy))
    got = {(r.level, r.baseline): r.median_ratio for r in rows}
    assert got == {
        (f"{plain},buffer=1MB", base_plain): pytest.approx(2.0),
        (f"{sleepy},buffer=1MB", base_sleepy): pytest.approx(2.0),
    }


@pytest.mark.parametrize(
    ("level", "candidates", "nearest"),
    [
        ("origin:push=all", ["origin:push=none"], ["origin:push=none"]),
        ("a:x=1,y=2", ["a:x=1,y=0", "a:x=0,y=0"], ["a:x=1,y=0"]),
        ("a:x=1", ["a:y=1", "a:z=1"], ["a:y=1", "a:z=1"]),  # a tie keeps both
        ("a:x=1", [], []),
    ],
)
def test_nearest_baselines(level: str, candidates: list[str], nearest: list[str]) -> None:
    assert nearest_baselines(level, candidates) == nearest


def test_network_as_the_compared_factor() -> None:
    trials = [trial("h2s", r, 100.0, network="cable") for r in range(3)]
    trials += [trial("h2s", r, 300.0, network="3g") for r in range(3)]
    (row,) = compare_levels(trials, np.random.default_rng(0), "network", ("cable",))
    assert row.level == "3g" and row.median_ratio == pytest.approx(3.0)


EXPERIMENT = """
name = "push"
seed = 7
repetitions = 3
[factors]
protocol = ["h2s"]
network = ["cable", "3g"]
page = ["synthetic:n=4,size=1KB,origins=1"]
server = ["origin:push=none", "origin:push=all", "origin:scheduler=rr"]
client = ["nghttp"]
"""


def test_compare_runs_the_levels_back_to_back_with_one_seed() -> None:
    plain = expand(parse_experiment(_toml(EXPERIMENT), "e.toml"))
    paired = expand(parse_experiment(_toml(EXPERIMENT + COMPARE_SERVER), "e.toml"))
    assert {t.key for t in plain} == {t.key for t in paired}  # same trials, same keys
    # without [compare] every server level is its own block with its own seed
    assert len({(t.network.name, t.repetition, t.seed) for t in plain}) == 18
    # with it: per (network, repetition) one seed, and its three trials are adjacent
    seeds: dict[tuple[str, int], set[int]] = {}
    for t in paired:
        seeds.setdefault((t.network.name, t.repetition), set()).add(t.seed)
    assert all(len(s) == 1 for s in seeds.values()) and len(seeds) == 6
    groups = [(t.network.name, t.repetition) for t in paired]
    for i in range(0, len(groups), 3):
        assert len(set(groups[i : i + 3])) == 1
    assert [t.order for t in paired] == list(range(18))


COMPARE_SERVER = """
[compare]
factor = "server"
baseline = "origin:push=none"
"""


def _toml(text: str) -> dict[str, object]:
    import tomllib

    return tomllib.loads(text)


@pytest.mark.parametrize(
    ("compare", "field", "says"),
    [
        ('compare = "server"', "compare", "must be a table"),
        ('[compare]\nfactor = "protocol"\nbaseline = "h1s"', "compare.factor", "must be one of"),
        ('[compare]\nfactor = "server"\nbaseline = "h2o"', "compare.baseline", "not a level"),
        (
            '[compare]\nfactor = "server"\nbaseline = ["origin:push=all", "h2o"]',
            "compare.baseline[1]",
            "not a level",
        ),
        ('[compare]\nfactor = "server"\nbaseline = []', "compare.baseline", "one level"),
        ('[compare]\nfactor = "client"\nbaseline = "nghttp"', "compare.baseline", "nothing to"),
        ('[compare]\nfactor = "server"\nbase = "x"', "compare.base", "unknown key"),
    ],
)
def test_bad_compare_names_the_field(compare: str, field: str, says: str) -> None:
    # a table goes after the others, a top-level key before the first table
    text = EXPERIMENT + "\n" + compare if compare.startswith("[") else compare + EXPERIMENT
    with pytest.raises(SpecError) as err:
        parse_experiment(_toml(text), "e.toml")
    assert err.value.field == field and says in str(err.value)


def test_network_baseline_may_be_written_as_a_spec() -> None:
    text = EXPERIMENT + '\n[compare]\nfactor = "network"\nbaseline = "cable"\n'
    exp = parse_experiment(_toml(text), "e.toml")
    assert exp.compare is not None and exp.compare.baselines == ("cable",)


def _section(text: str, sid: str) -> str:
    m = re.search(rf'<section id="{sid}">(.*?)</section>', text, re.S)
    assert m
    return m.group(1)


def test_report_compares_on_the_experiments_factor_or_the_one_asked(tmp_path: Path) -> None:
    store = Store(tmp_path)
    for r in range(5):
        store.add_trial(on(NONE, "h2s", r, 100.0 + r))
        store.add_trial(on(PUSH, "h2s", r, 70.0 + r))
    store.close()
    # no [compare]: the server varied, so it is compared against its first level (sorted:
    # no experiment.json lists them)
    body = _section(write_report(tmp_path).read_text(), "compare")
    first, other = sorted((NONE, PUSH))
    assert "compared against its first level" in body and f"server against {first}:" in body
    assert f"<td>{other}</td><td>{first}</td>" in body and "5 pairs" in body

    text = write_report(tmp_path, compare=("server", (NONE,))).read_text()
    body = _section(text, "compare")
    assert "paired by repetition number only" in body
    assert '<td class="level-faster">level faster</td>' in body and "5 pairs" in body

    (tmp_path / "experiment.json").write_text(
        json.dumps({"name": "e", "compare": {"factor": "server", "baselines": [NONE]}})
    )
    body = _section(write_report(tmp_path).read_text(), "compare")
    assert "ran back to back with one loss seed" in body and "level faster" in body
