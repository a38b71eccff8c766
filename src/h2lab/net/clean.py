"""Remove what killed instances left behind: namespaces (ours and Rattan's), processes, state,
and the folders of cluster nodes and their actors."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Collection
from pathlib import Path

from h2lab import procs
from h2lab.net import netns
from h2lab.net.teardown import PREFIX, teardown_lab
from h2lab.paths import cluster_root, netns_etc, owners_root, state_root

# A lab makes its state folder and then writes owner.pid in it; a folder this young without one
# is a lab starting (a shard of --jobs), not a stale one.
STARTING_GRACE_S = 30.0


def _owner_alive(lab_id: str) -> bool:
    folder = state_root() / lab_id
    pid = procs.read_int_file(folder / "owner.pid")
    if pid is None:
        try:
            return time.time() - folder.stat().st_mtime < STARTING_GRACE_S
        except FileNotFoundError:  # not ours: another state folder's lab, if it has an owner
            pid = procs.read_int_file(owners_root() / lab_id)
            return pid is not None and pid != os.getpid() and procs.pid_alive(pid)
    return pid != os.getpid() and procs.pid_alive(pid)


def stale_instances(include_live: bool = False) -> list[str]:
    """Instance ids with state or namespaces whose owning h2lab process is gone."""
    ids: set[str] = set()
    with contextlib.suppress(FileNotFoundError):  # another lab may remove the empty root
        ids |= {p.name for p in state_root().iterdir() if p.name.startswith(PREFIX)}
    for name in netns.list_netns():
        if name.startswith(PREFIX):
            ids.add(name.rsplit("-", 1)[0])
    etc_root = netns_etc("x").parent
    if etc_root.is_dir():
        ids |= {p.name.rsplit("-", 1)[0] for p in etc_root.iterdir() if p.name.startswith(PREFIX)}
    return sorted(i for i in ids if include_live or not _owner_alive(i))


def clean_stale(include_live: bool = False) -> list[str]:
    """Tear down every stale instance; return their ids."""
    removed = stale_instances(include_live)
    for lab_id in removed:
        teardown_lab(lab_id)
    # rmdir, not rmtree: only if still empty, since a lab starting at the same moment (a shard
    # of --jobs) may just have made its state folder in it
    with contextlib.suppress(OSError):
        state_root().rmdir()
    return removed


LEGACY_CLUSTER_PREFIX = "h2lab-cluster-"
"""Lab actors of h2lab 0.3.0 and older worked in ``$TMPDIR/h2lab-cluster-*``, and left them when
killed."""
LAB_ACTOR_TITLE = b"ray::LabActor"
"""The start of a lab actor's command line (Ray names its actor processes ``ray::CLASS``)."""


def _owner(folder: Path) -> int | None:
    """The owner's pid of a cluster folder (``ray-PID``, ``actor-PID-...``), or None."""
    parts = folder.name.split("-")
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


def lab_actors_alive(proc: Path = Path("/proc")) -> bool:
    """Some process on this machine is a lab actor (of any h2lab version)."""
    for entry in proc.iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if (entry / "cmdline").read_bytes().startswith(LAB_ACTOR_TITLE):
                    return True
    return False


def clean_cluster_folders(ended: Collection[int] = ()) -> list[Path]:
    """Remove the cluster folders of this lab state folder (:func:`h2lab.paths.cluster_root`)
    whose owner is gone (or in ``ended``: the caller's own pid, once its node stopped), and the
    ``$TMPDIR/h2lab-cluster-*`` folders of older versions when no lab actor runs here (they
    name no owner: while any lab actor lives, one of them may be its folder). Returns them."""
    removed: list[Path] = []
    with contextlib.suppress(FileNotFoundError):
        for folder in sorted(cluster_root().iterdir()):
            pid = _owner(folder)
            if pid is not None and (pid in ended or not procs.pid_alive(pid)):
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
    with contextlib.suppress(OSError):  # only if empty: another node's folders stay
        cluster_root().rmdir()
    legacy = sorted(Path(tempfile.gettempdir()).glob(LEGACY_CLUSTER_PREFIX + "*"))
    if legacy and not lab_actors_alive():
        for folder in legacy:
            if folder.is_dir() and not folder.is_symlink():
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
    return removed
