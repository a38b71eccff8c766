"""h2lab.cluster.transfer: artifacts and pages as archives, the cap on artifacts, and a node
that installs exactly the page the driver named (or refuses it and keeps nothing)."""

from __future__ import annotations

import gzip
import io
import json
import re
import tarfile
from pathlib import Path

import pytest

from h2lab.cluster.transfer import (
    LEFT_OUT,
    PageRefused,
    have_page,
    install_page,
    pack,
    page_archive,
    unpack,
)
from h2lab.errors import H2LabError
from h2lab.pages.manifest import Page, PageWriter, find_page

# ------------------------------------------------------------------ helpers


def _tree(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


def _files(root: Path) -> dict[str, bytes]:
    """Every regular file below ``root`` by its path relative to it."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def _members(archive: bytes) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        return tar.getnames()


def _hand_made_tar(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    """A gzip'd tar written member by member (names as given, nothing normalised)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return gzip.compress(raw.getvalue())


def _file(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _link(name: str, target: str, kind: bytes) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, None


TREE = {
    "a.txt": b"alpha\n",
    "empty": b"",
    "sub/b.bin": bytes(range(256)) * 4,
    "sub/deeper/c.json": b'{"c": 1}',
}


# ------------------------------------------------------------------ pack / unpack


def test_pack_unpack_round_trip_keeps_every_byte_and_path(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    _tree(src, TREE)
    archive = pack(src)
    assert sorted(_members(archive)) == sorted(TREE)  # relative paths, files only
    assert archive[:2] == b"\x1f\x8b"  # gzip
    unpack(archive, dst)
    assert _files(dst) == TREE


def test_pack_leaves_out_symlinks(tmp_path: Path) -> None:
    src = tmp_path / "src"
    _tree(src, {"real.txt": b"real"})
    (tmp_path / "outside.txt").write_bytes(b"secret")
    (src / "link.txt").symlink_to(tmp_path / "outside.txt")
    assert _members(pack(src)) == ["real.txt"]


def test_pack_under_its_cap_sends_everything_and_no_note(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    _tree(src, TREE)
    total = sum(len(v) for v in TREE.values())
    unpack(pack(src, cap_bytes=total), dst)  # exactly at the cap: fits
    assert _files(dst) == TREE
    assert not (dst / LEFT_OUT).exists()


def test_pack_over_its_cap_leaves_out_the_largest_files_first_and_names_them(
    tmp_path: Path,
) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    files = {
        "big.bin": b"B" * 100,
        "sub/mid.bin": b"M" * 50,
        "small.txt": b"S" * 30,
        "sub/tiny.txt": b"T" * 10,
    }
    _tree(src, files)
    # 190 bytes, cap 60: without big (100) 90 still does not fit, without mid too 40 does
    unpack(pack(src, cap_bytes=60), dst)
    got = _files(dst)
    note = got.pop(LEFT_OUT).decode()
    assert got == {"small.txt": b"S" * 30, "sub/tiny.txt": b"T" * 10}
    assert note == (
        "left out: the trial's artifacts passed the cap of 60 bytes\n"
        "big.bin\t100 bytes\n"
        "sub/mid.bin\t50 bytes\n"
    )


def test_pack_with_a_cap_below_every_file_sends_only_the_note(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    _tree(src, {"x": b"x" * 20, "y": b"y" * 10})
    unpack(pack(src, cap_bytes=5), dst)
    assert sorted(_files(dst)) == [LEFT_OUT]
    assert (dst / LEFT_OUT).read_text().splitlines()[1:] == ["x\t20 bytes", "y\t10 bytes"]


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(_file("../escaped.txt", b"evil"), id="dot-dot"),
        pytest.param(_file("sub/../../escaped.txt", b"evil"), id="dot-dot-inside"),
        pytest.param(_link("escaped.txt", "../outside-target", tarfile.SYMTYPE), id="symlink"),
        pytest.param(_link("hard.txt", "../outside-target", tarfile.LNKTYPE), id="hardlink"),
    ],
)
def test_unpack_refuses_a_member_that_leaves_the_folder_or_is_a_link(
    tmp_path: Path, bad: tuple[tarfile.TarInfo, bytes | None]
) -> None:
    target = tmp_path / "work" / "target"
    archive = _hand_made_tar(_file("ok.txt", b"fine"), bad)
    with pytest.raises(H2LabError) as exc:
        unpack(archive, target)
    assert str(exc.value) == f"archive member {bad[0].name!r} is not a file inside it"
    # nothing outside the target: only the target folder itself below work/
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == [
        Path("work"),
        Path("work/target"),
        Path("work/target/ok.txt"),
    ]
    assert not any(p.is_symlink() for p in target.rglob("*"))


def test_unpack_refuses_an_absolute_member_and_writes_nothing_there(tmp_path: Path) -> None:
    target = tmp_path / "target"
    absolute = tmp_path / "elsewhere" / "abs.txt"
    archive = _hand_made_tar(_file(str(absolute), b"evil"))
    assert _members(archive) == [str(absolute)]  # the name really is absolute
    with pytest.raises(H2LabError, match="is not a file inside it"):
        unpack(archive, target)
    assert not absolute.exists() and not absolute.parent.exists()
    assert list(target.iterdir()) == []


def test_unpack_refuses_a_directory_member(tmp_path: Path) -> None:
    info = tarfile.TarInfo("folder")
    info.type = tarfile.DIRTYPE
    with pytest.raises(H2LabError, match="'folder' is not a file inside it"):
        unpack(_hand_made_tar((info, None)), tmp_path / "target")


# ------------------------------------------------------------------ pages


def _write_page(root: Path) -> Page:
    with PageWriter("transfer-test", root=root) as w:
        w.add("https://a.test/", b"<html>index</html>", content_type="text/html")
        w.add("https://a.test/app.js", b"console.log(1)\n" * 50, content_type="text/javascript")
        w.add("https://b.test/img.bin", bytes(range(256)) * 8, content_type="image/png")
        return w.commit()


def _bodies(page: Page) -> dict[str, bytes]:
    return {r.url(): page.body_file(r).read_bytes() for r in page.resources}


def _archive_with(archive: bytes, change: dict[str, bytes]) -> bytes:
    """``archive`` with the files named in ``change`` replaced."""
    out = io.BytesIO()
    with (
        tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as src,
        tarfile.open(fileobj=out, mode="w:gz") as dst,
    ):
        for m in src.getmembers():
            data = change.get(m.name)
            if data is None:
                f = src.extractfile(m)
                assert f is not None
                data = f.read()
            info = tarfile.TarInfo(m.name)
            info.size = len(data)
            dst.addfile(info, io.BytesIO(data))
    return out.getvalue()


@pytest.fixture
def driver_page(tmp_path: Path) -> Page:
    return _write_page(tmp_path / "driver-pages")


@pytest.fixture
def node_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "node-pages"
    monkeypatch.setenv("H2LAB_PAGES", str(root))
    return root


def _left_in(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


def test_archive_holds_the_manifest_and_the_bodies_only(driver_page: Page) -> None:
    names = sorted(_members(page_archive(driver_page)))
    assert names == sorted(
        ["manifest.json", *{f"bodies/{r.body_sha256}" for r in driver_page.resources}]
    )


def test_installed_page_has_the_drivers_digest_and_bodies(
    driver_page: Page, node_root: Path
) -> None:
    assert have_page(driver_page.digest) is None
    page = install_page(driver_page.digest, page_archive(driver_page))
    assert page.digest == driver_page.digest
    assert page.docroot == node_root / driver_page.digest
    assert page.resources == driver_page.resources
    assert _bodies(page) == _bodies(driver_page)
    assert _left_in(node_root) == [driver_page.digest]  # no .tmp-* left
    found = have_page(driver_page.digest)
    assert found is not None and found.digest == driver_page.digest
    assert found.docroot == node_root / driver_page.digest


def test_install_replaces_a_damaged_copy(driver_page: Page, node_root: Path) -> None:
    page = install_page(driver_page.digest, page_archive(driver_page))
    body = page.body_file(page.resources[1])
    body.write_bytes(b"damaged")
    assert have_page(driver_page.digest) is None
    again = install_page(driver_page.digest, page_archive(driver_page))
    assert _bodies(again) == _bodies(driver_page)
    assert have_page(driver_page.digest) is not None
    assert _left_in(node_root) == [driver_page.digest]


def test_have_page_says_no_to_a_copy_whose_manifest_is_damaged(
    driver_page: Page, node_root: Path
) -> None:
    """A damaged copy is one install_page replaces (its comment: "have_page said no"), a
    truncated manifest included: the node must not fail every block of that page for it."""
    page = install_page(driver_page.digest, page_archive(driver_page))
    manifest = page.docroot / "manifest.json"
    manifest.write_bytes(manifest.read_bytes()[:40])
    assert have_page(driver_page.digest) is None


def _refused(node_root: Path, page_id: str, archive: bytes) -> str:
    with pytest.raises(PageRefused) as exc:
        install_page(page_id, archive)
    assert _left_in(node_root) == []  # no page folder, no .tmp-*
    assert find_page(page_id) is None and have_page(page_id) is None
    return str(exc.value)


def test_a_changed_body_byte_is_refused_and_nothing_kept(
    driver_page: Page, node_root: Path
) -> None:
    res = driver_page.resources[2]
    body = bytearray(driver_page.body_file(res).read_bytes())
    body[100] ^= 0x01
    archive = _archive_with(page_archive(driver_page), {f"bodies/{res.body_sha256}": bytes(body)})
    line = _refused(node_root, driver_page.digest, archive)
    assert line == (
        f"page {driver_page.digest} from the driver refused: "
        "https://b.test/img.bin: body does not match its size or hash"
    )


def test_an_edited_manifest_is_refused_and_nothing_kept(driver_page: Page, node_root: Path) -> None:
    manifest = json.loads((driver_page.docroot / "manifest.json").read_text())
    manifest["resources"][1]["content_type"] = "text/html"  # still valid, another page
    archive = _archive_with(
        page_archive(driver_page), {"manifest.json": json.dumps(manifest).encode()}
    )
    line = _refused(node_root, driver_page.digest, archive)
    m = re.fullmatch(
        rf"page {driver_page.digest} from the driver refused: "
        r"its manifest hashes to ([0-9a-f]{16})",
        line,
    )
    assert m is not None, line
    assert m.group(1) != driver_page.digest


def test_a_page_sent_under_another_id_is_refused(driver_page: Page, node_root: Path) -> None:
    wrong = "0123456789abcdef"
    assert wrong != driver_page.digest
    line = _refused(node_root, wrong, page_archive(driver_page))
    assert line == (
        f"page {wrong} from the driver refused: its manifest hashes to {driver_page.digest}"
    )
    assert not (node_root / driver_page.digest).exists()


def test_an_archive_escaping_the_pages_root_is_refused_and_nothing_kept(
    tmp_path: Path, node_root: Path
) -> None:
    archive = _hand_made_tar(_file("../../escaped.txt", b"evil"))
    with pytest.raises(H2LabError, match="is not a file inside it"):
        install_page("0123456789abcdef", archive)
    assert _left_in(node_root) == []
    assert not (tmp_path / "escaped.txt").exists()
