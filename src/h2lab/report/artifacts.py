"""What the report reads besides the database: a trial's artifact folder (filmstrip frames,
visual progress, frame logs), the experiment file, and the machine it runs on."""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import os
import platform
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from h2lab.analysis.verdict import OutlierRule
from h2lab.artifacts import EXPERIMENT_FILE, FILMSTRIP_DIR, NGHTTP_OUT, VISUAL_PROGRESS
from h2lab.report.svg.waterfall import TimelineRow
from h2lab.report.timeline import frame_rows_from_log

THUMB_WIDTH_PX = 128
"""Filmstrip frame width in the report (WebPageTest's filmstrip thumbnails are about as wide)."""
_FRAME_NAME = re.compile(r"^(\d+(?:\.\d+)?)ms\.(jpg|jpeg|png)\Z")


def filmstrip_frames(artifacts: Path) -> list[tuple[float, str]]:
    """(ms from navigation start, file name) of the frames Chromium kept with
    ``chromium:filmstrip=1`` (``filmstrip/<t>ms.jpg``), in time order; [] when none."""
    folder = artifacts / FILMSTRIP_DIR
    if not folder.is_dir():
        return []
    out = []
    for p in folder.iterdir():
        m = _FRAME_NAME.match(p.name)
        if m:
            out.append((float(m.group(1)), p.name))
    return sorted(out)


def thumbnail_uri(path: Path, width_px: int = THUMB_WIDTH_PX) -> str:
    """A small JPEG of an image as a ``data:`` URI."""
    with Image.open(path) as im:
        rgb = im.convert("RGB")
        height = max(1, round(rgb.height * width_px / max(1, rgb.width)))
        small = rgb.resize((width_px, height))
    buf = io.BytesIO()
    small.save(buf, format="JPEG", quality=70)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def visual_progress(artifacts: Path) -> list[tuple[float, float]] | None:
    """(ms, visual completeness 0..1) from ``visual-progress.json``; None when absent."""
    path = artifacts / VISUAL_PROGRESS
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        return [(float(t), float(p)) for t, p in data.get("progress", [])]
    except (ValueError, TypeError):
        return None


def frame_log_rows(artifacts: Path) -> tuple[list[TimelineRow], list[str]]:
    """Streams from the nghttp ``-v`` frame logs of a trial (``nghttp-<i>.out``) and the files
    read; ([], []) when the trial has none or they hold no DATA frame."""
    rows: list[TimelineRow] = []
    files = []
    if not artifacts.is_dir():
        return [], []
    for p in sorted(artifacts.glob(NGHTTP_OUT.format(i="*"))):
        found = frame_log_rows_of(p)
        if found:
            rows += found
            files.append(p.name)
    return rows, files


def frame_log_rows_of(path: Path) -> list[TimelineRow]:
    return frame_rows_from_log(path.read_text(errors="replace"), path.stem)


@dataclass(frozen=True)
class Machine:
    system: str
    """uname: system, release, version, machine"""
    node: str
    cpus: int | None
    memory_bytes: int | None
    python: str


def machine() -> Machine:
    u = platform.uname()
    memory = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = int(line.split()[1]) * 1024
                break
    except OSError:
        pass
    return Machine(
        f"{u.system} {u.release} {u.version} {u.machine}",
        u.node,
        os.cpu_count(),
        memory,
        platform.python_version(),
    )


MAX_EXPERIMENT_FILE_BYTES = 64 * 1024


@dataclass(frozen=True)
class ExperimentInfo:
    name: str | None
    source: str | None
    seed: int | None
    trials: int | None
    text: str | None
    """the experiment file's content when it is still there (and small)"""
    outlier_rule: OutlierRule | None = None
    """the experiment's ``outlier_rule`` (None: every value kept)"""
    compare: tuple[str, tuple[str, ...]] | None = None
    """the experiment's ``[compare]``: (factor, baselines)"""
    levels: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    """each factor the experiment lists with several levels: its levels in the file's order"""


def experiment_info(out_dir: Path) -> ExperimentInfo:
    """``DIR/experiment.json`` (written by ``h2lab run``/``demo``) and the file it names."""
    path = out_dir / EXPERIMENT_FILE
    if not path.is_file():
        return ExperimentInfo(None, None, None, None, None)
    try:
        data = json.loads(path.read_text())
    except ValueError:
        return ExperimentInfo(None, None, None, None, None)
    source = data.get("source")
    text = None
    if isinstance(source, str):
        src = Path(source)
        if src.is_file() and src.stat().st_size <= MAX_EXPERIMENT_FILE_BYTES:
            text = src.read_text(errors="replace")
    return ExperimentInfo(
        data.get("name"),
        source if isinstance(source, str) else None,
        data.get("seed") if isinstance(data.get("seed"), int) else None,
        data.get("trials") if isinstance(data.get("trials"), int) else None,
        text,
        "2sd" if data.get("outlier_rule") == "2sd" else None,
        _compare_of(data.get("compare")),
        _levels_of(data.get("levels")),
    )


def _levels_of(value: object) -> dict[str, tuple[str, ...]]:
    if not isinstance(value, dict):
        return {}
    return {
        str(k): tuple(str(v) for v in lv)
        for k, lv in value.items()
        if isinstance(lv, list) and len(lv) > 1
    }


def _compare_of(value: object) -> tuple[str, tuple[str, ...]] | None:
    if isinstance(value, dict):
        factor, baselines = value.get("factor"), value.get("baselines")
        if isinstance(factor, str) and isinstance(baselines, list):
            return factor, tuple(str(b) for b in baselines)
    return None
