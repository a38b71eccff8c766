"""Importers: a WARC, a HAR with bodies, a folder -> a stored page (docs/pages-import.md).

Each kind has a pure reader (``read_warc``, ``read_har``, ``read_folder``: input -> Capture,
with notes on what was left out) and an ``import_*`` function that reads and stores in one call
(input -> :class:`~h2lab.pages.manifest.Page`). Same input, same page id.
"""

from __future__ import annotations

from pathlib import Path

from h2lab.errors import SpecError
from h2lab.pages.importers.common import (
    MAX_HOSTS,
    MAX_PAGE_BYTES,
    MAX_RESOURCES,
    Capture,
    Recorded,
    store,
)
from h2lab.pages.importers.folder import DEFAULT_HOST, read_folder
from h2lab.pages.importers.har import read_har
from h2lab.pages.importers.warc import read_warc
from h2lab.pages.manifest import Page

__all__ = [
    "DEFAULT_HOST",
    "MAX_HOSTS",
    "MAX_PAGE_BYTES",
    "MAX_RESOURCES",
    "Capture",
    "Recorded",
    "import_folder",
    "import_har",
    "import_source",
    "import_warc",
    "read_capture",
    "read_folder",
    "read_har",
    "read_warc",
    "store",
]


def import_warc(path: str | Path, *, name: str | None = None, root: Path | None = None) -> Page:
    """A WARC file -> the stored page (named after the file unless ``name``)."""
    return store(read_warc(Path(path)), name, root)


def import_har(path: str | Path, *, name: str | None = None, root: Path | None = None) -> Page:
    """A HAR file with bodies -> the stored page (named after the file unless ``name``)."""
    return store(read_har(Path(path)), name, root)


def import_folder(
    folder: str | Path,
    entry: str | None = None,
    *,
    host: str | None = None,
    follow_symlinks: bool = False,
    name: str | None = None,
    root: Path | None = None,
) -> Page:
    """A folder (static site or wget mirror) -> the stored page; see :func:`read_folder`."""
    capture = read_folder(Path(folder), entry, host=host, follow_symlinks=follow_symlinks)
    return store(capture, name or _folder_name(capture), root)


def _folder_name(capture: Capture) -> str:
    stem = Path(capture.entry_url.split("?", 1)[0].rstrip("/")).stem
    base = capture.path.name or "site"
    return base if stem in {"", "index", base} else f"{base}-{stem}"


def read_capture(spec: str, source: str = "page") -> Capture:
    """``warc:FILE``, ``har:FILE`` or ``dir:FOLDER[#ENTRY]`` -> the capture (not stored)."""
    kind, _, rest = spec.partition(":")
    if not rest:
        raise SpecError(source, "page", f"{spec!r}: expected {kind}:FILE")
    if kind == "warc":
        return read_warc(Path(rest))
    if kind == "har":
        return read_har(Path(rest))
    if kind == "dir":
        folder, _, entry = rest.partition("#")
        return read_folder(Path(folder), entry or None)
    raise SpecError(source, "page", f"{spec!r}: unknown import kind {kind!r} (warc, har, dir)")


def import_source(spec: str, source: str = "page", *, root: Path | None = None) -> Page:
    """``warc:FILE``, ``har:FILE`` or ``dir:FOLDER[#ENTRY]`` -> the stored page. Errors in the
    spec name ``source``; errors in the input name the file read."""
    capture = read_capture(spec, source)
    name = _folder_name(capture) if capture.kind == "dir" else None
    return store(capture, name, root)
