"""``nginx:conf=FILE``, ``h2o:conf=FILE``, ``apache:conf=FILE``: the user's configuration
fragment is in the configuration the server runs with (a header it adds reaches the client over
h2), a relative path is the experiment file's, the trial records it, and a fragment with a
syntax error fails ``h2lab validate`` with the server's own message, leaving nothing behind."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from h2lab.net.lab import Lab
from h2lab.pages import resolve_page
from h2lab.runner.levels import load_experiment
from h2lab.servers import ServeContext
from h2lab.servers import get as get_server
from h2lab.spec.network import parse_network
from h2lab.spec.tcp import TcpSettings
from tests.integration.conftest import ROOT, lab_processes

PAGE = "synthetic:n=2,size=4KB,origins=1"
FRAGMENTS = {
    "nginx": ("frag.conf", "add_header X-Fragment nginx;\nhttp2_chunk_size 4k;\n"),
    "h2o": ("frag.yaml", 'header.add: "x-fragment: h2o"\nnum-threads: 2\n'),
    "apache": ("frag.conf", "Header always set X-Fragment apache\nH2WindowSize 1048576\n"),
}
BAD = {
    "nginx": ("add_header X-Fragment yes\nfoo;\n", 'invalid parameter "foo" in {path}:2'),
    "h2o": ("header.add: [\n", "failed to parse configuration file {path} line 2"),
    "apache": ("H2Bogus on\n", "Syntax error on line 1 of {path}: Invalid command 'H2Bogus'"),
}


def _experiment(folder: Path, server: str) -> Path:
    path = folder / "exp.toml"
    path.write_text(f"""name = "fragment"
[factors]
protocol = ["h2s"]
network = ["cable"]
page = ["{PAGE}"]
server = ["{server}"]
""")
    return path


def _h2lab(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": f"{ROOT / 'src'}:{ROOT}", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    argv = [sys.executable, "-m", "h2lab", *args]
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env, timeout=60)


def _checks_left() -> list[str]:
    return sorted(p.name for p in Path(tempfile.gettempdir()).glob("h2lab-conf-check-*"))


@pytest.mark.parametrize("server", sorted(FRAGMENTS))
def test_fragment_header_reaches_the_client_over_h2(server: str, tmp_path: Path) -> None:
    name, text = FRAGMENTS[server]
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / name).write_text(text)
    exp = load_experiment(_experiment(tmp_path, f"{server}:conf=conf/{name}"))
    (level,) = exp.factors["server"]
    assert level == f"{server}:conf={tmp_path / 'conf' / name}"  # the experiment file's folder
    adapter = get_server(level)
    assert f"conf={tmp_path / 'conf' / name} (sha256 " in adapter.version()
    page = resolve_page(PAGE)
    host = page.origins[0]
    with Lab(page.origins) as lab:
        ctx = ServeContext(
            lab.servers_ns, lab.origin_ips, lab.state_dir / "srv", lab.state_dir / "tls"
        )
        profile = parse_network("rtt=10ms,rate=50Mbps")
        with adapter.serve(page, ctx), lab.link(profile, 1, TcpSettings()) as link:
            argv = ["ip", "netns", "exec", link.client_ns, "curl", "-s", "--http2", "-D", "-",
                    "-o", "/dev/null", "--cacert", str(ctx.tls_dir / "ca.pem"),
                    f"https://{host}{page.entry.target}"]  # fmt: skip
            head = subprocess.run(argv, capture_output=True, text=True, timeout=20).stdout
    print(head)
    assert head.startswith("HTTP/2 200")
    assert f"x-fragment: {server}" in head.lower()


@pytest.mark.parametrize("server", sorted(BAD))
def test_bad_fragment_fails_validate_with_the_servers_message(server: str, tmp_path: Path) -> None:
    text, said = BAD[server]
    frag = tmp_path / "bad.conf"
    frag.write_text(text)
    exp = _experiment(tmp_path, f"{server}:conf=bad.conf")
    before_checks, before_procs = _checks_left(), lab_processes()
    done = _h2lab("validate", str(exp), cwd=Path("/"))  # relative to the file, not the cwd
    print(done.stderr)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"h2lab: {frag}: {server if server != 'apache' else 'apache2'} -t: ")
    assert said.format(path=frag) in lines[0]
    assert _checks_left() == before_checks
    assert lab_processes() == before_procs


def test_bad_fragment_on_the_command_line_is_relative_to_the_working_directory(
    tmp_path: Path,
) -> None:
    text, said = BAD["nginx"]
    frag = tmp_path / "bad.conf"
    frag.write_text(text)
    args = ("load", "synthetic:n=1,size=1KB", "--protocol", "h2s", "--network", "cable")
    done = _h2lab(*args, "--server", "nginx:conf=bad.conf", "--out", str(tmp_path / "out"),
                  cwd=tmp_path)  # fmt: skip
    print(done.stderr)
    assert done.returncode == 2
    assert done.stderr.strip() == f"h2lab: {frag}: nginx -t: [emerg] " + said.format(path=frag)
    assert not (tmp_path / "out").exists()  # refused before any trial


def _run_from(folder: Path, out: Path, repetitions: int) -> subprocess.CompletedProcess[str]:
    """``h2lab run`` of a two-level experiment whose nginx reads ``conf/frag.conf`` beside it,
    on a page imported from ``site.har`` beside it too."""
    (folder / "conf").mkdir(parents=True, exist_ok=True)
    (folder / "conf" / "frag.conf").write_text(FRAGMENTS["nginx"][1])
    shutil.copyfile(ROOT / "corpus" / "har" / "http2-github-io.har", folder / "site.har")
    exp = folder / "exp.toml"
    exp.write_text(f"""name = "moved"
repetitions = {repetitions}
[factors]
protocol = ["h2s"]
network = ["rtt=10ms,rate=50Mbps"]
page = ["har:site.har"]
server = ["nginx", "nginx:conf=conf/frag.conf"]
client = ["curl"]
""")
    done = _h2lab("run", str(exp), "--out", str(out), cwd=folder)
    print(done.stdout[-2000:], done.stderr[-2000:])
    return done


def _keys(out: Path) -> list[tuple[str, str]]:
    import sqlite3

    with sqlite3.connect(out / "results.sqlite") as db:
        rows = db.execute("SELECT trial_key, server, page FROM trials WHERE status = 'ok'")
        pages = set()
        keys = []
        for key, server, page in rows:
            keys.append((key, server))
            pages.add(page)
        (page,) = pages  # one level, whichever folder the file lay in
        assert re.fullmatch(r"har:site\.har@sha256:[0-9a-f]{12}", page), page
        return sorted(keys)


def test_the_same_fragment_from_another_folder_resumes_without_new_keys(tmp_path: Path) -> None:
    """The same ``conf=`` fragment and page file in two folders: keys and levels by content."""
    out = tmp_path / "out"
    assert _run_from(tmp_path / "a", out, repetitions=1).returncode == 0
    first = _keys(out)
    assert len(first) == 2
    conf = next(s for _, s in first if s != "nginx")
    assert re.fullmatch(r"nginx:conf=frag\.conf@sha256:[0-9a-f]{12}", conf)  # content, not path
    assert str(tmp_path) not in "".join(k for k, _ in first)
    # another checkout: the same file elsewhere; a second repetition is the only new work
    done = _run_from(tmp_path / "b", out, repetitions=2)
    assert done.returncode == 0
    assert "that this file does not have" not in done.stdout + done.stderr  # no strangers
    keys = _keys(out)
    assert len(keys) == 4 and set(first) <= set(keys)
    assert len({s for _, s in keys}) == 2  # one level per configuration, wherever it lay
