"""Pages stay in their room: URLs and file names with ``..``, percent-encoded dots, absolute
paths, NUL bytes, links leading out, names that are not host names. Nothing is written
outside the page store, a stored page holds only its manifest and bodies named by hash, and
the server configurations name no file but those bodies."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from h2lab.errors import SpecError
from h2lab.pages.importers import import_folder, import_har, read_folder
from h2lab.pages.manifest import Page
from h2lab.servers.nginx import _location
from tests.unit.test_pages_import import har_entry, make_site, write_har

TRAVERSALS = (
    "https://a.test/../../../etc/passwd",
    "https://a.test/%2e%2e/%2e%2e/etc/passwd",
    "https://a.test/..%2f..%2fetc%2fpasswd",
    "https://a.test//etc/passwd",
    "https://a.test/x?/../../etc/passwd",
)


def _files(page: Page) -> set[str]:
    return {str(p.relative_to(page.docroot)) for p in page.docroot.rglob("*") if p.is_file()}


def test_traversing_urls_are_stored_as_bodies_by_hash_only(tmp_path: Path) -> None:
    entries = [har_entry("https://a.test/", "<p>home</p>")]
    entries += [har_entry(url, f"body {i}", mime="text/plain") for i, url in enumerate(TRAVERSALS)]
    page = import_har(write_har(tmp_path / "t.har", entries), root=tmp_path / "pages")
    assert len(page.resources) == 1 + len(TRAVERSALS)
    bodies = {f"bodies/{r.body_sha256}" for r in page.resources}
    assert _files(page) == {"manifest.json", *bodies}
    for res in page.resources:
        assert page.body_file(res).resolve().parent == (page.docroot / "bodies").resolve()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pages", "t.har"]
    aliases = [
        line.split()[1].rstrip(";")
        for i, res in enumerate(page.resources)
        for line in _location(i, res, page).splitlines()
        if line.strip().startswith("alias ")
    ]
    assert sorted(aliases) == sorted(str(page.docroot / b) for b in bodies)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("../secret.txt", "is not a file in the folder"),
        ("/etc/passwd", "is not a file in the folder"),
        ("sub/../../secret.txt", "is not a file in the folder"),
        ("index.html\0.png", "is not a file in the folder"),
    ],
)
def test_a_folder_entry_outside_the_folder_is_refused(
    tmp_path: Path, entry: str, message: str
) -> None:
    site = make_site(tmp_path / "site")
    (tmp_path / "secret.txt").write_text("password")
    with pytest.raises(SpecError, match=message):
        read_folder(site, entry)


@pytest.mark.parametrize("host", ["a.test\n", "a test", "..", "a/b", "-a.test", "a.test;x", ""])
def test_a_folder_host_that_is_no_host_name_is_refused(tmp_path: Path, host: str) -> None:
    site = make_site(tmp_path / "site")
    if not host:
        assert read_folder(site, host=None).entry_url.startswith("https://site.h2lab.test/")
        return
    with pytest.raises(SpecError, match="is not a valid hostname"):
        read_folder(site, host=host)


def test_odd_file_names_stay_urls_and_links_out_are_skipped(tmp_path: Path) -> None:
    site = make_site(tmp_path / "site")
    (site / "%2e%2e").write_text("dots")
    (site / "...").write_text("three dots")
    (site / "out").symlink_to("/etc")
    (site / "passwd").symlink_to("/etc/passwd")
    os.symlink(tmp_path, site / "parent")
    page = import_folder(site, root=tmp_path / "pages")
    urls = {r.url() for r in page.resources}
    assert "https://site.h2lab.test/%252e%252e" in urls  # the name, encoded: no traversal
    assert "https://site.h2lab.test/..." in urls
    assert not any("passwd" in u or "/out/" in u or "/parent/" in u for u in urls)
    assert _files(page) <= {"manifest.json", *(f"bodies/{r.body_sha256}" for r in page.resources)}
