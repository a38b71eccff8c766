"""``h2lab cluster ...`` and ``h2lab run --cluster`` on input they must refuse: exit 2, one
stderr line naming the flag, no --out folder, and no Ray started (nothing here gets as far as
``import ray``: a stub stands in for it, so a refusal that came too late would fail, not
connect).

``cluster secrets`` runs through typer's CliRunner. The refusals run through
``h2lab.cli:main``, in process, as the installed ``h2lab`` script calls it: it is what turns an
error into one line and an exit code (CliRunner on ``app`` would only see the exception).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from h2lab import cli
from h2lab.cluster import nodes
from h2lab.cluster.secrets import TOKEN

DEMO = Path(__file__).resolve().parents[2] / "experiments" / "demo.toml"
RAY_KEYS = (
    "RAY_AUTH_MODE",
    "RAY_AUTH_TOKEN_PATH",
    "RAY_USE_TLS",
    "RAY_TLS_SERVER_CERT",
    "RAY_TLS_SERVER_KEY",
    "RAY_TLS_CA_CERT",
    "RAY_USAGE_STATS_ENABLED",
)


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No secrets from the environment, a private cache/state, os.environ's RAY_* restored
    afterwards, and a ``ray`` module that refuses to connect."""
    monkeypatch.delenv("H2LAB_CLUSTER_SECRETS", raising=False)
    monkeypatch.setenv("H2LAB_STATE", str(tmp_path / "state"))
    monkeypatch.setenv("H2LAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("H2LAB_PAGES", str(tmp_path / "pages"))
    for key in RAY_KEYS:  # set then delete: monkeypatch restores "unset" afterwards
        monkeypatch.setenv(key, "x")
        monkeypatch.delenv(key)
    stub = types.ModuleType("ray")

    def init(*args: object, **kwargs: object) -> None:
        raise ConnectionError("stub ray: no cluster in a unit test")

    stub.init = init  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ray", stub)

    def no_run(argv: object, env: object, temp_dir: object) -> int:
        raise AssertionError("run_ray reached")

    monkeypatch.setattr(nodes, "run_ray", no_run)


def h2lab(
    args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of ``h2lab ARGS`` run by ``h2lab.cli:main``."""
    monkeypatch.setattr(sys, "argv", ["h2lab", *args])
    monkeypatch.setattr(signal, "signal", lambda *a: None)  # main sets SIGINT's handler
    with pytest.raises(SystemExit) as exc:
        cli.main()
    out, err = capsys.readouterr()
    code = exc.value.code
    return (code if isinstance(code, int) else 1), out, err


def _one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("h2lab: "), err
    return lines[0]


@pytest.fixture
def secrets(tmp_path: Path) -> Path:
    folder = tmp_path / "secrets"
    result = CliRunner().invoke(cli.app, ["cluster", "secrets", str(folder)])
    assert result.exit_code == 0, result.output
    return folder


@pytest.fixture
def listener() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections (and says nothing)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield s.getsockname()[1]


# ------------------------------------------------------------------ cluster secrets


def test_cluster_secrets_makes_the_token_and_ca(tmp_path: Path) -> None:
    folder = tmp_path / "new" / "secrets"
    result = CliRunner().invoke(cli.app, ["cluster", "secrets", str(folder)])
    assert result.exit_code == 0, result.output
    assert "cluster secrets in" in result.output and "(token, ca.pem, ca.key)" in result.output
    assert re.fullmatch(r"[0-9a-f]{64}\n", (folder / TOKEN).read_text())
    assert (folder / "ca.pem").is_file() and (folder / "ca.key").is_file()
    assert os.stat(folder).st_mode & 0o777 == 0o700


def test_cluster_secrets_again_keeps_the_token(secrets: Path) -> None:
    token = (secrets / TOKEN).read_text()
    result = CliRunner().invoke(cli.app, ["cluster", "secrets", str(secrets)])
    assert result.exit_code == 0, result.output
    assert (secrets / TOKEN).read_text() == token


# ------------------------------------------------------------------ run --cluster


def test_run_on_a_cluster_without_secrets_names_cluster_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = ["run", str(DEMO), "--out", str(out), "--cluster", "127.0.0.2:1"]
    code, stdout, err = h2lab(args, monkeypatch, capsys)
    line = _one_line(err)
    assert code == 2
    assert line.startswith("h2lab: command line: --cluster-secrets: needed (or $H2LAB_CLUSTER_")
    assert "h2lab cluster secrets DIR" in line
    assert stdout == ""
    assert not out.exists()


def test_run_on_a_cluster_with_jobs_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = ["run", str(DEMO), "--out", str(out), "--cluster", "host:1", "--jobs", "2"]
    code, _, err = h2lab(args, monkeypatch, capsys)
    assert code == 2
    assert _one_line(err) == ("h2lab: command line: --jobs: not with --cluster (one lab per node)")
    assert not out.exists()


def test_run_on_a_cluster_nobody_answers_at_fails_fast(
    tmp_path: Path,
    secrets: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "out"
    args = ["run", str(DEMO), "--out", str(out), "--cluster", "127.0.0.2:1"]
    code, _, err = h2lab([*args, "--cluster-secrets", str(secrets)], monkeypatch, capsys)
    assert code == 2
    assert _one_line(err) == (
        "h2lab: command line: --cluster: cannot reach 127.0.0.2:1 (Connection refused)"
    )
    assert not out.exists()
    assert not any(k in os.environ for k in RAY_KEYS)  # nothing set for Ray


def test_run_on_a_cluster_with_an_empty_secrets_folder_names_cluster_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``run`` has no ``--secrets`` flag: its line must name the flag the user gave."""
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "out"
    args = ["run", str(DEMO), "--out", str(out), "--cluster", "127.0.0.2:1"]
    code, _, err = h2lab([*args, "--cluster-secrets", str(empty)], monkeypatch, capsys)
    line = _one_line(err)
    assert code == 2
    assert f"{empty / TOKEN} is missing" in line
    assert line.startswith("h2lab: command line: --cluster-secrets: "), line
    assert not out.exists()


def test_run_on_a_cluster_named_by_host_name_is_one_line(
    tmp_path: Path,
    secrets: Path,
    listener: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--cluster HOST:PORT`` with a host name that answers: a refusal in one line (or the
    stub ray's "cannot join"), never a traceback."""
    out = tmp_path / "out"
    args = ["run", str(DEMO), "--out", str(out), "--cluster", f"localhost:{listener}"]
    code, _, err = h2lab([*args, "--cluster-secrets", str(secrets)], monkeypatch, capsys)
    line = _one_line(err)
    assert code == 2
    assert line.startswith("h2lab: command line: --cluster: "), line
    assert not out.exists()


def test_cannot_join_says_why_ray_could_not() -> None:
    """Ray's "Failed to connect to Ray cluster" keeps its reason in ``__cause__``: both show."""
    from h2lab.cluster.executor import _why

    try:
        try:
            raise RuntimeError("No node info found matching attributes: '127.0.0.2'\nmore")
        except RuntimeError as inner:
            raise ConnectionError("Failed to connect to Ray cluster at 127.0.0.2:6393") from inner
    except ConnectionError as exc:
        said = _why(exc)
    assert said == (
        "Failed to connect to Ray cluster at 127.0.0.2:6393 "
        "(No node info found matching attributes: '127.0.0.2')"
    )
    assert _why(ValueError()) == "ValueError"


# ------------------------------------------------------------------ cluster worker


def test_worker_that_is_not_root_is_refused_before_joining(
    secrets: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    args = ["cluster", "worker", "--address", "127.0.0.2:6379", "--ip", "127.0.0.2"]
    code, stdout, err = h2lab([*args, "--secrets", str(secrets)], monkeypatch, capsys)
    assert code == 2
    assert _one_line(err) == (
        "h2lab: this machine cannot be a lab node: not root: labs need network namespaces "
        "(run h2lab cluster worker as root)"
    )
    assert stdout == ""
    assert not (secrets / "nodes").exists()  # no certificate issued for a refused node


def test_worker_without_secrets_is_refused_as_not_root_first(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    args = ["cluster", "worker", "--address", "127.0.0.2:6379", "--ip", "127.0.0.2"]
    code, _, err = h2lab(args, monkeypatch, capsys)
    assert code == 2
    assert "not root" in _one_line(err)


def test_worker_with_a_bad_address_names_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    args = ["cluster", "worker", "--address", "head", "--ip", "127.0.0.2"]
    code, _, err = h2lab(args, monkeypatch, capsys)
    assert code == 2
    assert _one_line(err) == "h2lab: command line: --cluster: expected HOST:PORT, got 'head'"
