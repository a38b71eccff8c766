"""``name:key=value,...`` specs of adapters (clients, servers), parsed once; a server spec's
``conf=FILE`` made absolute against its experiment file's folder."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from h2lab.errors import SpecError

CONF_OPTION = "conf"
"""The server option naming the user's configuration fragment (:mod:`h2lab.servers.fragment`)."""


@dataclass(frozen=True)
class OptionDoc:
    """One option of a server or client (``name:key=value``), as docs/reference.md lists it:
    declared with the adapter's registration, the one place it is described."""

    key: str
    """the option's key; a family ends in ``<...>`` (``delay_<class>``)"""
    values: str
    """how a value is written (``0|1``, ``FILE``, ``DURATION``)"""
    doc: str
    """what it does, one sentence"""
    example: str
    """a whole spec that uses it and that the adapter accepts (``FILE``: any readable file)"""

    def matches(self, key: str) -> bool:
        if self.key.endswith(">"):
            return key.startswith(self.key.split("<", 1)[0])
        return key == self.key


def undeclared(options: Mapping[str, str], docs: Sequence[OptionDoc]) -> list[str]:
    """The keys of ``options`` that no :class:`OptionDoc` of ``docs`` declares."""
    return sorted(k for k in options if not any(d.matches(k) for d in docs))


def parse_named(spec: str, source: str, field: str, kind: str) -> tuple[str, dict[str, str]]:
    """``"chromium:device=mobile,cpu=4"`` -> ``("chromium", {"device": "mobile", "cpu": "4"})``."""
    name, _, rest = spec.partition(":")
    options: dict[str, str] = {}
    for part in filter(None, rest.split(",")):
        key, eq, value = part.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise SpecError(source, field, f"{kind} option {part!r} is not key=value")
        options[key.strip()] = value.strip()
    return name, options


def resolve_paths(spec: str, base: Path, source: str = "server", field: str = "server") -> str:
    """``spec`` with a relative ``conf=`` made absolute against ``base`` (the experiment
    file's folder); any other spec as written."""
    name, options = parse_named(spec, source, field, "server")
    value = options.get(CONF_OPTION)
    if value is None or Path(value).is_absolute():
        return spec
    options[CONF_OPTION] = str((base / value).resolve())
    return f"{name}:" + ",".join(f"{k}={v}" for k, v in options.items())


def base_dir(source: str) -> Path:
    """The folder relative ``conf=`` paths are resolved in: the experiment file's, else the
    working directory (``command line``)."""
    path = Path(source)
    return path.parent.resolve() if path.is_file() else Path.cwd()
