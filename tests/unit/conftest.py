"""Unit tests see no shared installation: the machine's /var/cache/h2lab (``make setup`` as
root publishes its builds there) would answer what a test asks of its own H2LAB_CACHE."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _no_system_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "H2LAB_SYSTEM_CACHE", str(Path(tmp_path_factory.getbasetemp()) / "no-system-cache")
    )
