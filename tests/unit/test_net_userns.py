"""Rootless mode's pure parts: the switches that forbid it, what stays visible under /run,
the argv that runs a program as the user, and where the state goes."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from h2lab import paths
from h2lab.cli.common import enter_lab_mode
from h2lab.errors import HostForbids
from h2lab.net import userns


def _reader(values: dict[str, str]) -> Callable[[str], str | None]:
    return values.get


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("kernel.unprivileged_userns_clone", "0"),
        ("user.max_user_namespaces", "0"),
        ("kernel.apparmor_restrict_unprivileged_userns", "1"),
    ],
)
def test_each_forbidding_switch_is_named_with_its_value_and_a_remedy(key: str, value: str) -> None:
    line = userns.blocker(_reader({key: value}))
    assert line is not None
    assert f"{key} = {value}" in line
    assert "sysctl -w" in line
    assert "\n" not in line


def test_allowing_or_absent_switches_block_nothing() -> None:
    allowing = {
        "kernel.unprivileged_userns_clone": "1",
        "user.max_user_namespaces": "96365",
        "kernel.apparmor_restrict_unprivileged_userns": "0",
    }
    assert userns.blocker(_reader(allowing)) is None
    assert userns.blocker(_reader({})) is None


def test_the_first_forbidding_switch_in_order_is_named() -> None:
    both = {"kernel.unprivileged_userns_clone": "0", "user.max_user_namespaces": "0"}
    line = userns.blocker(_reader(both))
    assert line is not None and "kernel.unprivileged_userns_clone" in line
    assert "user.max_user_namespaces" not in line


def test_kept_under_run_is_the_runtime_folder_once_and_nothing_outside_run() -> None:
    kept = userns.kept_under_run(
        [
            Path("/run/user/1000/h2lab"),
            Path("/run/user/1000/h2lab-owners"),
            Path("/run/h2lab-x/state"),
            Path("/tmp/h2lab-1000/h2lab"),
            Path("/home/u/.cache"),
        ]
    )
    assert kept == [Path("/run/user/1000"), Path("/run/h2lab-x")]


def test_as_user_argv_maps_the_outside_ids_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(userns.ENV, "1000:1001")
    assert userns.as_user_argv(["chromium", "--headless"]) == [
        "unshare",
        "--user",
        "--map-user=1000",
        "--map-group=1001",
        "chromium",
        "--headless",
    ]
    assert userns.outside_ids() == (1000, 1001)
    assert userns.active()


def test_state_goes_to_the_users_runtime_folder_when_rootless(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("H2LAB_STATE", raising=False)
    monkeypatch.delenv("H2LAB_OWNERS", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1000")
    monkeypatch.setenv(userns.ENV, "1000:1000")
    assert paths.state_root() == Path("/run/user/1000/h2lab")
    assert paths.owners_root() == Path("/run/user/1000/h2lab-owners")
    assert paths.netns_etc("h2lab-abc123-client") == Path(
        "/run/h2lab-etc-netns/h2lab-abc123-client"
    )
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert paths.state_root() == Path("/tmp/h2lab-1000/h2lab")


def test_root_mode_keeps_its_folders(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("H2LAB_STATE", "H2LAB_OWNERS", userns.ENV):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert not paths.rootless()
    assert paths.state_root() == Path("/run/h2lab")
    assert paths.owners_root() == Path("/run/h2lab-owners")
    assert paths.netns_etc("h2lab-abc123-client") == Path("/etc/netns/h2lab-abc123-client")


FORBIDDEN = "rootless mode needs unprivileged user namespaces, and user.max_user_namespaces = 0"


def test_the_packet_buffer_note_says_what_rootless_mode_holds_and_the_remedy() -> None:
    small = userns.packet_buffer_note(4 * 1024 * 1024)
    assert small.startswith("Rattan's packet sockets 8 MiB (root mode 32 MiB")
    assert small.endswith("sysctl -w net.core.rmem_max=16777216)")
    assert userns.packet_buffer_note(16 * 1024 * 1024) == (
        "Rattan's packet sockets 32 MiB (as in root mode)"
    )


def test_doctor_says_rootless_works_or_names_the_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    from h2lab import doctor

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(userns, "probe", lambda: FORBIDDEN)
    check = doctor._mode_check()
    assert (check.name, check.ok, check.detail) == ("rootless", False, FORBIDDEN)
    monkeypatch.setattr(userns, "probe", lambda: None)
    check = doctor._mode_check()
    assert (check.name, check.ok) == ("rootless", True)
    assert "a user namespace per lab" in check.detail and "packet sockets" in check.detail
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert doctor._mode_check().name == "root"


def test_a_forbidding_host_stops_before_anything_is_entered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entered: list[list[Path]] = []
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(userns, "probe", lambda: FORBIDDEN)
    monkeypatch.setattr(userns, "enter", entered.append)
    with pytest.raises(HostForbids, match=r"user\.max_user_namespaces = 0") as exc:
        enter_lab_mode()
    assert exc.value.exit_code == 2
    assert entered == []


def test_rootless_mode_runs_servers_and_browsers_as_the_user(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In rootless mode a server or a browser runs as the user's own uid (nested user
    namespace), Chromium keeps its sandbox; root mode is unchanged."""
    from h2lab.clients.browser.chromium.options import sandbox_flags
    from h2lab.servers import ServeContext

    ctx = ServeContext("h2lab-s", {}, Path("/s"), Path("/t"))
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.delenv(userns.ENV, raising=False)
    assert ctx.exec_argv(["nginx"]) == ["ip", "netns", "exec", "h2lab-s", "nginx"]
    assert sandbox_flags() == ("--no-sandbox",)
    monkeypatch.setenv(userns.ENV, "1000:1001")
    assert ctx.exec_argv(["nginx", "-t"]) == [
        "ip", "netns", "exec", "h2lab-s",
        "unshare", "--user", "--map-user=1000", "--map-group=1001", "nginx", "-t",
    ]  # fmt: skip
    assert sandbox_flags() == ()
    monkeypatch.setattr(os, "geteuid", lambda: 1000)  # a user outside any lab: its sandbox
    monkeypatch.delenv(userns.ENV)
    assert sandbox_flags() == ()


def test_rootless_server_configs_switch_to_no_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Root mode's nginx, H2O and Apache name the user their workers run as; in rootless
    mode they run as the user and name none (their switch would need setgroups)."""
    from h2lab.pages.manifest import PageWriter
    from h2lab.servers import ROOTLESS_NO_USER, ServeContext, apache, h2o, nginx
    from h2lab.tls import LocalCA

    with PageWriter("p", root=tmp_path / "pages") as w:
        w.add("https://a.test/", b"<html></html>", content_type="text/html")
        page = w.commit("https://a.test/")
    ctx = ServeContext("h2lab-s", {"a.test": "10.2.0.1"}, tmp_path / "srv", tmp_path / "tls")
    ca = LocalCA(ctx.tls_dir)

    def configs() -> list[str]:
        return [
            nginx.render_config(page, ctx, ca),
            h2o.render_config(page, ctx, ca, "0123456789abcdef"),
            apache.render_config(page, ctx, ca, "0123456789abcdef"),
        ]

    monkeypatch.delenv(userns.ENV, raising=False)
    root = configs()
    assert "\nuser root;" in root[0] and "\nuser: root" in root[1]
    assert "\nUser www-data\nGroup www-data\n" in root[2]
    monkeypatch.setenv(userns.ENV, "1000:1000")
    rootless = configs()
    assert not any(re.search(r"^user[ :]|^User |^Group ", c, re.M) for c in rootless)
    assert ROOTLESS_NO_USER in rootless[0] and ROOTLESS_NO_USER in rootless[2]
