"""Every server offers one TLS version over TCP, the trial's ``tls`` factor
(:attr:`ServeContext.tls_version`): its config names that version and nothing else in it
depends on the version. tests/integration/test_tls_versions.py checks the servers honour it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from h2lab.pages import Page
from h2lab.pages.synthetic import layout, parse
from h2lab.servers import ServeContext, apache, h2o, haproxy, nginx, origin
from h2lab.tls import LocalCA


@pytest.fixture
def page() -> Page:
    """Two origins, nothing written: the configs name the bodies' paths only."""
    origins, resources, _ = layout(parse("synthetic:n=2,size=1KB,origins=2"))
    return Page("tls", origins, resources, docroot=Path("/nowhere"), digest="d")


def _ctx(tmp_path: Path, page: Page, tls_version: str) -> ServeContext:
    ips = {h: f"10.2.0.{k}" for k, h in enumerate(page.origins, start=1)}
    return ServeContext("h2lab-x-servers", ips, tmp_path / "srv", tmp_path / "tls", tls_version)


def _both(
    tmp_path: Path, page: Page, render: Callable[[ServeContext, LocalCA], str]
) -> tuple[str, str]:
    """A server's config for TLS 1.2 and for TLS 1.3, by ``render(ctx, ca)``."""
    ca = LocalCA(tmp_path / "tls")
    return render(_ctx(tmp_path, page, "1.2"), ca), render(_ctx(tmp_path, page, "1.3"), ca)


def _only_difference(a: str, b: str) -> list[tuple[str, str]]:
    """The lines that differ between two configs of the same length in lines."""
    la, lb = a.splitlines(), b.splitlines()
    assert len(la) == len(lb)
    return [(x, y) for x, y in zip(la, lb, strict=True) if x != y]


def test_context_offers_tls_1_3_unless_told() -> None:
    ctx = ServeContext("ns", {}, Path("s"), Path("t"))
    assert (ctx.tls_version, ctx.tls_protocol) == ("1.3", "TLSv1.3")
    assert ServeContext("ns", {}, Path("s"), Path("t"), "1.2").tls_protocol == "TLSv1.2"


@pytest.mark.parametrize("version", ["1.1", "1.0", "TLSv1.2", "", "3"])
def test_context_rejects_other_tls_versions(version: str) -> None:
    with pytest.raises(ValueError, match=f"tls_version {version!r}: expected one of 1.2, 1.3"):
        ServeContext("ns", {}, Path("s"), Path("t"), version)


def test_nginx_offers_only_the_trials_version(page: Page, tmp_path: Path) -> None:
    tls12, tls13 = _both(tmp_path, page, lambda ctx, ca: nginx.render_config(page, ctx, ca))
    assert _only_difference(tls12, tls13) == [
        (
            "    ssl_protocols TLSv1.2;  # the trial's one version",
            "    ssl_protocols TLSv1.3;  # the trial's one version",
        )
    ]
    assert "ssl_ciphers" not in tls12  # nginx's default has ECDHE-ECDSA-AES128-GCM


def test_h2o_offers_only_the_trials_version(page: Page, tmp_path: Path) -> None:
    tls12, tls13 = _both(tmp_path, page, lambda ctx, ca: h2o.render_config(page, ctx, ca, "t"))
    # the lowest version in H2O's config, one per origin's TLS listener ...
    assert _only_difference(tls12, tls13) == [
        ("        minimum-version: TLSv1.2", "        minimum-version: TLSv1.3")
    ] * len(page.origins)
    # ... and the highest in OpenSSL's, which H2O 2.2's maximum-version cannot stop
    assert _only_difference(h2o.openssl_conf("TLSv1.2"), h2o.openssl_conf("TLSv1.3")) == [
        ("MaxProtocol = TLSv1.2", "MaxProtocol = TLSv1.3")
    ]
    assert "maximum-version" not in tls12 and "cipher-suite" not in tls12
    assert "NumTickets = 0" in h2o.openssl_conf("TLSv1.3")


def test_apache_offers_only_the_trials_version(page: Page, tmp_path: Path) -> None:
    tls12, tls13 = _both(tmp_path, page, lambda ctx, ca: apache.render_config(page, ctx, ca, "t"))
    assert _only_difference(tls12, tls13) == [
        ("SSLProtocol -all +TLSv1.2", "SSLProtocol -all +TLSv1.3")
    ]
    assert "SSLCipherSuite" not in tls12


def test_origin_takes_the_version_as_a_flag_and_keeps_its_config(
    page: Page, tmp_path: Path
) -> None:
    opts = origin.OriginOptions()
    tls12, tls13 = _both(
        tmp_path, page, lambda ctx, ca: json.dumps(origin.render_config(page, ctx, ca, opts))
    )
    assert tls12 == tls13
    binary, conf = Path("/c/h2lab-origin"), Path("/s/origin.json")
    assert origin.serve_argv(binary, conf, "1.2") == [
        "/c/h2lab-origin", "-config", "/s/origin.json", "-tls", "1.2",
    ]  # fmt: skip
    assert origin.serve_argv(binary, conf, "1.3")[-2:] == ["-tls", "1.3"]


def test_haproxy_terminates_no_tls() -> None:
    """``mode tcp``, no ``ssl`` bind: the version is the backend's, which serves with the
    trial's context (tests/integration/test_tls_versions.py, haproxy in front of origin)."""
    conf = haproxy.render_config(
        {"o1.test": "10.2.0.1"}, {"o1.test": "127.100.0.1"}, haproxy.Tuning.for_buffer(4096), "/p"
    )
    assert "mode tcp" in conf and "ssl" not in conf
