"""h2lab.clients.browser.chromium.options: the client's options and the browser's launch flags."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from h2lab.clients.browser.chromium.options import (
    PROTOCOLS,
    Options,
    launch_flags,
)
from h2lab.clients.browser.load import page_url
from h2lab.pages import Page
from h2lab.pages.synthetic import layout, parse
from h2lab.spec import options
from h2lab.spec.protocols import H1C, H1S, H2S, H3

HOSTS = {"o2.h2lab.test": "10.2.0.2", "o1.h2lab.test": "10.2.0.1"}


def parse_options(raw: dict[str, str]) -> Options:
    """What the registry makes of ``raw`` (:func:`h2lab.spec.options.parse`)."""
    return options.parse(Options, raw, "chromium")


def test_options_default_and_parsed() -> None:
    assert parse_options({}) == Options()
    got = parse_options({"device": "mobile", "cpu": "4", "filmstrip": "1"})
    assert got == Options(device="mobile", cpu_slowdown=4.0, filmstrip=True)


BAD_OPTIONS = [
    ({"device": "tablet"}, "device: expected one of desktop, mobile, got 'tablet'"),
    ({"cpu": "fast"}, "cpu: expected a number 1..20, got 'fast'"),
    ({"cpu": "0.5"}, "cpu: expected a number 1..20, got '0.5'"),
    ({"netlog": "yes"}, "netlog: expected 0 or 1, got 'yes'"),
    (
        {"gpu": "1"},
        "no option 'gpu' (chromium takes: device, idle, speed_index, filmstrip, cores, cpu, "
        "netlog, keylog, restart, har_bodies, tbt)",
    ),
    ({"speed_index": "lighthouse"}, "speed_index: expected one of h2lab, wpt, got 'lighthouse'"),
]
"""Options and the whole line each one's error says."""


@pytest.mark.parametrize(("raw", "message"), BAD_OPTIONS)
def test_bad_options_name_the_option(raw: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        parse_options(raw)


def test_speed_index_mode_defaults_to_h2labs() -> None:
    assert parse_options({}).speed_index == "h2lab"
    assert parse_options({"speed_index": "wpt"}).speed_index == "wpt"


def test_tbt_is_on_unless_turned_off() -> None:
    assert parse_options({}).tbt and not parse_options({"tbt": "0"}).tbt


def test_idle_option_parses_a_duration() -> None:
    assert parse_options({"idle": "2s"}).idle_ms == 2000
    assert parse_options({}).idle_ms == 0
    with pytest.raises(ValueError, match="idle: expected 0 or a duration like 2s"):
        parse_options({"idle": "soon"})
    with pytest.raises(ValueError, match=r"0\.\.30s"):
        parse_options({"idle": "31s"})


def test_protocols_exclude_pipelining_and_cleartext_h2() -> None:
    assert frozenset({H1C, H1S, H2S, H3}) == PROTOCOLS


def test_h3_forces_quic_for_every_lab_origin() -> None:
    h3 = launch_flags(H3, HOSTS, "AAAA=")
    assert "--disable-quic" not in h3 and "--enable-quic" in h3
    assert "--origin-to-force-quic-on=o1.h2lab.test:443,o2.h2lab.test:443" in h3
    assert "--disable-quic" in launch_flags(H2S, HOSTS, None)


def test_alt_svc_discovery_leaves_chromium_to_learn_h3() -> None:
    h3 = launch_flags(H3, HOSTS, "AAAA=", "alt-svc")
    assert "--enable-quic" in h3 and "--disable-quic" not in h3
    # no page origin forced; the lab's hosts on a port nothing serves, so that Chromium takes
    # the lab CA over QUIC for them once it has learnt h3
    assert "--origin-to-force-quic-on=o1.h2lab.test:9,o2.h2lab.test:9" in h3
    assert launch_flags(H2S, HOSTS, None, "alt-svc") == launch_flags(H2S, HOSTS, None)


def test_https_rr_leaves_the_lab_names_to_chromiums_own_resolver() -> None:
    """Both protocols of an https-rr cell: no lab name mapped (Chromium asks the lab's DNS
    server, A and HTTPS), every other name still "not found" at once; over h3 nothing forced,
    the lab CA taken over QUIC (the port-9 list, as with alt-svc)."""
    for protocol in (H2S, H3):
        flags = launch_flags(protocol, HOSTS, "AAAA=", "https-rr")
        rules = next(f for f in flags if f.startswith("--host-resolver-rules="))
        assert rules == (
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE o1.h2lab.test, EXCLUDE o2.h2lab.test"
        )
    h3 = launch_flags(H3, HOSTS, "AAAA=", "https-rr")
    assert "--origin-to-force-quic-on=o1.h2lab.test:9,o2.h2lab.test:9" in h3
    assert "--disable-quic" in launch_flags(H2S, HOSTS, "AAAA=", "https-rr")


def test_h3_origins_forces_quic_for_those_only() -> None:
    """h3_origins: the origins that speak h3 forced, the others on the port nothing serves
    (reached over TCP, the lab CA still taken should Chromium try QUIC)."""
    first = frozenset({"o1.h2lab.test"})
    h3 = launch_flags(H3, HOSTS, "AAAA=", "forced", first)
    assert "--origin-to-force-quic-on=o1.h2lab.test:443,o2.h2lab.test:9" in h3
    learnt = launch_flags(H3, HOSTS, "AAAA=", "alt-svc", first)
    assert learnt == launch_flags(H3, HOSTS, "AAAA=", "alt-svc")  # the servers' headers decide
    assert launch_flags(H3, HOSTS, "AAAA=", "forced", frozenset(HOSTS)) == launch_flags(
        H3, HOSTS, "AAAA="
    )


def test_launch_flags_per_protocol() -> None:
    h2 = launch_flags(H2S, HOSTS, "AAAA=")
    h1 = launch_flags(H1S, HOSTS, "AAAA=")
    assert "--disable-http2" in h1 and "--disable-http2" not in h2
    assert "--no-sandbox" in h2 and "--disable-quic" in h2
    rules = next(f for f in h2 if f.startswith("--host-resolver-rules="))
    assert rules == (
        "--host-resolver-rules=MAP o1.h2lab.test 10.2.0.1, MAP o2.h2lab.test 10.2.0.2, "
        "MAP * ~NOTFOUND"
    )
    assert "--ignore-certificate-errors-spki-list=AAAA=" in h2
    assert not any(f == "--ignore-certificate-errors" for f in h2)
    assert not any(f.startswith("--ignore-certificate") for f in launch_flags(H2S, HOSTS, None))
    # h1c must not be upgraded to https behind our back
    assert any("HttpsUpgrades" in f for f in launch_flags(H1C, HOSTS, None))


def test_page_url_scheme_per_protocol() -> None:
    spec = "synthetic:n=2,size=1KB,origins=1"
    origins, resources, _ = layout(parse(spec))
    page = Page(name=spec, origins=origins, resources=resources, docroot=Path("/x"), digest="d")
    assert page_url(page, H1C) == "http://o1.h2lab.test/index.html"
    assert page_url(page, H2S) == "https://o1.h2lab.test/index.html"
