"""caddy (Debian 13's 2.6): its JSON configuration, per origin a TLS server (h3 too at TLS 1.3)
and a cleartext one, nothing that reaches the network, and nginx's replay as Caddy maps."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from h2lab.errors import SpecError
from h2lab.pages import Page
from h2lab.pages.manifest import PageWriter
from h2lab.servers import ServeContext, caddy
from h2lab.servers import get as get_server
from h2lab.spec.protocols import H3, TCP_PROTOCOLS
from h2lab.tls import LocalCA

HOSTS = ("a.example.org", "b.example.org")
IPS = {HOSTS[0]: "10.2.0.1", HOSTS[1]: "10.2.0.2"}


@pytest.fixture
def page(tmp_path: Path) -> Page:
    with PageWriter("caddy-test", root=tmp_path / "pages") as w:
        w.add(f"https://{HOSTS[0]}/", b"<html></html>", content_type="text/html",
              headers=[("Link", "<a{b}>; rel=x")])  # fmt: skip
        w.add(f"https://{HOSTS[0]}/q?a=1", b"1", content_type="text/plain")
        w.add(f"https://{HOSTS[0]}/q?a=2", b"2", content_type="text/plain")
        w.add(f"https://{HOSTS[0]}/old", None, content_type="text/html", status=301,
              headers=[("Location", f"https://{HOSTS[0]}/")])  # fmt: skip
        w.add(f"https://{HOSTS[1]}/a.css", b"a{}", content_type="text/css")
        return w.commit()


def _config(page: Page, tmp_path: Path, tls: str = "1.3") -> dict[str, Any]:
    ctx = ServeContext("h2lab-x-servers", IPS, tmp_path / "srv", tmp_path / "tls", tls)
    return caddy.render_config(page, ctx, LocalCA(ctx.tls_dir))


def test_each_origin_gets_a_tls_server_with_its_certificate_and_a_cleartext_one(
    page: Page, tmp_path: Path
) -> None:
    servers = _config(page, tmp_path)["apps"]["http"]["servers"]
    assert len(servers) == 2 * len(HOSTS)
    for k, (host, ip) in enumerate(IPS.items(), start=1):
        tls, clear = servers[f"o{k}-tls"], servers[f"o{k}-cleartext"]
        assert tls["listen"] == [f"{ip}:443"] and tls["protocols"] == ["h1", "h2", "h3"]
        [policy] = tls["tls_connection_policies"]  # no SNI match: an IP literal gets it too
        assert policy == {"certificate_selection": {"any_tag": [host]},
                          "protocol_min": "tls1.3", "protocol_max": "tls1.3"}  # fmt: skip
        assert clear["listen"] == [f"{ip}:80", f"{ip}:8080"]
        assert clear["protocols"] == ["h1", "h2c"] and "tls_connection_policies" not in clear
        for server in (tls, clear):
            assert server["automatic_https"] == {"disable": True}
            assert server["idle_timeout"] == server["write_timeout"] == "3600s"


def test_at_tls_12_the_tcp_listener_takes_12_and_there_is_no_h3(page: Page, tmp_path: Path) -> None:
    servers = _config(page, tmp_path, "1.2")["apps"]["http"]["servers"]
    assert servers["o1-tls"]["protocols"] == ["h1", "h2"]
    policy = servers["o1-tls"]["tls_connection_policies"][0]
    assert policy["protocol_min"] == policy["protocol_max"] == "tls1.2"


def test_nothing_reaches_the_network_or_outlives_the_state_folder(
    page: Page, tmp_path: Path
) -> None:
    conf = _config(page, tmp_path)
    assert conf["admin"] == {"disabled": True, "config": {"persist": False}}
    assert conf["storage"] == {"module": "file_system", "root": str(tmp_path / "srv/caddy-data")}
    tls = conf["apps"]["tls"]
    assert tls["session_tickets"] == {"disabled": True}  # no resumption, so no 0-RTT
    assert "automation" not in tls  # no ACME: every certificate is the lab CA's
    files = tls["certificates"]["load_files"]
    assert [f["tags"] for f in files] == [[h] for h in HOSTS]
    assert json.dumps(conf).count("http://") == 0  # no URL of anything to fetch


def test_requests_are_mapped_to_resources_as_nginx_does(page: Page, tmp_path: Path) -> None:
    routes = _config(page, tmp_path)["apps"]["http"]["servers"]["o1-tls"]["routes"]
    pick = routes[0]["handle"]
    assert pick[0] == {"handler": "headers", "response": {"delete": ["Alt-Svc"]}}
    exact, query, by_path, keep = pick[1:]
    assert exact["source"] == "{http.request.method} {http.request.host}{http.request.uri}"
    assert {m["input"]: m["outputs"] for m in exact["mappings"]} == {
        f"GET {HOSTS[0]}/": ["0"], f"GET {HOSTS[0]}/q?a=1": ["1"],
        f"GET {HOSTS[0]}/q?a=2": ["2"], f"GET {HOSTS[0]}/old": ["3"],
    }  # fmt: skip  # only this origin's
    assert exact["defaults"] == ["{h2lab_query}"] and query["defaults"] == ["{h2lab_path}"]
    regexes = [(m["input_regexp"], m["outputs"]) for m in query["mappings"]]
    assert re.match(regexes[0][0], f"GET {HOSTS[0]}/q?a=2") and regexes[0][1] == ["2"]
    assert re.match(regexes[-1][0], f"GET {HOSTS[0]}/q?b") and regexes[-1][1] == ["1"]
    assert by_path["mappings"][0] == {"input": f"{HOSTS[0]}/", "outputs": ["0"]}
    assert keep == {"handler": "vars", "h2lab_rid": "{h2lab_exact}"}
    entry, redirect = routes[1], routes[4]
    assert entry["match"] == [{"vars": {"h2lab_rid": ["0"]}}] and entry["terminal"]
    headers = entry["handle"][1]["response"]
    assert headers["add"] == {"link": ["<a\\{b\\}>; rel=x"]}  # a brace is no placeholder
    assert entry["handle"][-2:] == [
        {"handler": "rewrite", "uri": "/r0"},
        {"handler": "file_server", "root": str(tmp_path / "srv/bodies")},
    ]
    location = {"Location": [f"https://{HOSTS[0]}/"]}
    assert redirect["handle"][-1] == {
        "handler": "static_response",
        "status_code": 301,
        "headers": location,
    }
    assert routes[-1] == {"handle": [{"handler": "static_response", "status_code": 404}]}
    assert all(r["handle"][0] == {"handler": "vars", "skip_log": True} for r in routes[1:-1])


def test_escape_and_regex_literals() -> None:
    assert caddy.escape("a}b") == "a}b"  # Caddy reads no escape without an opening brace
    assert caddy.escape("{x}") == "\\{x\\}"
    pattern = caddy.go_regex_literal("GET h/é?a.b=1")
    assert "é" in pattern and re.fullmatch(pattern, "GET h/é?a.b=1")
    assert not re.fullmatch(pattern, "GET h/é?aXb=1")


def test_unserved_lines_are_nginxs_from_caddys_access_log() -> None:
    log = "\n".join([
        json.dumps({"request": {"method": "GET", "host": "a.test", "uri": "/x?y=1",
                                "tls": {"version": 772}}}),
        json.dumps({"request": {"method": "POST", "host": "a.test", "uri": "/p"}}),
        "not json",
    ])  # fmt: skip
    assert caddy.unserved_lines(log) == ["GET https://a.test/x?y=1", "POST http://a.test/p"]


def test_the_level_serves_h3_and_takes_no_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = get_server("caddy")
    assert server.name == "caddy" and server.protocols == TCP_PROTOCOLS | {H3}
    with pytest.raises(SpecError, match=r"caddy:conf=x: no option 'conf' \(caddy takes: none\)"):
        get_server("caddy:conf=x")
    monkeypatch.setenv("H2LAB_CACHE", str(tmp_path))
    assert server.version() == "not installed"


def test_caddys_own_alt_svc_is_removed_unless_discovery_asks_for_it(
    page: Page, tmp_path: Path
) -> None:
    def drops(config: dict[str, Any]) -> list[bool]:
        servers = config["apps"]["http"]["servers"]
        return [
            {"handler": "headers", "response": {"delete": ["Alt-Svc"]}}
            in json.loads(json.dumps(server["routes"]))[0]["handle"]
            for name, server in servers.items()
            if name.endswith("-tls")
        ]

    assert drops(_config(page, tmp_path)) == [True, True]
    every, first = frozenset(page.origins), frozenset(page.origins[:1])
    for alt_svc, dropped in ((every, [False, False]), (first, [False, True])):
        ctx = ServeContext(
            "h2lab-x-servers", IPS, tmp_path / "srv", tmp_path / "tls", alt_svc=alt_svc
        )
        assert drops(caddy.render_config(page, ctx, LocalCA(ctx.tls_dir))) == dropped
    assert get_server("caddy").discoveries == {"forced", "alt-svc", "https-rr", "udp-blocked"}
