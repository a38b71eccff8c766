"""``name:key=value,...`` specs of adapters (clients, servers), parsed once; a server spec's
``conf=FILE`` made absolute against its experiment file's folder."""

from __future__ import annotations

from pathlib import Path

from h2lab.errors import SpecError

CONF_OPTION = "conf"
"""The server option naming the user's configuration fragment (:mod:`h2lab.servers.fragment`)."""


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
