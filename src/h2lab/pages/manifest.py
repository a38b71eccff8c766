"""The page manifest: origins, resources (status, headers that matter, body), and the entry URL.

A page lives in its own folder, ``<cache>/pages/<id>/``: ``manifest.json`` (format
:data:`FORMAT`, documented in docs/pages.md) and ``bodies/<sha256>``, one file per distinct
body. The page id is a hash of the manifest's content (every URL, method, status, header kept,
body hash and delay, and the entry URL; not the name), so an experiment that names a page gets
exactly the same bytes again, and importing the same input twice gives the same id.

Pages are written by :class:`PageWriter` into a temporary folder that is renamed into place only
when complete: a failed import or generation leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from h2lab.errors import SpecError
from h2lab.pages import confine, synthetic_spec
from h2lab.pages.closest import closest
from h2lab.pages.request_body import RequestBody, best
from h2lab.paths import cache_root
from h2lab.spec.factors import IMPORT_KINDS, JOURNEY
from h2lab.spec.journey import load_journey

FORMAT = "h2lab-page/1"

KEPT_HEADERS = frozenset(
    {
        "cache-control",
        "expires",
        "etag",
        "location",
        "link",
        "vary",
        "access-control-allow-origin",
        "access-control-allow-credentials",
        "access-control-allow-headers",
        "access-control-allow-methods",
        "access-control-expose-headers",
        "timing-allow-origin",
        "content-language",
        "content-disposition",
        "x-content-type-options",
    }
)
"""Response headers a replay keeps, besides ``content-type`` (a field of its own). Dropped:
hop-by-hop headers (RFC 9110 §7.6.1: connection, keep-alive, transfer-encoding, ...), the
body's encoding and length (bodies are stored decoded; the server frames them), cookies, and
headers that would make the browser leave the lab or change protocol on its own:
``alt-svc`` (would try HTTP/3), ``strict-transport-security`` (would turn h1c into https),
``content-security-policy`` (``upgrade-insecure-requests`` does the same), reporting headers."""

REPLAYED_HEADERS = KEPT_HEADERS | {"set-cookie"}
"""Headers a stored page may hold: those kept from captures, and ``Set-Cookie`` in the pages
of journeys' sites, which are written to keep it (``PageWriter(cookies=True)``): a cookie set
in a replay changes every later request's header bytes, which seed 000's Table 2 measures, so
captures of single pages drop it."""

PAGE_ID_LEN = 16
MAX_MANIFEST_BYTES = 64 << 20
"""Largest manifest read (10,000 resources with long URLs and headers are a few MB)."""
MAX_MANIFEST_RESOURCES = 20_000
"""Most resources a manifest may list: twice what an importer or generator writes."""
_ID_RE = re.compile(r"^[0-9a-f]{16}\Z")


@dataclass(frozen=True)
class Resource:
    """One response the origins serve, matched by method + URL."""

    origin: str
    """hostname of the origin serving it"""
    path: str
    """URL path, starting with ``/`` (without the query)"""
    size_bytes: int
    """body size (decoded)"""
    content_type: str
    query: str = ""
    """query string without the ``?``; empty if none"""
    method: str = "GET"
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    """response headers kept for replay (lower-case names, see :data:`KEPT_HEADERS`)"""
    body_sha256: str | None = None
    """hex digest of the body in the page's ``bodies/``; None for hand-made test pages, whose
    body sits at ``<folder>/<origin>/<path>``"""
    delay_ms: float = 0.0
    """server think time before the response (servers that support it)"""
    request: RequestBody | None = None
    """what the recorded request sent, as digests (a POST's: :mod:`h2lab.pages.request_body`);
    None: no body"""

    @property
    def target(self) -> str:
        """Request target: path and query."""
        return f"{self.path}?{self.query}" if self.query else self.path

    def url(self, scheme: str = "https", port: int | None = None) -> str:
        host = self.origin if port is None else f"{self.origin}:{port}"
        return f"{scheme}://{host}{self.target}"

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k == name), None)


@dataclass(frozen=True)
class Page:
    """A set of resources over one or more origins, with its entry document."""

    name: str
    origins: tuple[str, ...]
    resources: tuple[Resource, ...]
    docroot: Path
    """the page's folder (``manifest.json``, ``bodies/``)"""
    digest: str
    """the page id"""
    entry_index: int = 0
    """index in ``resources`` of the entry document"""
    schemes: Mapping[str, str] = field(default_factory=dict)
    """origin -> scheme it was recorded with (informational: the trial's protocol decides)"""
    source: str = ""
    """where the page came from (generator spec, imported file)"""

    @property
    def entry(self) -> Resource:
        return self.resources[self.entry_index]

    @property
    def total_body_bytes(self) -> int:
        return sum(r.size_bytes for r in self.resources)

    def resources_of(self, origin: str) -> list[Resource]:
        return [r for r in self.resources if r.origin == origin]

    def match(self, method: str, url: str, body: RequestBody | None = None) -> Resource | None:
        """The resource a replaying server answers ``method url`` with (docs/pages.md): same
        method, host and target (of several, a POST's by its ``body``:
        :func:`h2lab.pages.request_body.best`); else, of those with the same method, host and
        path, the one whose query is closest (:mod:`h2lab.pages.closest`); else the first with
        the same host and path; else None."""
        return self.match_how(method, url, body)[0]

    def match_how(
        self, method: str, url: str, body: RequestBody | None = None
    ) -> tuple[Resource | None, str]:
        """:meth:`match` and how it matched: ``"exact"``, ``"query"`` (the closest of several
        recorded queries), ``"path"`` (the only one recorded for that method, host and path, or
        the first for that host and path) or ``""`` (no match)."""
        parts = urlsplit(url)
        host, path = (parts.hostname or "").lower(), parts.path or "/"
        exact = [
            r
            for r in self.resources
            if (r.method, r.origin, r.path, r.query) == (method, host, path, parts.query)
        ]
        if exact:
            pick = best([r.request for r in exact], body) if body is not None else 0
            return exact[pick], "exact"
        same = [r for r in self.resources if (r.method, r.origin, r.path) == (method, host, path)]
        if len(same) > 1:
            return same[closest([r.query for r in same], parts.query)], "query"
        by_path = (r for r in self.resources if (r.origin, r.path) == (host, path))
        found = same[0] if same else next(by_path, None)
        return found, "path" if found else ""

    def body_file(self, res: Resource) -> Path:
        """The file of ``res``'s body, inside the page's folder; a resource without a body
        (no ``body_sha256``, :func:`~h2lab.pages.confine.check_body`) reads as empty."""
        if res.body_sha256 is None:
            return Path(os.devnull)
        return self.docroot / "bodies" / res.body_sha256

    def manifest_json(self) -> str:
        return json.dumps(_manifest(self.name, self.source, self.entry, self), indent=1)


def _resource_json(r: Resource) -> dict[str, Any]:
    d: dict[str, Any] = {
        "url": r.url(),
        "method": r.method,
        "status": r.status,
        "content_type": r.content_type,
        "size_bytes": r.size_bytes,
        "body_sha256": r.body_sha256,
    }
    if r.headers:
        d["headers"] = [list(h) for h in r.headers]
    if r.delay_ms:
        d["delay_ms"] = r.delay_ms
    if r.request is not None:
        d["request"] = {"sha256": r.request.sha256, "fields": [list(f) for f in r.request.fields]}
    return d


def _content(
    entry: Resource, origins: Iterable[tuple[str, str]], resources: Iterable[Resource]
) -> dict[str, Any]:
    """What the page id hashes."""
    return {
        "entry": entry.url(),
        "origins": [{"host": h, "scheme": s} for h, s in origins],
        "resources": [_resource_json(r) for r in resources],
    }


def _manifest(name: str, source: str, entry: Resource, page: Page) -> dict[str, Any]:
    origins = [(h, page.schemes.get(h, "https")) for h in page.origins]
    return {
        "format": FORMAT,
        "id": page.digest,
        "name": name,
        "source": source,
        **_content(entry, origins, page.resources),
    }


def page_id(content: Mapping[str, Any]) -> str:
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:PAGE_ID_LEN]


def pages_root() -> Path:
    """Where pages are stored: ``H2LAB_PAGES``, else ``pages/`` of the cache root."""
    env = os.environ.get("H2LAB_PAGES")
    return Path(env) if env else cache_root() / "pages"


class PageWriter:
    """Collects a page's resources and bodies, then writes it under :func:`pages_root` as one
    atomic rename. Use as a context manager: leaving it by an exception removes every file."""

    def __init__(
        self, name: str, source: str = "", root: Path | None = None, *, cookies: bool = False
    ) -> None:
        self.name = name
        self.source = source
        self.root = root or pages_root()
        self.kept = REPLAYED_HEADERS if cookies else KEPT_HEADERS
        """response headers kept: ``Set-Cookie`` too for a journey's site (``cookies``)"""
        self._tmp: Path | None = None
        self._resources: list[Resource] = []
        self._schemes: dict[str, str] = {}
        self._keys: set[tuple[str, str, str, str, str]] = set()

    def __enter__(self) -> PageWriter:
        self.root.mkdir(parents=True, exist_ok=True)
        self._tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=self.root))
        (self._tmp / "bodies").mkdir()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def add(
        self,
        url: str,
        body: bytes | None,
        *,
        content_type: str,
        status: int = 200,
        method: str = "GET",
        headers: Iterable[tuple[str, str]] = (),
        delay_ms: float = 0.0,
        request: RequestBody | None = None,
    ) -> Resource | None:
        """Add one response; ``url`` is absolute (``https://host/path?query``). A second
        response for the same method + URL (and, for a request with a body, the same body:
        ``request``) is ignored (the first recorded wins) and None returned."""
        assert self._tmp is not None, "use PageWriter as a context manager"
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        if not host or parts.scheme not in {"http", "https"}:
            raise ValueError(f"not an absolute http(s) URL: {url!r}")
        key = (method, host, parts.path or "/", parts.query, request.sha256 if request else "")
        if key in self._keys:
            return None
        self._keys.add(key)
        self._schemes.setdefault(host, parts.scheme)
        sha = None
        if body is not None:
            sha = hashlib.sha256(body).hexdigest()
            target = self._tmp / "bodies" / sha
            if not target.exists():
                target.write_bytes(body)
        kept = tuple((k.lower(), v) for k, v in headers if k.lower() in self.kept and "\n" not in v)
        res = Resource(
            origin=host,
            path=parts.path or "/",
            query=parts.query,
            size_bytes=0 if body is None else len(body),
            content_type=content_type,
            method=method,
            status=status,
            headers=kept,
            body_sha256=sha,
            delay_ms=delay_ms,
            request=request,
        )
        self._resources.append(res)
        return res

    @property
    def resources(self) -> tuple[Resource, ...]:
        return tuple(self._resources)

    def commit(self, entry_url: str | None = None) -> Page:
        """Write the manifest and move the page into place (a no-op if that id exists).
        The entry is ``entry_url`` or the first resource added."""
        assert self._tmp is not None, "use PageWriter as a context manager"
        if not self._resources:
            raise ValueError("page has no resources")
        entry_index = 0
        if entry_url is not None:
            found = [i for i, r in enumerate(self._resources) if r.url() == _https(entry_url)]
            if not found:
                raise ValueError(f"entry URL {entry_url!r} is not among the page's resources")
            entry_index = found[0]
        origins = tuple(dict.fromkeys(r.origin for r in self._resources))
        resources = tuple(self._resources)
        content = _content(
            resources[entry_index], [(h, self._schemes[h]) for h in origins], resources
        )
        pid = page_id(content)
        page = Page(
            name=self.name,
            origins=origins,
            resources=resources,
            docroot=self.root / pid,
            digest=pid,
            entry_index=entry_index,
            schemes=dict(self._schemes),
            source=self.source,
        )
        (self._tmp / "manifest.json").write_text(page.manifest_json() + "\n")
        if page.docroot.exists() and (
            not (page.docroot / "manifest.json").is_file() or check_bodies(page)
        ):
            shutil.rmtree(page.docroot)  # a damaged copy of this page: replace it
        if page.docroot.exists():
            shutil.rmtree(self._tmp, ignore_errors=True)
        else:
            os.rename(self._tmp, page.docroot)
        self._tmp = None
        set_alias(self.root, self.name, pid)
        return page


def _https(url: str) -> str:
    return re.sub(r"^http://", "https://", url)


_ALIAS_RE = re.compile(r"[^A-Za-z0-9._-]+")


def alias_file(root: Path, name: str) -> Path:
    return root / "names" / (_ALIAS_RE.sub("_", name).strip("_")[:200] or "_")


def set_alias(root: Path, name: str, pid: str) -> None:
    """``names/<name>`` holds the id of the page last written under that name."""
    f = alias_file(root, name)
    f.parent.mkdir(parents=True, exist_ok=True)
    tmp = f.with_suffix(".tmp")
    tmp.write_text(pid + "\n")
    os.replace(tmp, f)


def _need(
    obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], at: str, where: str
) -> Any:
    """``obj[key]`` when it is of ``kind``, else a SpecError naming ``where`` and the field."""
    value = obj.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise SpecError(where, f"{at}.{key}" if at else key, "missing or of the wrong type")
    return value


def _read_manifest(mf: Path, source: str) -> dict[str, Any]:
    where = str(mf)
    try:
        with mf.open("rb") as fh:
            text = fh.read(MAX_MANIFEST_BYTES + 1)
        if len(text) > MAX_MANIFEST_BYTES:
            raise SpecError(where, "manifest", f"larger than {MAX_MANIFEST_BYTES} bytes")
        data = json.loads(text)
    except OSError as exc:
        raise SpecError(source, "page", f"cannot read {mf}: {exc.strerror}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise SpecError(where, "manifest", f"not JSON: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SpecError(where, "format", f"expected {FORMAT!r}")
    return data


def _origin_schemes(data: Mapping[str, Any], where: str) -> dict[str, str]:
    schemes: dict[str, str] = {}
    for i, o in enumerate(_need(data, "origins", list, "", where)):
        if not isinstance(o, dict):
            raise SpecError(where, f"origins[{i}]", "expected an object")
        host = _need(o, "host", str, f"origins[{i}]", where).lower()
        schemes[host] = _need(o, "scheme", str, f"origins[{i}]", where)
        confine.check_origin(host, schemes[host], where, f"origins[{i}]")
    return schemes


def _headers_ok(headers: object) -> bool:
    return isinstance(headers, list) and all(
        isinstance(h, list) and len(h) == 2 and all(isinstance(x, str) for x in h) for h in headers
    )


def _resource(r: object, at: str, schemes: Mapping[str, str], where: str) -> Resource:
    """One ``resources[i]`` entry of a manifest, checked."""
    if not isinstance(r, dict):
        raise SpecError(where, at, "expected an object")
    url = _need(r, "url", str, at, where)
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
    except ValueError as exc:  # "Invalid IPv6 URL" and the like
        raise SpecError(where, f"{at}.url", f"not a URL: {exc}") from exc
    if host not in schemes:
        raise SpecError(where, f"{at}.url", f"host {host!r} is not among the origins")
    sha = r.get("body_sha256")
    if sha is not None and not (isinstance(sha, str) and re.fullmatch(r"[0-9a-f]{64}", sha)):
        raise SpecError(where, f"{at}.body_sha256", "expected 64 hex digits or null")
    status = _need(r, "status", int, at, where)
    if not 100 <= status <= 599:
        raise SpecError(where, f"{at}.status", f"not an HTTP status: {status}")
    headers = r.get("headers", [])
    if not _headers_ok(headers):
        raise SpecError(where, f"{at}.headers", "expected a list of [name, value] pairs")
    delay = r.get("delay_ms", 0)
    if not isinstance(delay, int | float) or not 0 <= delay < 3_600_000:
        raise SpecError(where, f"{at}.delay_ms", "expected a number of ms, 0 to an hour")
    size = _need(r, "size_bytes", int, at, where)
    if size < 0:
        raise SpecError(where, f"{at}.size_bytes", "must be >= 0")
    confine.check_body(sha, size, where, at)
    confine.check_headers(headers, REPLAYED_HEADERS, where, at)
    method = _need(r, "method", str, at, where)
    confine.check_request(method, parts.path or "/", parts.query, where, at)
    content_type = _need(r, "content_type", str, at, where)
    return Resource(
        origin=host,
        path=parts.path or "/",
        query=parts.query,
        size_bytes=size,
        content_type=confine.check_text(content_type, where, f"{at}.content_type"),
        method=method,
        status=status,
        headers=tuple((k, v) for k, v in headers),
        body_sha256=sha,
        delay_ms=float(delay),
        request=_request(r.get("request"), at, where),
    )


def _request(value: object, at: str, where: str) -> RequestBody | None:
    """A resource's ``request`` (digests of what its request sent), checked."""
    if value is None:
        return None
    sha = value.get("sha256") if isinstance(value, dict) else None
    fields = value.get("fields", []) if isinstance(value, dict) else None
    if not (isinstance(sha, str) and re.fullmatch(r"[0-9a-f]{64}", sha)) or not _headers_ok(fields):
        raise SpecError(where, f"{at}.request", "expected {sha256: 64 hex, fields: [[n, v]]}")
    assert isinstance(fields, list)
    return RequestBody(sha, tuple((str(k)[:200], str(v)[:64]) for k, v in fields[:200]))


def load_page(folder: Path, source: str = "page") -> Page:
    """Read and validate ``folder/manifest.json``; any defect is a SpecError naming the file
    and the field."""
    mf = folder / "manifest.json"
    where = str(mf)
    data = _read_manifest(mf, source)
    schemes = _origin_schemes(data, where)
    listed = _need(data, "resources", list, "", where)
    if len(listed) > MAX_MANIFEST_RESOURCES:
        raise SpecError(where, "resources", f"more than {MAX_MANIFEST_RESOURCES}")
    resources = [_resource(r, f"resources[{i}]", schemes, where) for i, r in enumerate(listed)]
    if not resources:
        raise SpecError(where, "resources", "page has no resources")
    entry = _need(data, "entry", str, "", where)
    found = [i for i, r in enumerate(resources) if r.url() == _https(entry)]
    if not found:
        raise SpecError(where, "entry", f"{entry!r} is not among the resources")
    pid = page_id(
        _content(resources[found[0]], schemes.items(), resources)  # what commit() hashed
    )
    return Page(
        name=str(data.get("name", folder.name)),
        origins=tuple(schemes),
        resources=tuple(resources),
        docroot=folder,
        digest=pid,
        entry_index=found[0],
        schemes=schemes,
        source=str(data.get("source", "")),
    )


def check_bodies(page: Page) -> list[str]:
    """Problems with the bodies on disk: missing files, wrong sizes or hashes."""
    problems = []
    for r in page.resources:
        if r.body_sha256 is None:
            continue
        f = page.body_file(r)
        try:
            data = f.read_bytes()
        except OSError:
            problems.append(f"{r.url()}: body {r.body_sha256[:12]}… missing")
            continue
        if len(data) != r.size_bytes or hashlib.sha256(data).hexdigest() != r.body_sha256:
            problems.append(f"{r.url()}: body does not match its size or hash")
    return problems


def find_page(name_or_id: str, root: Path | None = None) -> Path | None:
    """The folder of a stored page, by id or by the name it was written under."""
    root = root or pages_root()
    if _ID_RE.match(name_or_id) and (root / name_or_id / "manifest.json").exists():
        return root / name_or_id
    alias = alias_file(root, name_or_id)
    if alias.exists():
        folder = root / alias.read_text().strip()
        if (folder / "manifest.json").exists():
            return folder
    return None


def check_page_spec(spec: str, source: str = "page", field: str = "page") -> None:
    """Validate a page spec without generating or importing anything (``h2lab validate``); a
    journey's file is read and its page checked in turn."""
    if spec.startswith(f"{JOURNEY}:"):
        journey = load_journey(Path(spec.removeprefix(f"{JOURNEY}:")))
        if journey.page.startswith(f"{JOURNEY}:"):
            raise SpecError(journey.path, "page", "a journey's page cannot be another journey")
        check_page_spec(journey.page, str(journey.path), "page")
        return
    if spec.startswith("synthetic:"):
        synthetic_spec.parse(spec, source, field)
        return
    kind, _, rest = spec.partition(":")
    if kind in IMPORT_KINDS:
        path = Path(rest.split("#", 1)[0])
        if not (path.is_dir() if kind == "dir" else path.is_file()):
            what = "folder" if kind == "dir" else "file"
            raise SpecError(source, field, f"{spec!r}: no such {what} {str(path)!r}")
        return
    if find_page(spec) is None and not Path(spec, "manifest.json").is_file():
        raise SpecError(
            source,
            field,
            f"unknown page {spec!r} (use synthetic:..., warc:FILE, har:FILE, dir:FOLDER#ENTRY, "
            "a page id or name from `h2lab pages list`, or a folder with a manifest.json)",
        )
