"""``name:key=value,...`` specs of adapters (clients, servers), parsed once."""

from __future__ import annotations

from h2lab.errors import SpecError


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
