"""h2lab.clients.browser.chromium.client: the client as the registry gives it. Loading a page
needs a real browser: tests/integration/test_chromium.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from h2lab import clients
from h2lab.clients import LoadContext
from h2lab.errors import SpecError, TrialFailed
from h2lab.pages import Page
from h2lab.pages.synthetic import layout, parse
from h2lab.spec.protocols import H1C, H1S, H2C, H2S, H3


def test_client_spec_errors_are_spec_errors() -> None:
    with pytest.raises(SpecError) as exc:
        clients.get("chromium:device=tablet", "x.toml", "factors.client[0]")
    assert exc.value.field == "factors.client[0]"
    with pytest.raises(SpecError, match="not key=value"):
        clients.get("chromium:mobile", "x.toml", "factors.client[0]")
    with pytest.raises(SpecError, match=r"no option 'cpu' \(h2load takes: clients, per_host\)"):
        clients.get("h2load:cpu=4", "x.toml", "factors.client[0]")
    with pytest.raises(SpecError, match=r"clients: expected an integer 1\.\.100, got '0'"):
        clients.get("h2load:clients=0", "x.toml", "factors.client[0]")
    with pytest.raises(SpecError, match=r"per_host: expected an integer 1\.\.1000, got 'x'"):
        clients.get("h2load:per_host=x", "x.toml", "factors.client[0]")


def test_chromium_protocols_exclude_pipelining_and_cleartext_h2() -> None:
    c = clients.get("chromium")
    assert c.protocols == frozenset({H1C, H1S, H2S, H3})


def test_a_protocol_chromium_cannot_run_fails_before_a_browser_starts(tmp_path: Path) -> None:
    spec = "synthetic:n=2,size=1KB,origins=1"
    origins, resources, _ = layout(parse(spec))
    page = Page(name=spec, origins=origins, resources=resources, docroot=tmp_path, digest="d")
    ctx = LoadContext(netns="h2lab-none", artifacts_dir=tmp_path / "trial", timeout_s=1)
    c = clients.get("chromium")
    with pytest.raises(
        TrialFailed, match=r"^chromium cannot run h2c \(Chromium has no HTTP/1\.1 pipelining"
    ):
        c.load(page, H2C, ctx)
    assert not ctx.artifacts_dir.exists()
    c.close()
