"""deploy/h2lab-container: the podman command it runs (a stand-in podman records its arguments).

The real image runs it in docs/measured.md (`deploy/h2lab-container demo`, 63 s); here only
what it passes: the host's runtime and limits, no network, the current folder at /results,
the image, then `h2lab` and the caller's arguments unchanged.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

WRAPPER = Path(__file__).resolve().parents[2] / "deploy" / "h2lab-container"


def run_wrapper(tmp_path: Path, *args: str, **env: str) -> list[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "argv"
    fake = bin_dir / "podman"
    fake.write_text(f'#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done > {record}\n')
    fake.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    environ = {k: v for k, v in os.environ.items() if k != "H2LAB_IMAGE"}
    environ.update(PATH=f"{bin_dir}:{os.environ['PATH']}", **env)
    subprocess.run(
        [str(WRAPPER), *args], cwd=work, env=environ, check=True, stdin=subprocess.DEVNULL
    )
    return record.read_text().splitlines()


def test_the_wrapper_runs_h2lab_in_the_image_with_the_hosts_flags_and_the_folder_at_results(
    tmp_path: Path,
) -> None:
    argv = run_wrapper(tmp_path, "run", "my file.toml", "--out", "results")
    image = argv.index("localhost/h2lab:latest")
    assert argv[image + 1 :] == ["h2lab", "run", "my file.toml", "--out", "results"]
    flags = argv[:image]
    assert "run" in flags and "--rm" in flags and "--network=none" in flags
    assert f"{tmp_path / 'work'}:/results" in flags
    assert "--cap-add=NET_ADMIN,NET_RAW,SYS_ADMIN" in flags
    ulimits = [flags[i + 1] for i, a in enumerate(flags) if a == "--ulimit"]
    assert [u.split("=")[0] for u in ulimits] == ["nofile", "nproc"]
    assert all(0 < int(u.split("=")[1].split(":")[0]) <= 1048576 for u in ulimits)
    assert "-it" not in flags  # no terminal here
    hybrid = subprocess.run(["stat", "-fc", "%T", "/sys/fs/cgroup"], capture_output=True, text=True)
    assert (flags[:2] == ["--runtime", "runc"]) == (hybrid.stdout.strip() != "cgroup2fs")


def test_h2lab_image_names_another_image(tmp_path: Path) -> None:
    argv = run_wrapper(tmp_path, "demo", H2LAB_IMAGE="registry.example/h2lab:0.2.0")
    assert argv[-3:] == ["registry.example/h2lab:0.2.0", "h2lab", "demo"]
