"""Remove what killed instances left behind: namespaces (ours and Rattan's), processes, state."""

from __future__ import annotations

import contextlib
import os
import time

from h2lab import procs
from h2lab.net import netns
from h2lab.net.teardown import PREFIX, teardown_lab
from h2lab.paths import netns_etc, owners_root, state_root

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
