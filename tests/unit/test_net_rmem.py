"""Where Rattan's packet sockets get their receive buffer (net/rmem.py): through the host's
net.core.rmem_default while Rattan starts, or after it started when this process cannot write
rmem_default (a user namespace; a container's network namespace or read-only /proc/sys)."""

from __future__ import annotations

from pathlib import Path

import pytest

from h2lab.net import rmem


def test_a_writable_rmem_default_is_raised_around_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sysctl = tmp_path / "rmem_default"
    sysctl.write_text("212992\n")
    monkeypatch.setattr(rmem, "RMEM_DEFAULT", sysctl)
    assert rmem.raised_after_start(rootless=False) is False
    assert rmem.raised_after_start(rootless=True) is True


def test_an_rmem_default_this_process_cannot_write_means_after_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # access(W_OK) is false for a path that cannot be opened for writing: here a missing one,
    # in a container the read-only sysctl (mode 0444 outside the host's network namespace)
    monkeypatch.setattr(rmem, "RMEM_DEFAULT", tmp_path / "absent" / "rmem_default")
    assert rmem.raised_after_start(rootless=False) is True
