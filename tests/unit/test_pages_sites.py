"""A page's first party by the Public Suffix List (h2lab.pages.sites), and the ``h3_origins``
levels resolved against a page's origins."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from h2lab.errors import SpecError
from h2lab.pages import sites
from h2lab.pages.gen_common import origin_names
from h2lab.pages.synthetic_spec import parse
from h2lab.spec.factors import BY_NAME

LIST = """// a list in the PSL's format
uk
co.uk
*.ck
!www.ck

// ===BEGIN PRIVATE DOMAINS===
github.io  trailing words are not the rule
公司.cn
"""


@pytest.mark.parametrize(
    ("host", "site"),
    [
        ("www.bbc.co.uk", "bbc.co.uk"),
        ("static.bbc.co.uk", "bbc.co.uk"),
        ("co.uk", "co.uk"),  # a public suffix is its own site
        ("a.b.foo.ck", "b.foo.ck"),  # *.ck: foo.ck is a suffix
        ("www.ck", "www.ck"),  # !www.ck: the suffix is ck
        ("x.www.ck", "www.ck"),
        ("o1.h2lab.test", "h2lab.test"),  # no rule: the last label
        ("o3.third1.test", "third1.test"),
        ("me.github.io", "me.github.io"),  # the private section counts
        ("WWW.Example.COM.", "example.com"),
        ("localhost", "localhost"),
        ("a.xn--55qx5d.cn", "a.xn--55qx5d.cn"),  # 公司.cn, as a host writes it
    ],
)
def test_registrable_domain_follows_the_list(host: str, site: str) -> None:
    assert sites.registrable_domain(host, sites.parse_rules(LIST)) == site


def test_debians_list_tells_a_site_from_its_cdn() -> None:
    psl = sites.rules()
    assert len(psl.plain) > 5000
    assert sites.registrable_domain("news.bbc.co.uk", psl) == "bbc.co.uk"
    assert sites.registrable_domain("ichef.bbci.co.uk", psl) == "bbci.co.uk"
    assert sites.registrable_domain("user.github.io", psl) == "user.github.io"
    origins = ("www.example.com", "img.example.com", "cdn.jsdelivr.net", "example.com")
    assert sites.first_party("www.example.com", origins, psl) == {
        "www.example.com", "img.example.com", "example.com",
    }  # fmt: skip


@given(st.lists(st.from_regex(r"[a-z0-9*!-]{1,8}", fullmatch=True), min_size=1, max_size=5))
def test_any_host_has_a_site_ending_it(labels: list[str]) -> None:
    host = ".".join(labels)
    site = sites.registrable_domain(host, sites.parse_rules(LIST + "\n" + host + "\n"))
    assert host.endswith(site) and site


def test_h3_origins_levels_resolve_against_the_page() -> None:
    origins = origin_names(3, sites=2)
    assert origins == ("o1.h2lab.test", "o2.h2lab.test", "o3.third1.test")
    entry = origins[0]
    assert sites.h3_hosts_of("all", entry, origins) == set(origins)
    assert sites.h3_hosts_of("first-party", entry, origins) == {"o1.h2lab.test", "o2.h2lab.test"}
    assert sites.h3_hosts_of("o3.third1.test+x.test", entry, origins) == {"o3.third1.test"}
    assert sites.h3_hosts_of("x.test", entry, origins) == set()


def test_synthetic_sites_put_the_last_origins_on_third_parties() -> None:
    spec = parse("synthetic:n=6,size=10KB,origins=4,sites=2")
    assert spec.name == "synthetic:n=6,size=10KB,origins=4,sites=2"
    assert parse("synthetic:n=6,origins=4").name == "synthetic:n=6,size=10KB,origins=4"
    assert origin_names(4, 2)[2:] == ("o3.third1.test", "o4.third1.test")
    assert origin_names(3, 3) == ("o1.h2lab.test", "o2.third1.test", "o3.third2.test")
    with pytest.raises(SpecError, match=r"page\.sites: must be 1\.\.origins \(2\), got 3"):
        parse("synthetic:n=6,origins=2,sites=3")


def test_h3_origins_is_keyed_only_off_its_default() -> None:
    f = BY_NAME["h3_origins"]
    assert f.parse("O2.h2lab.test+o1.h2lab.test", "f", "k") == "o1.h2lab.test+o2.h2lab.test"
    assert f.key_part("all") is None and f.key_part("first-party") == "h3o=first-party"
    with pytest.raises(SpecError, match=r"'a\.\.b' is no host name"):
        f.parse("a..b", "f", "k")
    with pytest.raises(SpecError, match="at most 64 host names"):
        f.parse("+".join(f"h{i}.test" for i in range(65)), "f", "k")
