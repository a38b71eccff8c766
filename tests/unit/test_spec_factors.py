"""h2lab.spec.factors: the one definition of a trial's factors, and what derives from it (the
experiment's keys, trial keys, store columns, the analysis cell, the report's columns), with the
``tls`` factor as the example of a factor added after trial keys were first written."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from h2lab.errors import SpecError
from h2lab.runner.matrix import expand
from h2lab.spec.experiment import FACTOR_KEYS, parse_experiment
from h2lab.spec.factors import (
    BY_NAME,
    COMPARABLE,
    FACTORS,
    Cell,
    TrialFactors,
    report_columns,
    trial_factors,
)
from h2lab.spec.network import parse_network
from h2lab.store.restore import restore_store
from h2lab.store.sqlite import TRIAL_COLUMNS, Store

PAGE = "synthetic:n=2"


def _experiment(**factors: object) -> dict[str, object]:
    table = {"protocol": ["h1s", "h2s"], "network": ["lan"], "page": [PAGE], **factors}
    return {"name": "t", "factors": table}


def test_the_dataclass_fields_are_the_table() -> None:
    assert [f.name for f in dataclasses.fields(TrialFactors)] == [f.name for f in FACTORS]
    assert {"protocol", *(f.name for f in FACTORS)} == FACTOR_KEYS
    assert set(COMPARABLE) == {f.name for f in FACTORS if f.comparable}
    assert [n for names in report_columns().values() for n in names] == [f.name for f in FACTORS]


def test_every_factor_is_a_store_column_of_its_type() -> None:
    for f in FACTORS:
        assert TRIAL_COLUMNS[f.column].startswith(f"{f.sql} NOT NULL"), f.name
    assert TRIAL_COLUMNS["tls"] == "TEXT NOT NULL DEFAULT '1.3'"
    assert TRIAL_COLUMNS["initcwnd_packets"] == "INTEGER NOT NULL DEFAULT 10"


def test_defaults_fill_what_a_table_does_not_list() -> None:
    (t, *_) = expand(parse_experiment(_experiment(), "dict"))
    assert t.factors == trial_factors({"page": PAGE, "network": parse_network("lan")})
    assert (t.server, t.client, t.factors.tls) == ("nginx", "h2load", "1.3")
    assert t.cell == Cell.of(page=PAGE, network="lan")
    assert t.cell.columns() == {
        "page": PAGE,
        "network": "lan",
        "server": "nginx",
        "client": "h2load",
        "congestion_control": "cubic",
        "initcwnd_packets": 10,
        "tls": "1.3",
        "view": "first",
        "discovery": "forced",
        "h3_origins": "all",
    }


def test_tls_at_its_default_leaves_trial_keys_as_they_were() -> None:
    exp = parse_experiment(_experiment(tls=["1.3", "1.2"]), "dict")
    blocks = {t.factors.tls: t.block for t in expand(exp)}
    assert blocks == {
        "1.3": f"{PAGE}|lan|nginx|h2load|cubic|iw10|r0",
        "1.2": f"{PAGE}|lan|nginx|h2load|cubic|iw10|tls1.2|r0",
    }
    assert {t.config()["tls"] for t in expand(exp)} == {"1.2", "1.3"}


def test_tls_compared_runs_back_to_back_with_one_seed() -> None:
    raw = _experiment(tls=["1.2", "1.3"], server=["nginx", "origin"])
    raw["compare"] = {"factor": "tls", "baseline": "1.3"}
    raw["repetitions"] = 2
    trials = expand(parse_experiment(raw, "dict"))
    assert len(trials) == 2 * 2 * 2 * 2
    blocks = [trials[i : i + 4] for i in range(0, len(trials), 4)]
    for block in blocks:
        assert len({t.seed for t in block}) == 1
        assert {(t.factors.tls, t.protocol) for t in block} == {
            (v, p) for v in ("1.2", "1.3") for p in ("h1s", "h2s")
        }


@pytest.mark.parametrize(
    ("factors", "key", "reason"),
    [
        ({"tls": ["1.4"]}, "factors.tls[0]", "unknown value '1.4' (allowed: 1.2, 1.3)"),
        ({"tls": 1.3}, "factors.tls[0]", "must be a string, got 1.3"),
        (
            {
                "tls": ["1.3", "1.2"],
                "protocol": ["h2s", "h3"],
                "server": ["origin"],
                "client": "chromium",
            },
            "factors.tls[1]",
            "TLS 1.2 cannot carry h3: QUIC is TLS 1.3 only (RFC 9001)",
        ),
    ],
)
def test_bad_tls_names_the_key(factors: dict[str, object], key: str, reason: str) -> None:
    with pytest.raises(SpecError) as e:
        parse_experiment(_experiment(**factors), "x.toml")
    assert (e.value.field, e.value.reason) == (key, reason)


def test_bad_tls_in_a_file_exits_2_with_one_line_and_starts_nothing(tmp_path: Path) -> None:
    exp = tmp_path / "bad.toml"
    exp.write_text(
        'name = "bad"\n[factors]\nprotocol = ["h2s", "h3"]\nnetwork = ["lan"]\n'
        f'page = ["{PAGE}"]\nserver = ["origin"]\nclient = ["chromium"]\ntls = ["1.2"]\n'
    )
    out = tmp_path / "out"
    run = subprocess.run(
        [sys.executable, "-m", "h2lab", "run", str(exp), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and str(exp) in lines[0] and "factors.tls[0]" in lines[0], lines
    assert not out.exists()


def test_cell_levels_by_factor_or_column_and_replaced() -> None:
    c = Cell.of(page=PAGE, network="lan", initcwnd_packets=4, tls="1.2")
    assert (c["initcwnd"], c["initcwnd_packets"], c.text("initcwnd")) == (4, 4, "iw4")
    assert c.replace("initcwnd", "10") == Cell.of(page=PAGE, network="lan", tls="1.2")
    assert c.key_parts("tls") == [PAGE, "lan", "nginx", "h2load", "cubic", "iw4", "*"]
    assert c.key_parts() == [PAGE, "lan", "nginx", "h2load", "cubic", "iw4", "tls1.2"]
    assert sorted([c, Cell.of(page=PAGE, network="cable")])[0].network == "cable"
    with pytest.raises(ValueError, match="missing column 'network'"):
        Cell.of(page=PAGE)


def test_a_csv_written_before_a_factor_existed_restores_with_its_default(tmp_path: Path) -> None:
    # trials.csv of an older h2lab has no tls, view, discovery or h3_origins column: its
    # trials ran with TLS 1.3, first views, h3 forced on every origin
    columns = [c for c in TRIAL_COLUMNS if c not in ("tls", "view", "discovery", "h3_origins")]
    row = {c: "" for c in columns}
    row |= {"id": "1", "trial_key": "k", "experiment": "e", "block": "b", "page": PAGE}
    row |= {"network": "lan", "server": "nginx", "client": "h2load"}
    row |= {"congestion_control": "cubic", "initcwnd_packets": "10", "protocol": "h2s"}
    row |= {"repetition": "0", "seed": "1", "attempt": "1", "status": "ok", "warmup": "0"}
    row |= {"started_at": "2026-11-25T00:00:00", "config_json": "{}", "versions_json": "{}"}
    (tmp_path / "trials.csv").write_text(",".join(columns) + "\n" + ",".join(row.values()) + "\n")
    restore_store(tmp_path)
    store = Store(tmp_path)
    try:
        (t,) = store.trials()
    finally:
        store.close()
    assert t.cell["tls"] == "1.3" and t.cell == Cell.of(page=PAGE, network="lan")
    assert (t.cell["view"], t.cell["discovery"], t.cell["h3_origins"]) == ("first", "forced", "all")
    assert BY_NAME["tls"].key_part("1.3") is None


def test_the_first_view_at_its_default_leaves_trial_keys_as_they_were() -> None:
    (t, *_) = expand(parse_experiment(_experiment(), "dict"))
    assert "first" not in t.key and t.factors.view == "first"
    (r, *_) = expand(parse_experiment(_experiment(view=["repeat"]), "dict"))
    assert r.key == t.key.replace("|r0|", "|repeat|r0|")
