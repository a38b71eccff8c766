"""Every registered server and client refuses a bad option the same way, through the command line
(``h2lab validate`` of an experiment file): an unknown key, a malformed value of each of its
options, and an option another adapter takes but it does not, each exit 2 with one line naming
the file, the factor's field, the level as stored and the key.

The cases come from the registries, so a new adapter is covered without a line here.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from h2lab import cli, clients, servers
from h2lab.spec.options import resolve_paths, split_named
from h2lab.spec.registry import Registry

BAD_VALUE = "%bad%"
"""A value no parser takes: no rule, number, size, duration, file or adapter is called that (and
it holds none of the characters that separate a spec: ``:``, ``,``, ``;``, ``=``)."""

UNKNOWN_KEY = "nosuchoption"


class Case(NamedTuple):
    factor: str
    level: str
    key: str


def _with(least: str, key: str, value: str) -> str:
    """``least`` (an adapter's shortest spec) with ``key=value`` set."""
    name, given = split_named(least, "any")
    given[key] = value
    return f"{name}:" + ",".join(f"{k}={v}" for k, v in given.items())


def cases() -> list[Case]:
    registries: dict[str, Registry[Any]] = {"server": servers.REGISTRY, "client": clients.REGISTRY}
    every_key = sorted(
        {
            o.stem + (o.members[0] if o.members else "")
            for r in registries.values()
            for n in r.names()
            for o in r.options_of(n)
        }
    )
    found = []
    for factor, registry in registries.items():
        for name in registry.names():
            least = registry.least_spec(name)
            found.append(Case(factor, _with(least, UNKNOWN_KEY, "1"), UNKNOWN_KEY))
            options = registry.options_of(name)
            for o in options:
                key = o.stem + (o.members[0] if o.members else "")
                found.append(Case(factor, _with(least, key, BAD_VALUE), key))
            other = next(k for k in every_key if not any(o.matches(k) for o in options))
            found.append(Case(factor, _with(least, other, "1"), other))
    return found


CASES = cases()


def test_every_adapter_has_its_cases() -> None:
    levels = [c.level.partition(":")[0] for c in CASES]
    assert set(levels) == {*servers.names(), *clients.names()}
    assert all(levels.count(n) >= 2 for n in levels)  # an unknown key, another's option


@pytest.mark.parametrize("case", CASES, ids=[c.level for c in CASES])
def test_a_bad_option_exits_2_in_one_line_naming_file_level_and_key(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    exp = tmp_path / "exp.toml"
    exp.write_text(
        'name = "bad-option"\n\n[factors]\nprotocol = ["h2s"]\nnetwork = ["cable"]\n'
        f'page = ["synthetic:n=1,size=1KB"]\n{case.factor} = ["{case.level}"]\n'
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["h2lab", "validate", str(exp)])
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    out, err = capsys.readouterr()
    assert exit_.value.code == 2 and out == ""
    # a server's conf=FILE is stored made absolute, and named so
    level = resolve_paths(case.level, tmp_path) if case.factor == "server" else case.level
    assert err.count("\n") == 1, err
    assert err.startswith(f"h2lab: {exp}: factors.{case.factor}[0]: {level}: "), err
    assert case.key in err.removeprefix(f"h2lab: {exp}: factors.{case.factor}[0]: {level}: ")
