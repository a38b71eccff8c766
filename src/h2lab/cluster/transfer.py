"""What travels between the driver and a lab node besides the messages: pages, by content
digest, and a trial's artifacts, as one compressed archive of bounded size.

A page is sent as its folder (``manifest.json`` and ``bodies/``) and installed on the node
only when its manifest hashes to the id the driver named and every body to its hash: a node
runs exactly the bytes the driver resolved, or refuses the block.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
import zlib
from pathlib import Path

from h2lab.errors import H2LabError, SpecError
from h2lab.pages.importers.common import MAX_PAGE_BYTES, MAX_RESOURCES
from h2lab.pages.manifest import Page, check_bodies, find_page, load_page, pages_root

MAX_ARTIFACTS_BYTES = 64 << 20
"""Most a trial's artifacts may weigh on the wire (before compression); files past it are
left out, largest first, and named in :data:`LEFT_OUT`."""
LEFT_OUT = "artifacts-left-out.txt"


class PageRefused(H2LabError):
    """A page the driver sent does not match its id."""


def pack(folder: Path, cap_bytes: int | None = None) -> bytes:
    """``folder``'s files as a gzip'd tar (paths relative to it). With ``cap_bytes``, the
    largest files are left out until the rest fit, and :data:`LEFT_OUT` lists them."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
    left_out: list[str] = []
    if cap_bytes is not None:
        by_size = sorted(files, key=lambda p: p.stat().st_size, reverse=True)
        total = sum(p.stat().st_size for p in files)
        for p in by_size:
            if total <= cap_bytes:
                break
            total -= p.stat().st_size
            left_out.append(f"{p.relative_to(folder)}\t{p.stat().st_size} bytes")
            files.remove(p)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=6) as tar:
        for p in files:
            tar.add(p, arcname=str(p.relative_to(folder)), recursive=False)
        if left_out:
            note = ("left out: the trial's artifacts passed the cap of "
                    f"{cap_bytes} bytes\n" + "\n".join(left_out) + "\n").encode()  # fmt: skip
            info = tarfile.TarInfo(LEFT_OUT)
            info.size = len(note)
            tar.addfile(info, io.BytesIO(note))
    return buf.getvalue()


MAX_MEMBERS = 2 * MAX_RESOURCES + 16
"""Most files an archive may hold: a page's manifest and bodies, or a trial's artifacts."""
MAX_UNPACKED_BYTES = MAX_PAGE_BYTES + (64 << 20)
"""Most an archive may unpack to: a page's bodies at their cap, and its manifest."""


def unpack(data: bytes, folder: Path) -> None:
    """Extract an archive of :func:`pack` into ``folder``: regular files only, each inside
    it (a member named absolute or with ``..``, a link or a device is an error), at most
    :data:`MAX_MEMBERS` of them and :data:`MAX_UNPACKED_BYTES` in all. By hand, not
    ``extractall(filter="data")``: Debian 12's Python 3.11.2 predates that filter. Whatever
    is wrong is one :class:`H2LabError`."""
    folder.mkdir(parents=True, exist_ok=True)
    root = folder.resolve()
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for n, member in enumerate(tar):
                target = (root / member.name).resolve()
                if not member.isfile() or root not in target.parents:
                    raise H2LabError(
                        f"archive member {member.name[:200]!r} is not a file inside it"
                    )
                total += member.size
                if n >= MAX_MEMBERS or total > MAX_UNPACKED_BYTES:
                    raise H2LabError(
                        f"archive holds more than {MAX_MEMBERS} files or {MAX_UNPACKED_BYTES} bytes"
                    )
                source = tar.extractfile(member)
                assert source is not None
                target.parent.mkdir(parents=True, exist_ok=True)
                with source, target.open("wb") as out:
                    shutil.copyfileobj(source, out)
    except (tarfile.TarError, zlib.error, EOFError) as exc:
        raise H2LabError(f"archive does not unpack: {type(exc).__name__}: {exc}") from None
    except OSError as exc:
        raise H2LabError(f"archive does not unpack into {folder}: {exc.strerror or exc}") from None


def page_archive(page: Page) -> bytes:
    """A page's folder, to send to a node that lacks it."""
    return pack(page.docroot)


def have_page(page_id: str) -> Page | None:
    """The page with this id, when this machine holds it whole."""
    folder = find_page(page_id)
    if folder is None:
        return None
    try:
        page = load_page(folder)
    except SpecError:  # a damaged copy: install_page replaces it
        return None
    return page if page.digest == page_id and not check_bodies(page) else None


def install_page(page_id: str, archive: bytes) -> Page:
    """Install the page the driver sent as ``page_id`` under this machine's pages root, once
    its manifest hashes to ``page_id`` and its bodies to their hashes; else :class:`PageRefused`
    and nothing is left."""
    root = pages_root()
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=root))
    try:
        unpack(archive, tmp)
        page = load_page(tmp)
        problems = check_bodies(page)
        if page.digest != page_id or problems:
            why = problems[0] if problems else f"its manifest hashes to {page.digest}"
            raise PageRefused(f"page {page_id} from the driver refused: {why}")
        target = root / page_id
        if target.exists():
            shutil.rmtree(target)  # a damaged copy (have_page said no)
        os.rename(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return load_page(target)
