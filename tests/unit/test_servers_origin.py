"""The origin adapter's pure parts: options, the JSON config, the source hash, the build command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from h2lab.errors import SpecError
from h2lab.pages.manifest import PageWriter
from h2lab.servers import ServeContext
from h2lab.servers import get as get_server
from h2lab.servers.origin import (
    BUILD_TAGS,
    Origin,
    OriginOptions,
    Selection,
    build_argv,
    build_env,
    render_config,
    source_hash,
)
from h2lab.spec.options import parse
from h2lab.spec.protocols import PORTS
from h2lab.tls import LocalCA


def parse_options(raw: dict[str, str]) -> OriginOptions:
    """What the registry makes of ``raw`` (:func:`h2lab.spec.options.parse`)."""
    return parse(OriginOptions, raw, "origin")


def test_options_parse_into_typed_values() -> None:
    opts = parse_options(
        {
            "scheduler": "fcfs",
            "push": "css-js",
            "early_hints": "/a.css+/b.js",
            "delay_image": "200ms",
            "delay_css": "0.5s",
            "think": "1ms",
            "framelog": "1",
            "qlog": "0",
            "notsent_lowat": "16KiB",
        }
    )
    assert opts == OriginOptions(
        scheduler="fcfs",
        push=Selection(rule="css-js"),
        early_hints=Selection(paths=("/a.css", "/b.js")),
        delay_ms=(("css", 500.0), ("image", 200.0)),
        think_ms=1.0,
        framelog=True,
        qlog=False,
        notsent_lowat_bytes=16384,
    )


def test_defaults_honour_client_priorities_and_push_nothing() -> None:
    opts = parse_options({})
    assert opts.scheduler == "client" and opts.push.none and opts.early_hints.none
    assert parse_options({"push": "none"}).push.none


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"scheduler": "random"}, "scheduler: expected one of client, rr, fcfs"),
        ({"push": "fonts"}, "push: expected none, critical-css, css-js, images, all"),
        ({"delay_video": "1ms"}, "delay_video: 'video' is not one of html, css"),
        ({"delay_image": "200"}, "delay_image: unknown time unit"),
        ({"delay_image": "-5ms"}, "delay_image: duration must not be negative"),
        ({"framelog": "maybe"}, "framelog: expected 0 or 1, got 'maybe'"),
        ({"priority": "x"}, "no option 'priority' (origin takes: scheduler"),
    ],
)
def test_bad_options_are_one_line_spec_errors(options: dict[str, str], message: str) -> None:
    spec = "origin:" + ",".join(f"{k}={v}" for k, v in options.items())
    with pytest.raises(SpecError) as err:
        get_server(spec, "exp.toml", "server")
    assert message in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).startswith("exp.toml: server: ")


def test_registry_gives_an_origin_serving_every_protocol_nginx_does_and_h3() -> None:
    server = get_server("origin:scheduler=rr")
    assert isinstance(server, Origin) and server.options.scheduler == "rr"
    assert server.protocols == frozenset(PORTS)


def test_config_names_every_origin_with_its_address_and_certificate(tmp_path: Path) -> None:
    with PageWriter("t", root=tmp_path / "pages") as w:
        w.add("https://a.test/", b"<html></html>", content_type="text/html")
        w.add("https://b.test/x.js", b"x", content_type="application/javascript")
        page = w.commit()
    ctx = ServeContext("ns", {"a.test": "10.2.0.1", "b.test": "10.2.0.2"}, tmp_path / "s", tmp_path)
    opts = parse_options({"scheduler": "fcfs", "push": "/x.js", "delay_image": "5ms", "qlog": "1"})
    config = render_config(page, ctx, LocalCA(tmp_path / "tls"), opts)
    json.dumps(config)  # serialisable as is
    assert config["page"] == str(page.docroot) and config["state_dir"] == str(tmp_path / "s")
    assert [(o["host"], o["ip"]) for o in config["origins"]] == [
        ("a.test", "10.2.0.1"),
        ("b.test", "10.2.0.2"),
    ]
    assert all(Path(o["cert"]).exists() and Path(o["key"]).exists() for o in config["origins"])
    assert config["ports"] == {"h1c": 80, "tls": 443, "h2c": 8080, "h3": 443}
    assert config["scheduler"] == "fcfs" and config["qlog"] is True
    assert config["push"] == {"rule": "", "paths": ["/x.js"]}
    assert config["delay_ms"] == {"image": 5.0}
    assert config["alt_svc"] == []  # no Alt-Svc unless a learnt discovery asks for it
    learnt = ServeContext(
        ctx.netns, ctx.origin_ips, ctx.state_dir, ctx.tls_dir, alt_svc=frozenset({"b.test"})
    )
    assert render_config(page, learnt, LocalCA(tmp_path / "tls"), opts)["alt_svc"] == ["b.test"]
    assert get_server("origin").discoveries == {"forced", "alt-svc", "https-rr", "udp-blocked"}
    assert (config["quic_cc"], config["quic_initcwnd_packets"]) == ("", 0)  # quic-go's own
    asked = parse_options({"cc": "newreno", "initcwnd": "10"})
    config = render_config(page, ctx, LocalCA(tmp_path / "tls"), asked)
    assert (config["quic_cc"], config["quic_initcwnd_packets"]) == ("reno", 10)  # quic-go's name
    assert (
        render_config(page, ctx, LocalCA(tmp_path / "tls"), parse_options({"cc": "cubic"}))[
            "quic_cc"
        ]
        == "cubic"
    )
    qlog = ServeContext(ctx.netns, ctx.origin_ips, ctx.state_dir, ctx.tls_dir, qlog=True)
    assert render_config(page, qlog, LocalCA(tmp_path / "tls"), asked)["qlog"] is True


def test_source_hash_changes_with_sources_not_with_tests(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module m\n")
    (tmp_path / "go.sum").write_text("")
    (tmp_path / "main.go").write_text("package main\n")
    before = source_hash(tmp_path)
    (tmp_path / "main_test.go").write_text("package main\n")
    assert source_hash(tmp_path) == before
    (tmp_path / "main.go").write_text("package main\n\nfunc f() {}\n")
    assert source_hash(tmp_path) != before
    assert len(before) == 12


def test_build_is_offline_pinned_and_stamped(tmp_path: Path) -> None:
    argv = build_argv("/usr/local/go/bin/go", tmp_path / "bin", "abc123")
    assert argv[:3] == ["/usr/local/go/bin/go", "build", "-trimpath"]
    assert argv[3:5] == ["-tags", BUILD_TAGS] and "-X main.sourceHash=abc123" in argv
    env = build_env()
    assert env["GOFLAGS"] == "-mod=readonly" and env["GOTOOLCHAIN"] == "local"
