"""``h2lab pages import`` of each layered decompression bomb (issue #56, item 1): a capture of a
few KB whose script decodes to 2 GiB (fuzz/bombs/, :data:`fuzz.bombs.LAYERED`). Each import
runs ``--runs`` times in a process of its own, into a cache of its own, and prints the median
and the worst of its wall-clock seconds, the CPU seconds it spent and the process's peak
resident memory (VmHWM, interpreter and imports included). The must-hold: under 1 s and under
300 MB. The unit tests bound the CPU seconds (tests/unit/test_pages_import_layers.py); the
seconds a user waits are this script's, on an otherwise idle machine.

    .venv/bin/python bench/import_bombs.py [--runs 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # fuzz/ and tests/, from the checkout

from fuzz import bombs
from tests.unit.test_pages_import_layers import run_import


def import_once(name: str, work: Path) -> dict[str, float]:
    """One import of ``fuzz/bombs/NAME`` from a copy in WORK, in a process of its own (the
    unit test's way: its figures are the test's)."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir()
    path = work / name
    path.write_bytes((bombs.FOLDER / name).read_bytes())
    figures, _, stderr = run_import(path, work)
    if figures["code"] != 0:
        raise SystemExit(f"{name}: h2lab pages import exited {figures['code']}: {stderr}")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="imports of each capture")
    args = parser.parse_args()
    print("capture                      layers                        wall_s median/max"
          "   cpu_s median/max   peak_MB max")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="h2lab-bombs-") as tmp:
        for name, layers in sorted(bombs.LAYERED.items()):
            runs = [import_once(name, Path(tmp) / "work") for _ in range(args.runs)]
            wall = [r["elapsed_s"] for r in runs]
            cpu = [r["cpu_s"] for r in runs]
            peak_mb = max(r["peak_bytes"] for r in runs) / 1024**2
            wall_s = f"{statistics.median(wall):6.3f}/{max(wall):6.3f}"
            cpu_s = f"{statistics.median(cpu):6.3f}/{max(cpu):6.3f}"
            print(f"{name:28s} {layers:29s} {wall_s}      {cpu_s}     {peak_mb:7.1f}")


if __name__ == "__main__":
    main()
