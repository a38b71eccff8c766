"""``h3_origins`` resolved for one trial: what the browser is told and which origins send
``Alt-Svc`` (h2lab.runner.h3_origins)."""

from __future__ import annotations

from pathlib import Path

import pytest

from h2lab.errors import TrialFailed
from h2lab.pages import Page
from h2lab.pages.manifest import PageWriter
from h2lab.runner.h3_origins import advertised, told
from h2lab.spec.factors import TrialFactors, trial_factors
from h2lab.spec.network import parse_network

HOSTS = ("www.shop.test", "img.shop.test", "cdn.other.test")


@pytest.fixture
def page(tmp_path: Path) -> Page:
    with PageWriter("mixed", root=tmp_path / "pages") as w:
        w.add(f"https://{HOSTS[0]}/", b"<html></html>", content_type="text/html")
        for host in HOSTS[1:]:
            w.add(f"https://{host}/a.css", b"a{}", content_type="text/css")
        return w.commit()


def _factors(**levels: str) -> TrialFactors:
    return trial_factors({"page": "p", "network": parse_network("cable"), **levels})


def test_first_party_is_the_entry_documents_site(page: Page) -> None:
    f = _factors(h3_origins="first-party")
    assert told(page, f, "h3") == frozenset({"www.shop.test", "img.shop.test"})
    assert told(page, f, "h2s") is None  # a TCP trial of the block: every origin as it is
    assert told(page, _factors(), "h3") is None
    assert advertised(page, f) == frozenset()  # forced: no server sends Alt-Svc
    learnt = _factors(h3_origins="first-party", discovery="alt-svc")
    assert advertised(page, learnt) == {"www.shop.test", "img.shop.test"}
    assert advertised(page, _factors(discovery="udp-blocked")) == set(HOSTS)


def test_a_list_naming_none_of_the_pages_origins_fails_the_trial(page: Page) -> None:
    f = _factors(h3_origins="cdn.other.test")
    assert told(page, f, "h3") == frozenset({"cdn.other.test"})
    with pytest.raises(TrialFailed, match=r"h3_origins x\.test names none of the page's origins"):
        told(page, _factors(h3_origins="x.test"), "h3")
    assert advertised(page, _factors(h3_origins="x.test", discovery="alt-svc")) == frozenset()
