"""The HAR 1.2 JSON schema that h2lab's HARs are tested against: npm's ``har-schema`` 2.0.0
(the schema ``har-validator`` uses), unpacked by ``scripts/setup.sh`` under the cache root
(``H2LAB_CACHE``, default ``~/.cache/h2lab``) as ``npm/har-schema-2.0.0/lib/*.json``.

Its files are draft-06 schemas that ``$ref`` each other by ``$id`` (``entry.json#``); they are
loaded into one registry and checked with ``jsonschema``. Two things the schema says but a plain
draft-06 validator lets pass are checked too:

* formats: ``date-time`` (RFC 3339, as HAR 1.2 asks ISO 8601 with a zone), ``uri`` (absolute,
  with a scheme), ``ipv4``/``ipv6``. Without a format check, ``serverIPAddress``'s
  ``oneOf: [ipv4, ipv6]`` would match both and reject every address;
* ``min``, the schema's own word for the lower bounds of ``time`` (0) and the timings (-1): not
  a JSON Schema keyword (``minimum`` is), so ignored by validators; here it is enforced.

A test helper, not part of h2lab: h2lab does not validate the HARs it writes at run time (the
schema is a test reference, and a run should not depend on an npm package being unpacked).
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterator, Mapping
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
from referencing import Registry
from referencing.jsonschema import DRAFT6

from h2lab.paths import cache_root

HAR_SCHEMA_PACKAGE = "har-schema-2.0.0"
"""The pinned npm package (scripts/setup.sh ``NPM_TARBALLS``)."""

_RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")


def schema_dir() -> Path:
    """The folder of the package's schema files (AssertionError naming it if absent)."""
    lib = cache_root() / "npm" / HAR_SCHEMA_PACKAGE / "lib"
    assert (lib / "har.json").is_file(), f"{lib}: no har.json (run scripts/setup.sh)"
    return lib


def _date_time(value: object) -> bool:
    if not isinstance(value, str) or not _RFC3339.fullmatch(value):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _uri(value: object) -> bool:
    if not isinstance(value, str):
        return False
    u = urlsplit(value)
    return bool(u.scheme) and (bool(u.netloc) or u.scheme in ("data", "about", "blob"))


def _ip(version: int) -> Any:
    def check(value: object) -> bool:
        if not isinstance(value, str):
            return False
        try:
            return ipaddress.ip_address(value).version == version
        except ValueError:
            return False

    return check


def _formats() -> jsonschema.FormatChecker:
    checker = jsonschema.FormatChecker(formats=())
    checker.checks("date-time")(_date_time)
    checker.checks("uri")(_uri)
    checker.checks("ipv4")(_ip(4))
    checker.checks("ipv6")(_ip(6))
    return checker


def _min(
    validator: Any, bound: float, instance: object, schema: Mapping[str, Any]
) -> Iterator[jsonschema.ValidationError]:
    """The schema's ``min``: a number at least ``bound``."""
    if isinstance(instance, int | float) and not isinstance(instance, bool) and instance < bound:
        yield jsonschema.ValidationError(f"{instance} is less than the minimum of {bound}")


@cache
def _validator() -> Any:
    lib = schema_dir()
    resources = []
    for path in sorted(lib.glob("*.json")):
        schema = json.loads(path.read_text())
        # Every file says draft-06; without its ``$schema`` a ``$ref`` keeps this validator's
        # class (with ``min``) instead of switching to jsonschema's own Draft6Validator.
        assert schema.pop("$schema").startswith("http://json-schema.org/draft-06/"), path
        resources.append((schema["$id"], DRAFT6.create_resource(schema)))
    registry: Registry[Any] = Registry().with_resources(resources)
    root = registry.contents("har.json#")
    cls = jsonschema.validators.extend(jsonschema.Draft6Validator, {"min": _min})
    return cls(root, registry=registry, format_checker=_formats())


def har_errors(har: Any) -> list[str]:
    """Every way ``har`` (a parsed HAR) breaks the schema, as ``path: message`` lines."""
    errors = sorted(_validator().iter_errors(har), key=lambda e: list(map(str, e.path)))
    return [f"{'.'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in errors]


def assert_valid_har(har: Any, what: str = "HAR") -> None:
    """AssertionError listing (the first ten of) ``har``'s schema errors."""
    errors = har_errors(har)
    assert not errors, f"{what}: {len(errors)} schema errors:\n" + "\n".join(errors[:10])


def assert_valid_har_file(path: Path) -> dict[str, Any]:
    """The HAR file at ``path``, parsed, once it has validated."""
    har: dict[str, Any] = json.loads(path.read_text())
    assert_valid_har(har, str(path))
    return har
