"""h2lab.servers.fragment: ``conf=FILE`` parsed once (absolute path, relative to the experiment
file), included where each server takes it, and a failed configuration test told in one line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from h2lab.errors import ProcessFailed, SpecError
from h2lab.pages import Page
from h2lab.pages.manifest import PageWriter
from h2lab.runner.levels import validate_factors
from h2lab.servers import ServeContext, apache, h2o, haproxy, nginx
from h2lab.servers import get as get_server
from h2lab.servers.fragment import Fragment, message
from h2lab.spec.options import base_dir, resolve_paths
from h2lab.tls import LocalCA

HOST = "www.example.org"


@pytest.fixture
def page(tmp_path: Path) -> Page:
    with PageWriter("fragment-test", root=tmp_path / "pages") as w:
        w.add(f"https://{HOST}/", b"<html></html>", content_type="text/html")
        return w.commit()


@pytest.fixture
def ctx(tmp_path: Path) -> ServeContext:
    return ServeContext("h2lab-x-servers", {HOST: "10.2.0.1"}, tmp_path / "srv", tmp_path / "tls")


def _file(tmp_path: Path, name: str, text: str) -> Fragment:
    path = tmp_path / name
    path.write_text(text)
    return Fragment(path)


def test_relative_conf_is_made_absolute_against_the_base_and_the_rest_kept(
    tmp_path: Path,
) -> None:
    spec = resolve_paths("nginx:conf=conf/x.conf", tmp_path)
    assert spec == f"nginx:conf={tmp_path / 'conf' / 'x.conf'}"
    assert resolve_paths("h2o:push=css-js,conf=y.yaml", tmp_path) == (
        f"h2o:push=css-js,conf={tmp_path / 'y.yaml'}"
    )
    assert resolve_paths("nginx:conf=/etc/x.conf", tmp_path) == "nginx:conf=/etc/x.conf"
    assert resolve_paths("origin:scheduler=fcfs", tmp_path) == "origin:scheduler=fcfs"


def test_base_is_the_experiment_files_folder_else_the_working_directory(tmp_path: Path) -> None:
    exp = tmp_path / "e.toml"
    exp.write_text("")
    assert base_dir(str(exp)) == tmp_path
    assert base_dir("command line") == Path.cwd()


def test_a_missing_fragment_names_the_factor_and_the_resolved_path(tmp_path: Path) -> None:
    exp = tmp_path / "e.toml"
    exp.write_text("")
    raw = {"protocol": ["h2s"], "network": ["cable"], "page": ["synthetic:n=1,size=1KB"]}
    resolved = f"{tmp_path}/missing.conf"
    want = re.escape(f"factors.server[0]: nginx:conf={resolved}: conf: no such file '{resolved}'")
    with pytest.raises(SpecError, match=want):
        validate_factors(str(exp), {**raw, "server": ["nginx:conf=missing.conf"]})


def test_options_take_conf_and_name_the_others(tmp_path: Path) -> None:
    frag = _file(tmp_path, "x.conf", "")
    adapter = get_server(f"nginx:conf={frag.path}")
    assert isinstance(adapter, nginx.Nginx) and adapter.fragment == frag
    with pytest.raises(SpecError, match=r"no option 'workers' \(nginx takes: conf\)"):
        get_server("nginx:workers=2")
    with pytest.raises(SpecError, match=r"no option 'x' \(h2o takes: push, conf\)"):
        get_server("h2o:x=1")
    with pytest.raises(SpecError, match=r"no option 'x' \(apache takes: push, early_hints, conf\)"):
        get_server("apache:x=1")


def test_digest_changes_with_the_files_bytes(tmp_path: Path) -> None:
    frag = _file(tmp_path, "x.conf", "sendfile off;\n")
    first = frag.digest
    frag.path.write_text("sendfile on;\n")
    assert re.fullmatch(r"[0-9a-f]{12}", first) and frag.digest != first


def test_nginx_includes_the_fragment_in_every_server_block(
    page: Page, ctx: ServeContext, tmp_path: Path
) -> None:
    frag = _file(tmp_path, "x.conf", "add_header X-Fragment yes;\n")
    conf = nginx.render_config(page, ctx, LocalCA(ctx.tls_dir), frag)
    server = conf[conf.index("    server {") :]
    assert f'        include "{frag.path}";' in server
    assert conf.count("include ") == len(page.origins)
    assert "include " not in nginx.render_config(page, ctx, LocalCA(ctx.tls_dir))


def test_h2o_merges_the_fragment_globally_and_drops_its_own_setting_of_its_keys(
    page: Page, ctx: ServeContext, tmp_path: Path
) -> None:
    frag = _file(tmp_path, "x.yaml", 'num-threads: 4\nheader.add: "x-fragment: yes"\n')
    conf = h2o.render_config(page, ctx, LocalCA(ctx.tls_dir), "t", fragment=frag)
    assert f'<<: !file "{frag.path}"' in conf
    assert conf.index("<<: !file") < conf.index("hosts:")
    assert "num-threads" not in conf  # the fragment's wins
    assert "http2-casper: OFF" in conf  # the rest is h2lab's
    plain = h2o.render_config(page, ctx, LocalCA(ctx.tls_dir), "t")
    assert "num-threads: 1" in plain and "<<:" not in plain


def test_h2o_fragment_may_not_set_the_hosts(page: Page, ctx: ServeContext, tmp_path: Path) -> None:
    frag = _file(tmp_path, "x.yaml", "hosts:\n  a: {}\n")
    with pytest.raises(SpecError, match=r"x\.yaml: hosts: h2lab writes the hosts"):
        h2o.render_config(page, ctx, LocalCA(ctx.tls_dir), "t", fragment=frag)


def test_apache_includes_the_fragment_after_its_server_level_directives(
    page: Page, ctx: ServeContext, tmp_path: Path
) -> None:
    frag = _file(tmp_path, "x.conf", "H2WindowSize 1048576\n")
    conf = apache.render_config(page, ctx, LocalCA(ctx.tls_dir), "t", fragment=frag)
    at = conf.index(f'Include "{frag.path}"')
    assert conf.index("H2MaxSessionStreams") < at < conf.index("<VirtualHost")


def test_message_is_the_servers_line_without_nginxs_log_prefix_or_h2lab_temp_files() -> None:
    out = (
        '2026/11/26 08:04:46 [emerg] 16938#16938: unknown directive "foo" in /x/f.conf:2\n'
        "nginx: configuration file /tmp/h2lab-conf-check-1/srv/nginx.conf test failed\n"
    )
    assert message(out) == '[emerg] unknown directive "foo" in /x/f.conf:2'
    apache_out = "AH00526: Syntax error on line 1 of /x/f.conf:\nInvalid command 'H2Bogus'\n"
    assert (
        message(apache_out)
        == "AH00526: Syntax error on line 1 of /x/f.conf: Invalid command 'H2Bogus'"
    )
    h2o_out = (
        "failed to parse configuration file /x/f.yaml line 2 (included from file "
        "/tmp/h2lab-conf-check-1/srv/h2o.conf line 18): did not find expected node content\n"
    )
    assert message(h2o_out) == (
        "failed to parse configuration file /x/f.yaml line 2: did not find expected node content"
    )


def test_failed_names_the_fragment_and_the_test(tmp_path: Path) -> None:
    frag = _file(tmp_path, "x.conf", "")
    err = frag.failed("nginx -t", ProcessFailed(["nginx"], 1, "nginx: [emerg] bad in x:1\n"))
    assert str(err) == f"{frag.path}: nginx -t: nginx: [emerg] bad in x:1"
    assert err.exit_code == 2


def test_haproxy_passes_its_backends_fragment_on(tmp_path: Path) -> None:
    frag = _file(tmp_path, "x.conf", "")
    adapter = get_server(f"haproxy:backend=nginx:conf={frag.path},buffer=1MB")
    assert isinstance(adapter, haproxy.Haproxy)
    assert isinstance(adapter.backend, nginx.Nginx) and adapter.backend.fragment == frag
