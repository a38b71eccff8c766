"""The origin's quic-go with h2lab's congestion-control hooks (h2lab.servers.quicgo): the
patch applies to the pinned quic-go's lines exactly once, into a copy (never the module
cache), and a quic-go whose lines differ stops the build with one line."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from h2lab.errors import ProcessFailed
from h2lab.servers import quicgo
from h2lab.servers.origin import BUILD_TAGS, SOURCE_DIR, build_argv

ORIGINAL = """func NewCubicSender() *cubicSender {
	return newCubicSender(
		clock,
		reno,
		initialMaxDatagramSize,
		initialCongestionWindow*initialMaxDatagramSize,
	)
}
"""


def _module(root: Path, text: str = ORIGINAL) -> Path:
    """A read-only quic-go as the module cache holds one."""
    module = root / "quic-go@v0.65.0"
    (module / "internal" / "congestion").mkdir(parents=True)
    (module / "internal" / "congestion" / "cubic_sender.go").write_text(text)
    (module / "go.mod").write_text("module github.com/quic-go/quic-go\n")
    for folder, _, files in os.walk(module):
        for f in files:
            os.chmod(Path(folder) / f, stat.S_IRUSR)
        os.chmod(folder, stat.S_IRUSR | stat.S_IXUSR)
    return module


def test_the_shipped_patch_reads() -> None:
    target, old, new = quicgo.read_patch((SOURCE_DIR / "_overlay" / quicgo.PATCH).read_text())
    assert target == "internal/congestion/cubic_sender.go"
    assert "h2labReno(reno)" in new and "h2labReno" not in old
    assert all((SOURCE_DIR / "_overlay" / name).is_file() for name in quicgo.ADDED.values())


def test_the_copy_is_patched_and_the_module_file_replaces_quic_go(tmp_path: Path) -> None:
    module = _module(tmp_path / "cache")
    modfile = quicgo.write_module(module, SOURCE_DIR, tmp_path / "build")
    copy = tmp_path / "build" / "quic-go"
    sender = (copy / "internal" / "congestion" / "cubic_sender.go").read_text()
    assert "h2labReno(reno)," in sender and "h2labWindow(initialCongestionWindow)*" in sender
    assert (copy / "internal" / "congestion" / "h2lab.go").read_text().startswith("// This file")
    assert "func H2labCongestionControl" in (copy / "h2lab.go").read_text()
    assert (module / "internal" / "congestion" / "cubic_sender.go").read_text() == ORIGINAL
    text = modfile.read_text()
    assert text.startswith((SOURCE_DIR / "go.mod").read_text())
    assert text.endswith(f"replace {quicgo.MODULE} => {copy}\n")
    assert (modfile.parent / "go.sum").read_bytes() == (SOURCE_DIR / "go.sum").read_bytes()


def test_another_quic_go_stops_the_build(tmp_path: Path) -> None:
    module = _module(tmp_path / "cache", ORIGINAL.replace("reno,", "true,"))
    with pytest.raises(ProcessFailed) as err:
        quicgo.write_module(module, SOURCE_DIR, tmp_path / "build")
    assert "does not have the lines origin/_overlay/cubic_sender.patch changes" in err.value.line()
    assert not (tmp_path / "build").exists()


@pytest.mark.parametrize("text", ["", "path only\n", "path\nold\n", "path\n----\nnew\n"])
def test_a_malformed_patch_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a patch"):
        quicgo.read_patch(text)


def test_the_build_with_the_copy_has_its_tag_and_module_file(tmp_path: Path) -> None:
    argv = build_argv("go", tmp_path / "bin", "abc", ".", tmp_path / "go.mod")
    assert argv[3:6] == ["-tags", f"{BUILD_TAGS},{quicgo.TAG}", f"-modfile={tmp_path / 'go.mod'}"]
