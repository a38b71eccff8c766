"""Synthetic pages: N objects of one size spread over K origins, plus an index.html.

Deterministic from ``seed``: the same spec gives the same bytes (and the same digest).
Bodies are random bytes, so no compression can shrink them.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from h2lab.errors import SpecError, UnitError
from h2lab.pages.manifest import Page, Resource, content_digest
from h2lab.paths import cache_root
from h2lab.units import format_size, parse_size_bytes

# Browsers' per-host connection limit is 6; 250 origins would exhaust the address plan.
MAX_ORIGINS = 64
MAX_OBJECTS = 10_000
MAX_OBJECT_BYTES = 100 * 1000**2

ORIGIN_DOMAIN = "h2lab.test"  # RFC 2606 reserves .test: never resolvable outside the lab


@dataclass(frozen=True)
class SyntheticSpec:
    count: int
    size_bytes: int
    origins: int
    seed: int

    @property
    def name(self) -> str:
        seed = f",seed={self.seed}" if self.seed else ""
        size = format_size(self.size_bytes)
        return f"synthetic:n={self.count},size={size},origins={self.origins}{seed}"


def parse(spec: str, source: str = "page", field: str = "page") -> SyntheticSpec:
    body = spec.removeprefix("synthetic:")
    fields: dict[str, str] = {}
    for part in filter(None, body.split(",")):
        key, sep, value = part.partition("=")
        if not sep:
            raise SpecError(source, field, f"expected key=value in {spec!r}, got {part!r}")
        if key not in {"n", "size", "origins", "seed"}:
            raise SpecError(source, f"{field}.{key}", "unknown key (known: n, size, origins, seed)")
        fields[key] = value
    try:
        count = int(fields.get("n", "16"))
        size = parse_size_bytes(fields.get("size", "10KB"))
        origins = int(fields.get("origins", "1"))
        seed = int(fields.get("seed", "0"))
    except (ValueError, UnitError) as exc:
        raise SpecError(source, field, f"{spec!r}: {exc}") from exc
    if not 1 <= count <= MAX_OBJECTS:
        raise SpecError(source, f"{field}.n", f"must be 1..{MAX_OBJECTS}, got {count}")
    if not 1 <= size <= MAX_OBJECT_BYTES:
        raise SpecError(source, f"{field}.size", f"must be 1 B..100 MB, got {size}")
    if not 1 <= origins <= MAX_ORIGINS:
        raise SpecError(source, f"{field}.origins", f"must be 1..{MAX_ORIGINS}, got {origins}")
    return SyntheticSpec(count=count, size_bytes=size, origins=origins, seed=seed)


def origin_names(k: int) -> tuple[str, ...]:
    return tuple(f"o{i + 1}.{ORIGIN_DOMAIN}" for i in range(k))


def layout(spec: SyntheticSpec) -> tuple[tuple[str, ...], tuple[Resource, ...], str]:
    """Pure part: origins, resources (index first) and the index.html text."""
    origins = origin_names(spec.origins)
    objects = tuple(
        Resource(
            origin=origins[i % spec.origins],
            path=f"/obj/{i:05d}.bin",
            size_bytes=spec.size_bytes,
            content_type="application/octet-stream",
        )
        for i in range(spec.count)
    )
    links = "\n".join(f'<link rel="preload" as="fetch" href="{o.url()}">' for o in objects)
    html = (
        "<!doctype html>\n<html><head><meta charset=utf-8>"
        f"<title>{spec.name}</title>\n{links}\n</head><body>"
        f"<p>{spec.count} objects of {spec.size_bytes} B over {spec.origins} origin(s)</p>"
        "</body></html>\n"
    )
    index = Resource(
        origin=origins[0],
        path="/index.html",
        size_bytes=len(html.encode()),
        content_type="text/html",
    )
    return origins, (index, *objects), html


def materialize(spec: SyntheticSpec) -> Page:
    """Write the page under the cache (once) and return its manifest."""
    origins, resources, html = layout(spec)
    slug = re.sub(r"[^a-z0-9]+", "-", spec.name.lower()).strip("-")
    docroot = cache_root() / "pages" / slug
    done = docroot / ".complete"
    if not done.exists():
        rng = random.Random(f"h2lab-synthetic-{spec.seed}")
        for res in resources:
            target = docroot / res.origin / res.path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            if res.path == "/index.html":
                target.write_text(html)
            else:
                target.write_bytes(rng.randbytes(res.size_bytes))
        done.write_text(content_digest(docroot, resources) + "\n")
    return Page(
        name=spec.name,
        origins=origins,
        resources=resources,
        docroot=docroot,
        digest=done.read_text().strip(),
    )
