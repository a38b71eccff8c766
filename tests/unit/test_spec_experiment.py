"""h2lab.spec.experiment: TOML experiment files -> Experiment, errors naming file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from h2lab import clients, servers
from h2lab.errors import SpecError
from h2lab.runner.levels import load_experiment, parse_experiment, validate_factors
from h2lab.spec.experiment import Experiment
from h2lab.spec.limits import DEFAULT_TIMEOUT_S
from h2lab.spec.network import parse_network

VALID = """\
name = "t"
description = "a test"
seed = 7
repetitions = 2
timeout_s = 30

[factors]
protocol = ["h1s", "h2s"]
network = ["3g-fast", "rtt=20ms,rate=10Mbps,loss=1%"]
page = ["synthetic:n=4,size=1KB,origins=2"]
server = ["nginx"]
client = ["h2load"]
congestion_control = ["cubic", "bbr"]
initcwnd = [10, 4]
"""

FACTORS = """\
[factors]
protocol = {protocol}
network = {network}
page = ["synthetic:n=2"]
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(text)
    return path


def _experiment(protocol: str = '["h1s"]', network: str = '["lan"]', extra: str = "") -> str:
    return 'name = "t"\n' + extra + FACTORS.format(protocol=protocol, network=network)


def _error(tmp_path: Path, text: str) -> SpecError:
    path = _write(tmp_path, text)
    with pytest.raises(SpecError) as exc:
        load_experiment(path)
    assert exc.value.source == str(path)
    assert exc.value.exit_code == 2
    return exc.value


def test_valid_file(tmp_path: Path) -> None:
    path = _write(tmp_path, VALID)
    exp = load_experiment(path)
    assert isinstance(exp, Experiment)
    assert (exp.name, exp.description, exp.seed, exp.repetitions) == ("t", "a test", 7, 2)
    assert exp.timeout_s == 30.0
    assert isinstance(exp.timeout_s, float)
    assert exp.source == str(path)
    f = exp.factors
    assert f.protocol == ("h1s", "h2s")
    assert f["network"] == (
        parse_network("3g-fast"),
        parse_network("rtt=20ms,rate=10Mbps,loss=1%"),
    )
    assert f["network"][1].down_loss_ratio == 0.01
    assert f["page"] == ("synthetic:n=4,size=1KB,origins=2",)
    assert (f["server"], f["client"]) == (("nginx",), ("h2load",))
    assert f["congestion_control"] == ("cubic", "bbr")
    assert f["initcwnd"] == (10, 4)


def test_defaults(tmp_path: Path) -> None:
    exp = load_experiment(_write(tmp_path, _experiment()))
    assert (exp.seed, exp.repetitions, exp.timeout_s, exp.description) == (
        0,
        1,
        DEFAULT_TIMEOUT_S,
        "",
    )
    f = exp.factors
    assert (f["server"], f["client"], f["congestion_control"], f["initcwnd"]) == (
        ("nginx",),
        ("h2load",),
        ("cubic",),
        (10,),
    )


def test_scalar_factor_is_a_one_element_list(tmp_path: Path) -> None:
    exp = load_experiment(_write(tmp_path, _experiment(protocol='"h2c"', network='"cable"')))
    assert exp.factors.protocol == ("h2c",)
    assert exp.factors["network"][0].name == "cable"


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.toml"
    with pytest.raises(SpecError) as exc:
        load_experiment(path)
    assert (exc.value.source, exc.value.field) == (str(path), "file")
    assert "cannot read" in exc.value.reason


def test_malformed_toml(tmp_path: Path) -> None:
    e = _error(tmp_path, 'name = "t"\n[factors\n')
    assert e.field == "toml"
    assert e.reason.startswith("malformed TOML: ")
    assert "line 2" in e.reason


def test_unknown_top_level_key(tmp_path: Path) -> None:
    e = _error(tmp_path, _experiment(extra="colour = 1\n"))
    assert e.field == "colour"
    assert e.reason.startswith("unknown key (known: ")
    assert "repetitions" in e.reason


def test_unknown_factor(tmp_path: Path) -> None:
    e = _error(tmp_path, _experiment() + "bogus = [1]\n")
    assert e.field == "factors.bogus"
    assert e.reason.startswith("unknown factor (known: client, congestion_control")


def test_unknown_protocol_value(tmp_path: Path) -> None:
    e = _error(tmp_path, _experiment(protocol='["h1s", "spdy"]'))
    assert e.field == "factors.protocol[1]"
    assert e.reason == "unknown value 'spdy' (allowed: h1c, h1p, h1s, h2c, h2s, h3)"


def test_bad_unit_in_network(tmp_path: Path) -> None:
    e = _error(tmp_path, _experiment(network='["rate=10Mbs"]'))
    assert e.field == "factors.network[0].rate"
    assert "'10Mbs'" in e.reason


def test_bad_network_names_its_index(tmp_path: Path) -> None:
    e = _error(tmp_path, _experiment(network='["lan", "rtt=50ms,up=1Mbs"]'))
    assert e.field == "factors.network[1].up"


def test_negative_delay(tmp_path: Path) -> None:
    e = _error(tmp_path, _experiment(network='["delay=-5ms"]'))
    assert e.field == "factors.network[0].delay"
    assert "must not be negative" in e.reason


def test_loss_above_100_percent(tmp_path: Path) -> None:
    e = _error(tmp_path, _experiment(network='["loss=150%"]'))
    assert e.field == "factors.network[0].loss"
    assert "cannot exceed 100%" in e.reason


def test_unknown_network_preset(tmp_path: Path) -> None:
    e = _error(tmp_path, _experiment(network='["5g"]'))
    assert e.field == "factors.network[0]"
    assert "unknown profile '5g'" in e.reason


@pytest.mark.parametrize(
    ("extra", "field", "reason"),
    [
        ("seed = -1\n", "seed", "must be a non-negative integer, got -1"),
        ("seed = true\n", "seed", "must be a non-negative integer, got True"),
        ("repetitions = 0\n", "repetitions", "must be an integer 1..10000, got 0"),
        ("repetitions = 1.5\n", "repetitions", "must be an integer 1..10000, got 1.5"),
        ("timeout_s = 0\n", "timeout_s", "must be seconds in (0, 3600], got 0"),
        ('timeout_s = "1m"\n', "timeout_s", "must be seconds in (0, 3600], got '1m'"),
        ("timeout_s = 3601\n", "timeout_s", "must be seconds in (0, 3600], got 3601"),
        ('capture = "tcpdump"\n', "capture", "unknown capture 'tcpdump' (known: pcap, qlog)"),
        ('capture = ["pcap", 1]\n', "capture[1]", "unknown capture 1 (known: pcap, qlog)"),
        ('capture = ["pcap", "pcap"]\n', "capture", "lists a value twice"),
    ],
)
def test_bad_top_level_values(tmp_path: Path, extra: str, field: str, reason: str) -> None:
    e = _error(tmp_path, _experiment(extra=extra))
    assert (e.field, e.reason) == (field, reason)


def test_missing_name_and_factors(tmp_path: Path) -> None:
    e = _error(tmp_path, "seed = 1\n")
    assert (e.field, e.reason) == ("name", "missing or not a string")
    e = _error(tmp_path, 'name = "t"\n')
    assert (e.field, e.reason) == ("factors", "missing table [factors] (or tables [[factors]])")


def _factors(**overrides: object) -> dict[str, object]:
    raw: dict[str, object] = {"protocol": ["h1s"], "network": ["lan"], "page": ["synthetic:n=2"]}
    raw.update(overrides)
    return raw


@pytest.mark.parametrize(
    ("raw", "field", "reason"),
    [
        ({"protocol": ["h1s"], "page": ["synthetic:"]}, "factors.network", "missing (required)"),
        (_factors(protocol=[]), "factors.protocol", "must list at least one value"),
        (_factors(protocol=["h1s", "h1s"]), "factors.protocol", "lists a value twice"),
        (_factors(protocol=["h1s", 2]), "factors.protocol[1]", "must be a string, got 2"),
        (
            _factors(page=["index.html"]),
            "factors.page[0]",
            "unknown page 'index.html' (use synthetic:..., warc:FILE, har:FILE, "
            "dir:FOLDER#ENTRY, a page id or name from `h2lab pages list`, or a folder with a "
            "manifest.json)",
        ),
        (
            _factors(page=["warc:/nonexistent/x.warc.gz"]),
            "factors.page[0]",
            "'warc:/nonexistent/x.warc.gz': no such file '/nonexistent/x.warc.gz'",
        ),
        (_factors(page=["synthetic:n=0"]), "factors.page[0].n", "must be 1..10000, got 0"),
        (
            _factors(server=["iis"]),
            "factors.server[0]",
            f"unknown server 'iis' (known: {', '.join(servers.names())})",
        ),
        (
            _factors(server=["nginx:workers=2"]),
            "factors.server[0]",
            "nginx:workers=2: no option 'workers' (nginx takes: conf)",
        ),
        (
            _factors(client=["wget"]),
            "factors.client[0]",
            f"unknown client 'wget' (known: {', '.join(clients.names())})",
        ),
        (
            _factors(congestion_control=["vegas"]),
            "factors.congestion_control[0]",
            "unknown value 'vegas' (allowed: cubic, bbr, reno)",
        ),
        (_factors(initcwnd=[0]), "factors.initcwnd[0]", "must be 1..1000 packets, got 0"),
        (_factors(initcwnd=[10, True]), "factors.initcwnd[1]", "must be an integer, got True"),
    ],
)
def test_validate_factors_errors(raw: dict[str, object], field: str, reason: str) -> None:
    with pytest.raises(SpecError) as exc:
        validate_factors("src.toml", raw)
    assert (exc.value.source, exc.value.field, exc.value.reason) == ("src.toml", field, reason)


@pytest.mark.parametrize(
    ("raw", "capture"), [(None, ()), ("pcap", ("pcap",)), (["pcap"], ("pcap",))]
)
def test_capture_is_a_name_or_a_list_of_them_and_not_a_factor(
    raw: object, capture: tuple[str, ...]
) -> None:
    given = {} if raw is None else {"capture": raw}
    exp = parse_experiment({"name": "d", "factors": _factors(), **given}, "dict")
    assert exp.capture == capture
    plain = parse_experiment({"name": "d", "factors": _factors()}, "dict")
    assert exp.factors == plain.factors  # the same cells and trial keys, captured or not


def test_parse_experiment_from_dict() -> None:
    exp = parse_experiment({"name": "d", "factors": _factors()}, "dict")
    assert (exp.name, exp.source, exp.factors.protocol) == ("d", "dict", ("h1s",))


def test_retries_warmup_and_factor_tables(tmp_path: Path) -> None:
    text = (
        'name = "t"\nretries = 2\nwarmup = 3\n'
        '[[factors]]\nprotocol = ["h1s"]\nnetwork = ["lan"]\npage = ["synthetic:"]\n'
        '[[factors]]\nprotocol = ["h2s"]\nnetwork = ["cable"]\npage = ["synthetic:n=4"]\n'
    )
    exp = load_experiment(_write(tmp_path, text))
    assert (exp.retries, exp.warmup) == (2, 3)
    assert [m.protocol for m in exp.matrices] == [("h1s",), ("h2s",)]
    bad = text.replace('protocol = ["h2s"]', 'protocol = ["h9"]')
    e = _error(tmp_path, bad)
    assert e.field == "factors[1].protocol[0]"
    e = _error(tmp_path, text.replace("retries = 2", "retries = 11"))
    assert (e.field, e.reason) == ("retries", "must be an integer 0..10, got 11")


def test_outlier_rule_is_none_or_2sd(tmp_path: Path) -> None:
    text = 'name = "t"\n[factors]\nprotocol = ["h1s"]\nnetwork = ["lan"]\npage = ["synthetic:"]\n'
    assert load_experiment(_write(tmp_path, text)).outlier_rule is None
    assert load_experiment(_write(tmp_path, 'outlier_rule = "2sd"\n' + text)).outlier_rule == "2sd"
    e = _error(tmp_path, 'outlier_rule = "3sd"\n' + text)
    assert (e.field, e.reason) == ("outlier_rule", "must be one of none, 2sd, got '3sd'")


def test_import_page_paths_are_relative_to_the_experiment_file(tmp_path: Path) -> None:
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "x.har").write_text("{}")
    text = FACTORS.format(protocol='["h1s"]', network='["lan"]').replace(
        'page = ["synthetic:n=2"]', 'page = ["har:pages/x.har"]'
    )
    exp = load_experiment(_write(tmp_path, 'name = "t"\n' + text))
    assert exp.factors["page"] == (f"har:{tmp_path}/pages/x.har",)


def test_quick_variant_overrides_repetitions_and_levels(tmp_path: Path) -> None:
    text = (
        'name = "t"\nrepetitions = 10\n'
        '[factors]\nprotocol = ["h1s", "h2s"]\nnetwork = ["lan", "cable"]\npage = ["synthetic:"]\n'
        '[quick]\nrepetitions = 1\n[quick.factors]\nnetwork = ["lan"]\n'
    )
    path = _write(tmp_path, text)
    full, quick = load_experiment(path), load_experiment(path, quick=True)
    assert (full.name, full.repetitions, len(full.factors["network"])) == ("t", 10, 2)
    assert (quick.name, quick.repetitions, len(quick.factors["network"])) == ("t-quick", 1, 1)
    assert quick.factors.protocol == ("h1s", "h2s")
    e = _error(tmp_path, text.replace("repetitions = 1\n[quick", "reps = 1\n[quick"))
    assert (e.field, e.reason.split(" (")[0]) == ("quick.reps", "unknown key")


def test_an_experiment_knows_whether_it_has_a_quick_table(tmp_path: Path) -> None:
    """Parsed, not searched for: ``quick`` in a description or a page name is no table, and
    ``h2lab validate`` counts the quick variant only for a file that has one."""
    text = (
        'name = "quick"\ndescription = "a quick look"\n'
        '[factors]\nprotocol = ["h1s", "h2s"]\nnetwork = ["lan"]\npage = ["synthetic:"]\n'
    )
    plain = _write(tmp_path, text)
    assert not load_experiment(plain).has_quick
    assert not load_experiment(plain, quick=True).has_quick
    quick = tmp_path / "quick.toml"
    quick.write_text(text + "[quick]\nrepetitions = 1\n")
    assert load_experiment(quick).has_quick and load_experiment(quick, quick=True).has_quick


def test_quick_factor_tables_replace_the_arms(tmp_path: Path) -> None:
    # an experiment of several arms: [[quick.factors]] gives the quick variant its own tables
    rest = 'page = ["synthetic:"]\nserver = ["origin"]\nclient = ["chromium"]\n'
    text = (
        'name = "t"\nrepetitions = 3\n'
        '[[factors]]\nprotocol = ["h2s", "h3"]\nnetwork = ["lan", "cable"]\n'
        + rest
        + '[[factors]]\nprotocol = ["h2s", "h3"]\nnetwork = ["rtt=100ms,jitter=5ms"]\n'
        + rest
        + "[quick]\nrepetitions = 1\n"
        + '[[quick.factors]]\nprotocol = ["h3"]\nnetwork = ["lan"]\n'
        + rest
        + '[[quick.factors]]\nprotocol = ["h3"]\nnetwork = ["rtt=100ms,jitter=1ms"]\n'
        + rest
    )
    path = _write(tmp_path, text)
    full, quick = load_experiment(path), load_experiment(path, quick=True)
    assert [tuple(n.name for n in m["network"]) for m in full.matrices] == [
        ("lan", "cable"),
        ("rtt=100ms,jitter=5ms",),
    ]
    assert [(m.protocol, tuple(n.name for n in m["network"])) for m in quick.matrices] == [
        (("h3",), ("lan",)),
        (("h3",), ("rtt=100ms,jitter=1ms",)),
    ]
    # the quick tables are checked like the others (``h2lab validate`` loads both variants)
    bad = text.replace('network = ["rtt=100ms,jitter=1ms"]', 'network = ["rtt=10ms,jitter=9ms"]')
    with pytest.raises(SpecError) as info:
        load_experiment(_write(tmp_path, bad), quick=True)
    assert info.value.field == "factors[1].network[0].jitter"
    assert "cannot be emulated" in info.value.reason
