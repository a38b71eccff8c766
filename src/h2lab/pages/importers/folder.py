"""A folder of files (a static site, a Debian doc package, a wget/httrack mirror) ->
:class:`~.common.Capture`.

Every regular file under the folder is served with status 200 at its relative path; an
``index.html`` also answers for its directory (``/dir/``), as a static server would. One origin
(``host``, default :data:`DEFAULT_HOST`), unless every top-level entry is a directory named like
a hostname (``www.example.com/``, the layout of ``wget --mirror`` and httrack): then each of
those directories is an origin of that name. A ``?`` in a file name (wget keeps query strings
that way) starts the URL's query. Content types come from :data:`WEB_TYPES`, then Python's
built-in table (not ``/etc/mime.types``, so the result does not depend on the machine).
"""

from __future__ import annotations

import mimetypes
import os
import stat
from pathlib import Path
from urllib.parse import quote

from h2lab.errors import SpecError
from h2lab.net.addresses import valid_hostname
from h2lab.pages.importers.common import (
    Budget,
    Capture,
    Recorded,
    finish,
)

DEFAULT_HOST = "site.h2lab.test"  # RFC 2606 reserves .test: never resolvable outside the lab
INDEX_NAMES = ("index.html", "index.htm")

WEB_TYPES = {
    ".html": "text/html",
    ".htm": "text/html",
    ".xhtml": "application/xhtml+xml",
    ".css": "text/css",
    ".js": "text/javascript",  # RFC 9239
    ".mjs": "text/javascript",
    ".json": "application/json",
    ".map": "application/json",
    ".xml": "application/xml",
    ".txt": "text/plain",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".avif": "image/avif",
    ".ico": "image/vnd.microsoft.icon",
    ".bmp": "image/bmp",
    ".woff": "font/woff",
    ".woff2": "font/woff2",
    ".ttf": "font/ttf",
    ".otf": "font/otf",
    ".eot": "application/vnd.ms-fontobject",
    ".wasm": "application/wasm",
    ".pdf": "application/pdf",
    ".mp4": "video/mp4",
    ".webm": "video/webm",
    ".mp3": "audio/mpeg",
    ".ogg": "audio/ogg",
    ".wav": "audio/wav",
    ".gz": "application/gzip",
    ".zip": "application/zip",
    ".csv": "text/csv",
}
"""Content types of the common web formats, fixed (IANA media types registry)."""

_BUILTIN = mimetypes.MimeTypes()  # Python's own table; reads no system file
_PCHAR = "!$&'()*+,;=:@"  # RFC 3986 sub-delims and ':' '@' may stay unescaped in a segment


def content_type_for(name: str) -> str:
    """Content type of a file by its extension (case-insensitive)."""
    ext = os.path.splitext(name.split("?", 1)[0])[1].lower()
    if ext in WEB_TYPES:
        return WEB_TYPES[ext]
    guessed, encoding = _BUILTIN.guess_type("f" + ext, strict=False)
    if guessed is None or encoding is not None:
        return "application/octet-stream"
    return guessed


def _is_host_dir(name: str) -> bool:
    labels = name.split(".")
    return len(labels) >= 2 and labels[-1].isalpha() and valid_hostname(name.lower())


def _walk(
    root: Path, real_root: Path, follow_symlinks: bool, notes: list[str]
) -> list[tuple[str, Path]]:
    """Every regular file under ``root`` as (relative path with ``/``, path to read), sorted.
    Symlinks are followed inside the folder; one leading out of it is skipped with a note
    unless ``follow_symlinks``; cycles are cut. A subfolder that cannot be listed is skipped
    with a note too: real folders are messy, one bad entry does not fail the import."""
    files: list[tuple[str, Path]] = []
    seen_dirs: set[str] = set()

    def visit(folder: Path, rel: str) -> None:
        real = os.path.realpath(folder)
        if real in seen_dirs:
            return
        seen_dirs.add(real)
        try:
            names = sorted(os.listdir(folder))
        except OSError as exc:
            if not rel:
                raise SpecError(root, ".", f"cannot list: {exc.strerror}") from exc
            notes.append(f"skipped {_shown(rel)}/: cannot list ({exc.strerror})")
            return
        for name in names:
            path = folder / name
            sub = f"{rel}/{name}" if rel else name
            if path.is_symlink() and not follow_symlinks:
                target = os.path.realpath(path)
                if os.path.commonpath([target, str(real_root)]) != str(real_root):
                    notes.append(f"skipped {_shown(sub)}: symlink leads out of the folder")
                    continue
            try:
                st = path.stat()
            except OSError:
                notes.append(f"skipped {_shown(sub)}: broken symlink or unreadable")
                continue
            if stat.S_ISDIR(st.st_mode):
                visit(path, sub)
            elif stat.S_ISREG(st.st_mode):
                files.append((sub, path))
            else:
                notes.append(f"skipped {_shown(sub)}: not a regular file")

    visit(root, "")
    return files


def _shown(rel: str) -> str:
    """A relative path as a note shows it: printable, at most 200 characters."""
    return "".join(c if c.isprintable() else "?" for c in rel[:200])


def _url(host: str, rel: str) -> str:
    """``https://host/`` + the relative path, each segment percent-encoded; a ``?`` in the
    last segment starts the query."""
    segments = rel.split("/")
    last, sep, query = segments[-1].partition("?")
    segments[-1] = last
    path = "/".join(quote(os.fsencode(s), safe=_PCHAR) for s in segments)
    q = f"?{quote(os.fsencode(query), safe=_PCHAR + '/?%')}" if sep else ""
    return f"https://{host}/{path}{q}"


def read_folder(
    folder: Path,
    entry: str | None = None,
    *,
    host: str | None = None,
    follow_symlinks: bool = False,
) -> Capture:
    """Read every file under ``folder``; ``entry`` is the entry page's path relative to the
    folder (in a host-per-directory mirror it starts with the host: ``www.example.com/a.html``);
    default ``index.html`` (in a mirror, the first host directory holding one)."""
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise SpecError(folder, "dir", what)
    if host is not None and not valid_hostname(host.lower()):
        raise SpecError(folder, "host", f"{host!r} is not a valid hostname")
    real_root = Path(os.path.realpath(folder))
    notes: list[str] = []
    files = _walk(folder, real_root, follow_symlinks, notes)
    if not files:
        raise SpecError(folder, "dir", "no files to import")
    top = {rel.split("/", 1)[0] for rel, _ in files}
    per_host = host is None and all("/" in rel for rel, _ in files) and all(map(_is_host_dir, top))

    def url_of(rel: str) -> str:
        if per_host:
            h, _, rest = rel.partition("/")
            return _url(h.lower(), rest)
        return _url((host or DEFAULT_HOST).lower(), rel)

    by_rel = {rel: p for rel, p in files}
    if entry is None:
        candidates = (
            [f"{h}/{i}" for h in sorted(top) for i in INDEX_NAMES] if per_host else INDEX_NAMES
        )
        entry = next((c for c in candidates if c in by_rel), None)
        if entry is None:
            raise SpecError(folder, "entry", "no index.html; name the entry page: dir:FOLDER#PATH")
    entry = entry.strip("/")
    if entry not in by_rel:
        raise SpecError(folder, "entry", f"{entry[:200]!r} is not a file in the folder")

    budget = Budget(folder)
    responses: list[Recorded] = []
    for rel, path in files:
        try:
            with path.open("rb") as fh:
                body = fh.read(budget.remaining_bytes + 1)
        except OSError as exc:
            if rel == entry:
                raise SpecError(folder, rel, f"cannot read: {exc.strerror}") from exc
            notes.append(f"skipped {_shown(rel)}: cannot read ({exc.strerror})")
            continue
        budget.take(len(body), rel)
        name = rel.rsplit("/", 1)[-1]
        recorded = Recorded(
            url=url_of(rel),
            method="GET",
            status=200,
            content_type=content_type_for(name),
            headers=(),
            body=body,
        )
        responses.append(recorded)
        if name in INDEX_NAMES:
            dir_url = recorded.url[: -len(quote(os.fsencode(name), safe=_PCHAR))]
            budget.take(0, rel)
            responses.append(Recorded(dir_url, "GET", 200, recorded.content_type, (), body))
    return finish("dir", folder, responses, None, notes, entry_url=url_of(entry))
