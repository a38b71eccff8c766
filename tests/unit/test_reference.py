"""docs/reference.md is generated from the code (:mod:`h2lab.reference`): the file is what the
generator writes, and nothing the generator lists lacks its description."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer

from h2lab import clients, reference, servers
from h2lab.errors import EXIT_CODES, H2LabError
from h2lab.results import METRICS
from h2lab.spec import experiment
from h2lab.spec.factors import FACTORS

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference.md"


def test_the_reference_is_what_the_code_generates() -> None:
    assert REFERENCE.read_text() == reference.reference(), (
        "docs/reference.md is out of date: run `make reference`"
    )


def test_everything_the_reference_lists_has_its_description() -> None:
    assert reference.missing_entries() == []
    text = REFERENCE.read_text()
    for f in FACTORS:
        assert f"| `{f.name}` |" in text
    for m in METRICS:
        assert f"| `{m.name}` |" in text
    for key in (*experiment.KEY_DOCS, *experiment.QUICK_DOCS, *experiment.COMPARE_DOCS):
        assert f"| `{key}` |" in text
    for registry in (servers, clients):
        for name in registry.names():
            assert f"#### `{name}`" in text
            for d in registry.options_of(name):
                assert f"| `{d.key}` |" in text


def test_a_flag_or_command_without_help_is_found() -> None:
    app = typer.Typer()

    @app.command()
    def documented(x: int = typer.Option(1, help="an x")) -> None:
        """Does a thing."""

    @app.command()
    def bare(y: int = typer.Option(1)) -> None:
        pass

    assert reference.missing_entries(app) == ["command h2lab bare: no help",
                                              "command h2lab bare: y: no help"]  # fmt: skip


def test_every_exit_code_in_the_code_is_listed() -> None:
    pattern = re.compile(r"(?:typer\.Exit\(|sys\.exit\(|exit_code = )(\d+)")
    found = {
        int(code)
        for path in (ROOT / "src" / "h2lab").rglob("*.py")
        for code in pattern.findall(path.read_text())
    }
    assert found and found <= set(EXIT_CODES), found - set(EXIT_CODES)


def test_every_option_an_adapter_takes_is_declared_with_an_example_it_accepts(
    tmp_path: Path,
) -> None:
    conf = tmp_path / "fragment.conf"
    conf.write_text("# a fragment\n")
    for registry in (servers, clients):
        for name in registry.names():
            for d in registry.options_of(name):
                spec = d.example.replace("FILE", str(conf))
                registry.get(spec)  # accepted
                assert d.example.startswith(f"{name}:") and f"{d.key.split('<')[0]}" in spec


def test_an_option_taken_but_not_declared_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    servers.names()
    declared = servers._OPTIONS["origin"]
    monkeypatch.setitem(servers._OPTIONS, "origin", tuple(d for d in declared if d.key != "qlog"))
    with pytest.raises(H2LabError, match="server origin: option qlog is not declared"):
        servers.get("origin:qlog=1")
