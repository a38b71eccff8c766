"""The page manifest: origins, resources with their bytes on disk, and the entry URL.

A page is content-addressed: ``Page.digest`` is a hash of every resource's URL and body, so
an experiment that names a page gets exactly the same bytes again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from h2lab.errors import SpecError


@dataclass(frozen=True)
class Resource:
    """One response the origins serve."""

    origin: str
    """hostname of the origin serving it"""
    path: str
    """URL path, starting with ``/``"""
    size_bytes: int
    """body size"""
    content_type: str

    def url(self, scheme: str = "https", port: int | None = None) -> str:
        host = self.origin if port is None else f"{self.origin}:{port}"
        return f"{scheme}://{host}{self.path}"


@dataclass(frozen=True)
class Page:
    """A set of resources over one or more origins; ``resources[0]`` is the entry document."""

    name: str
    origins: tuple[str, ...]
    resources: tuple[Resource, ...]
    docroot: Path
    """``docroot/<origin>/<path>`` holds each body"""
    digest: str

    @property
    def entry(self) -> Resource:
        return self.resources[0]

    @property
    def total_body_bytes(self) -> int:
        return sum(r.size_bytes for r in self.resources)

    def resources_of(self, origin: str) -> list[Resource]:
        return [r for r in self.resources if r.origin == origin]

    def manifest_json(self) -> str:
        return json.dumps(
            {
                "name": self.name,
                "digest": self.digest,
                "entry": self.entry.url(),
                "origins": list(self.origins),
                "resources": [
                    {
                        "origin": r.origin,
                        "path": r.path,
                        "size_bytes": r.size_bytes,
                        "content_type": r.content_type,
                    }
                    for r in self.resources
                ],
            },
            indent=1,
        )


def content_digest(docroot: Path, resources: tuple[Resource, ...]) -> str:
    h = hashlib.sha256()
    for r in resources:
        h.update(f"{r.origin}{r.path}\0".encode())
        h.update(hashlib.sha256((docroot / r.origin / r.path.lstrip("/")).read_bytes()).digest())
    return h.hexdigest()[:16]


def resolve_page(spec: str, source: str = "page") -> Page:
    """A page name or a synthetic spec (``synthetic:n=64,size=10KB,origins=1``) -> page on disk."""
    from h2lab.pages import synthetic

    if spec.startswith("synthetic:"):
        return synthetic.materialize(synthetic.parse(spec, source))
    raise SpecError(
        source,
        "page",
        f"unknown page {spec!r} (use synthetic:n=<count>,size=<bytes>,origins=<k>)",
    )
