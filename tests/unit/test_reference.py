"""docs/reference.md is generated from the code (:mod:`h2lab.reference`): the file is what the
generator writes, and nothing the generator lists lacks its description."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer

from h2lab import clients, reference, servers
from h2lab.errors import EXIT_CODES
from h2lab.results import METRICS
from h2lab.spec import experiment
from h2lab.spec.factors import FACTORS
from h2lab.spec.options import FLAG, option, split_named
from h2lab.spec.registry import Registry

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
                spec = f"{name}:{d.example}".replace("FILE", str(conf))
                registry.get(spec)  # accepted
                assert any(d.matches(key) for key in split_named(spec, "any")[1])


def test_an_options_field_not_declared_as_an_option_is_refused_on_registration() -> None:
    """An adapter takes only what it declares: its options object has no field the registry
    could fill but docs/reference.md would not list."""

    @dataclass(frozen=True)
    class Half:
        declared: bool = option(FLAG, False, "a switch", "declared=1")
        undeclared: int = 0

    registry: Registry[Half] = Registry("thing", ())
    with pytest.raises(TypeError, match=r"Half\.undeclared is not declared with option\(\)"):
        registry.register("half", lambda o: o, Half)
    assert registry.names() == []
