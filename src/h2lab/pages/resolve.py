"""A page spec -> the page on disk, generated or imported on first use.

Above everything else in ``h2lab.pages``: it calls the synthetic generators
(:mod:`h2lab.pages.synthetic`) and the importers (:mod:`h2lab.pages.importers`), which both
write through :mod:`h2lab.pages.manifest`. Checking a spec without writing anything is
:func:`h2lab.pages.manifest.check_page_spec`.
"""

from __future__ import annotations

from pathlib import Path

from h2lab.errors import SpecError
from h2lab.pages import synthetic
from h2lab.pages.importers import import_source
from h2lab.pages.manifest import Page, find_page, load_page
from h2lab.spec.factors import IMPORT_KINDS, JOURNEY
from h2lab.spec.journey import load_journey


def resolve_page(spec: str, source: str = "page") -> Page:
    """A page spec -> page on disk. Accepted: a generator spec (``synthetic:...``), an
    importable source (``warc:FILE``, ``har:FILE``, ``dir:FOLDER[#ENTRY]``), a stored page's
    id or name (``h2lab pages list``), a folder holding a manifest.json, or a journey
    (``journey:FILE``: the page its steps run on)."""
    if spec.startswith(f"{JOURNEY}:"):
        journey = load_journey(Path(spec.removeprefix(f"{JOURNEY}:")))
        return resolve_page(journey.page, str(journey.path))
    if spec.startswith("synthetic:"):
        return synthetic.materialize(synthetic.parse(spec, source))
    if spec.split(":", 1)[0] in IMPORT_KINDS:
        return import_source(spec, source)
    folder = find_page(spec)
    if folder is None and Path(spec, "manifest.json").is_file():
        folder = Path(spec)
    if folder is not None:
        return load_page(folder, source)
    raise SpecError(
        source,
        "page",
        f"unknown page {spec!r} (use synthetic:n=<count>,size=<bytes>,origins=<k>, "
        "a page id or name from `h2lab pages list`, or a folder with a manifest.json)",
    )
