"""browsertime 28.3.0's own ``visualmetrics-portable.py`` (npm tarball, unpacked by the setup
into ~/.cache/h2lab/npm) run on a folder of frames, as the reference for h2lab's WebPageTest
SpeedIndex mode; and browsertime's ``extraMetrics`` (VisualComplete85/95/99 from the
"Visual Progress" line, lib/video/postprocessing/visualmetrics/extraMetrics.js) in Python.

The script takes a folder of frames (``--dir``, files ``ms_<ms, 6 digits>.jpg``, the first
``ms_000000``) and prints its metrics as JSON (``--json``). Its ``main`` first checks for
ffmpeg (``check_config`` -> ``get_decimate_filter``), which this machine does not have and a
folder of frames does not use (ffmpeg only turns a video into frames): the driver below runs
``main`` with that one check answered, nothing else changed.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from PIL import Image

from h2lab.metrics.visual import Frame

VISUALMETRICS = (
    Path.home() / ".cache/h2lab/npm/browsertime-28.3.0/visualmetrics/visualmetrics-portable.py"
)

_DRIVER = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("visualmetrics", sys.argv[1])
vm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(vm)
vm.get_decimate_filter = lambda: "mpdecimate"  # ffmpeg: not used for a folder of frames
sys.argv = ["visualmetrics", "--dir", sys.argv[2], "--json"]
vm.main()
"""


def write_frames(frames: Sequence[Frame], folder: Path) -> list[Frame]:
    """Write ``frames`` (JPEG) as the script reads them: the first as ``ms_000000.jpg`` (its
    start state), the others by their time in whole ms. Given a video, visualmetrics drops the
    frames that match the ones before them (``eliminate_duplicate_frames``); a folder is taken
    as it is, so a frame whose pixels equal the previous one's is left out here (a Chrome
    trace has such frames: two all-white screenshots before the first paint). Returns every
    frame as h2lab is given it: the same images at the same whole-ms times."""
    folder.mkdir(parents=True, exist_ok=True)
    ordered = sorted(frames, key=lambda f: f.t_ms)
    same, previous = [], b""
    for n, frame in enumerate(ordered):
        t_ms = 0 if n == 0 else int(frame.t_ms)
        same.append(Frame(float(int(frame.t_ms)), frame.image))
        with Image.open(io.BytesIO(frame.image)) as img:
            pixels = img.convert("RGB").tobytes()
        if pixels == previous:
            continue
        previous = pixels
        path = folder / f"ms_{t_ms:06d}.jpg"
        assert not path.exists(), f"two frames in one ms: {path.name}"
        path.write_bytes(frame.image)
    return same


def run_visualmetrics(folder: Path) -> dict[str, object]:
    """The script's JSON for the frames in ``folder``, with VisualComplete85/95/99 added as
    browsertime adds them."""
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(VISUALMETRICS), str(folder)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    metrics: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return extra_metrics(metrics)


def extra_metrics(metrics: dict[str, object]) -> dict[str, object]:
    """browsertime's ``extraMetrics``: the first time progress reaches 85, 95 and 99%; a later
    drop below a mark forgets it and every higher one."""
    out = dict(metrics)
    marks: dict[int, int | None] = {85: None, 95: None, 99: None}
    for item in str(metrics.get("VisualProgress", "")).split(","):
        t, _, p = item.strip().partition("=")
        time_ms, percent = int(t), int(p)
        for mark in marks:
            if percent >= mark and marks[mark] is None:
                marks[mark] = time_ms
        for mark in marks:
            if percent < mark:
                marks[mark] = None
    for mark, at in marks.items():
        out[f"VisualComplete{mark}"] = at
    return out
