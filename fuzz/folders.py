"""A folder to import, made from fuzz bytes, beside a folder it must never read from.

The input is text (bytes that are not UTF-8 become file-name bytes as they are): the first
line is the entry (empty: none given), the second the host (empty: none given), then one
entry per line: ``f NAME<TAB>CONTENT`` (a file), ``d NAME`` (a folder) or ``l NAME<TAB>TARGET``
(a symbolic link to anything, ``../outside/secret.html`` and ``/`` included). Names are made
under ``site/`` only (the harness itself never writes outside it); ``outside/`` holds
:data:`OUTSIDE_SECRET`, which no page may serve.
"""

from __future__ import annotations

import os
from pathlib import Path

OUTSIDE_SECRET = b"H2LAB-OUTSIDE-SECRET"
MAX_ENTRIES = 64
MAX_CONTENT_BYTES = 4096


def build(data: bytes, root: Path) -> tuple[Path, str | None, str | None]:
    """Make ``root/site`` and ``root/outside`` from ``data``: (folder, entry, host)."""
    outside = root / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.html").write_bytes(b"<p>" + OUTSIDE_SECRET)
    (outside / "dir" / "index.html").write_bytes(OUTSIDE_SECRET)
    site = root / "site"
    site.mkdir()
    lines = data.decode("utf-8", "surrogateescape").split("\n")
    entry = lines[0] if lines and lines[0] else None
    host = lines[1] if len(lines) > 1 and lines[1] else None
    for line in lines[2 : 2 + MAX_ENTRIES]:
        kind, _, rest = line.partition(" ")
        name, _, value = rest.partition("\t")
        path = _inside(site, name)
        if path is None:
            continue
        try:
            _make(kind, path, value)
        except (OSError, ValueError):
            continue  # a name the file system refuses: not an input the importer can get
    return site, entry, host


def _inside(site: Path, name: str) -> Path | None:
    """``site/name`` when it stays inside ``site`` (so the harness writes nowhere else)."""
    if not name or "\0" in name:
        return None
    path = os.path.normpath(os.path.join(site, name))
    if not path.startswith(str(site) + os.sep):
        return None
    return Path(path)


def _make(kind: str, path: Path, value: str) -> None:
    """One entry; nothing is made through a link (that could lead out of ``site/``)."""
    if os.path.realpath(path) != str(path):
        return  # the path, or a folder on the way, is a link
    if kind == "d":
        path.mkdir(parents=True, exist_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "f":
        path.write_bytes(os.fsencode(value)[:MAX_CONTENT_BYTES])
    elif kind == "l" and "\0" not in value:
        path.symlink_to(value)
