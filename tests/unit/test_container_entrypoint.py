"""The container image's entrypoint (scripts/container_entrypoint.py): the results it gives
back to the mount's owner, and the exit status it passes on."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "container_entrypoint.py"


def _entrypoint() -> ModuleType:
    spec = importlib.util.spec_from_file_location("container_entrypoint", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tree(root: Path) -> Path:
    """results/{sub/a.txt, b.txt, link -> ../outside.txt}; returns results/."""
    results = root / "results"
    (results / "sub").mkdir(parents=True)
    (results / "sub" / "a.txt").write_text("a")
    (results / "b.txt").write_text("b")
    (root / "outside.txt").write_text("not a result")
    (results / "link").symlink_to(root / "outside.txt")
    return results


def test_give_back_takes_every_entry_of_the_owner_links_themselves(tmp_path: Path) -> None:
    ep = _entrypoint()
    results = _tree(tmp_path)
    uid, gid = os.getuid(), os.getgid()
    # sub, sub/a.txt, b.txt, link: the link's target outside the folder is not walked
    assert ep.give_back(results, uid, gid, from_uid=uid) == 4
    assert (tmp_path / "outside.txt").read_text() == "not a result"


def test_give_back_leaves_entries_of_other_owners(tmp_path: Path) -> None:
    ep = _entrypoint()
    results = _tree(tmp_path)
    assert ep.give_back(results, os.getuid(), os.getgid(), from_uid=os.getuid() + 1) == 0


def test_results_owner_of_a_missing_folder_is_none(tmp_path: Path) -> None:
    assert _entrypoint().results_owner(tmp_path / "no-such-mount") is None


def _run_in_a_process(argv: list[str]) -> int:
    """The entrypoint's run(argv) in a Python of its own: it reaps every child of its process
    and waits for signals, which a test process with other children and threads must not."""
    code = f"import runpy, sys; sys.exit(runpy.run_path({str(SCRIPT)!r})['run']({argv!r}))"
    return subprocess.run([sys.executable, "-c", code], timeout=30).returncode


def test_run_passes_the_exit_status_and_a_signal_as_128_plus_it() -> None:
    assert _run_in_a_process(["sh", "-c", "exit 3"]) == 3
    assert _run_in_a_process(["sh", "-c", "kill -TERM $$"]) == 128 + signal.SIGTERM


def test_run_passes_a_signal_sent_to_it_on_to_the_child() -> None:
    # the child sends SIGTERM to the entrypoint (its parent), as podman stop does; only the
    # forwarded signal reaches the child's trap (exit 7); without it the loop ends with 0
    loop = "i=0; while [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done"
    child = f"trap 'exit 7' TERM; kill -TERM $PPID; {loop}"
    assert _run_in_a_process(["sh", "-c", child]) == 7


def test_main_without_a_command_exits_2() -> None:
    assert _entrypoint().main([]) == 2
