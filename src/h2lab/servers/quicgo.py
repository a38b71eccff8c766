"""quic-go as the origin builds it: with h2lab's congestion-control hooks, built from a patched
copy of the pinned module rather than a fork kept in the repository.

quic-go 0.65 makes every connection's sender Reno with a 32-packet initial window and offers
no setting for either. The build copies quic-go from Go's module cache (which it never
writes) into its own folder, adds two files (``origin/_overlay/congestion_h2lab.go`` to its
internal ``congestion`` package, ``origin/_overlay/quic_h2lab.go`` to its root package),
changes two lines of ``NewCubicSender`` (``origin/_overlay/cubic_sender.patch``: the lines
as quic-go has them, ``----``, the lines h2lab compiles), and builds with a module file of
its own (``go build -modfile``: the origin's go.mod with a ``replace`` of quic-go by the
copy; go.sum beside it). (``go build -overlay`` would have been lighter, but Go refuses to
overlay files under the module cache.) If quic-go's lines are not exactly there (another
version), the build stops with a line that says so, rather than build an origin that ignores
what a trial asks for. Only this build has the ``h2labcc`` tag (origin/quiccc.go); ``go vet``
and ``go test`` build origin/quiccc_stock.go.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from h2lab.errors import ProcessFailed

MODULE = "github.com/quic-go/quic-go"
OVERLAY_DIR = "_overlay"
"""In the origin's source folder (a name Go's tools skip: it is no package of the origin)."""
PATCH = "cubic_sender.patch"
ADDED = {
    "internal/congestion/h2lab.go": "congestion_h2lab.go",
    "h2lab.go": "quic_h2lab.go",
}
"""Files added to quic-go: path in the module -> file in :data:`OVERLAY_DIR`."""
TAG = "h2labcc"
SEPARATOR = "----\n"


def read_patch(text: str) -> tuple[str, str, str]:
    """(path in the module, its lines as quic-go has them, the lines compiled instead)."""
    target, _, rest = text.partition("\n")
    old, sep, new = rest.partition(SEPARATOR)
    if not target or not sep or not old or not new:
        raise ValueError(f"not a patch: expected PATH, old lines, {SEPARATOR!r}, new lines")
    return target, old, new


def module_dir(go: str, src: Path, env: Mapping[str, str]) -> Path:
    """quic-go's folder in the module cache, as go.mod and go.sum pin it: downloaded first when
    the cache lacks it (a fresh machine: ``go list -m`` then names no folder; ``go build``
    would have fetched it, but the copy is made before the build)."""
    for argv in ([go, "mod", "download", MODULE], [go, "list", "-m", "-f", "{{.Dir}}", MODULE]):
        done = subprocess.run(
            argv, cwd=src, env=dict(env), capture_output=True, text=True, timeout=300
        )
        if done.returncode != 0:
            raise ProcessFailed(argv, done.returncode, done.stderr[-2000:])
    if not done.stdout.strip():
        raise ProcessFailed(argv, done.returncode, f"no folder for {MODULE}: {done.stderr[-500:]}")
    return Path(done.stdout.strip())


def write_module(module: Path, src: Path, out: Path) -> Path:
    """quic-go patched in ``out`` and the module file that builds with it (``-modfile``), its
    go.sum beside it; :class:`ProcessFailed` when quic-go's lines are not as the patch
    expects."""
    target, old, new = read_patch((src / OVERLAY_DIR / PATCH).read_text())
    original = (module / target).read_text()
    if original.count(old) != 1:
        raise ProcessFailed(
            ["go", "build"], None,
            f"{MODULE}'s {target} does not have the lines origin/{OVERLAY_DIR}/{PATCH} changes "
            "(another quic-go version?): update the patch with go.mod",
        )  # fmt: skip
    copy = out / "quic-go"
    shutil.copytree(module, copy, copy_function=shutil.copyfile)
    for folder, _, _ in os.walk(copy):  # the module cache's folders are read-only
        os.chmod(folder, 0o755)
    (copy / target).write_text(original.replace(old, new))
    for path, name in ADDED.items():
        shutil.copyfile(src / OVERLAY_DIR / name, copy / path)
    modfile = out / "go.mod"
    modfile.write_text((src / "go.mod").read_text() + f"\nreplace {MODULE} => {copy}\n")
    shutil.copyfile(src / "go.sum", out / "go.sum")
    return modfile
