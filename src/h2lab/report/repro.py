"""The report's Reproducibility section (its footer): the experiment, seeds, CPU use, the
emulator's drops, shards, tool versions, the machines that ran the trials, then the parts
given to it (failed requests, replay coverage, priority signals) and the configuration. Read
from a :class:`TrialFrame`: a million trials are counted per distinct value, not per row."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path

import numpy as np

import h2lab
from h2lab.analysis.machines import DELAY_OVERHEAD_KEY, MACHINE_KEYS, Machines, machines
from h2lab.report import artifacts
from h2lab.report import html as h
from h2lab.results import CPU_SATURATED_PCT
from h2lab.store.frame import Texts, TrialFrame
from h2lab.version import short_commit


def present(texts: Texts) -> dict[str | None, int]:
    """The texts the rows hold, each with its count."""
    codes, counts = np.unique(texts.codes, return_counts=True)
    return {texts.values[c]: n for c, n in zip(codes.tolist(), counts.tolist(), strict=True)}


def _cpu_row(trials: TrialFrame) -> str:
    pct = trials.number("cpu_busy_pct")
    busy = sorted(pct[~np.isnan(pct)].tolist())
    if not busy:
        return "not recorded"
    saturated = int(np.count_nonzero(np.nan_to_num(trials.number("cpu_saturated"))))
    return (
        f"machine busy {statistics.median(busy):.0f}% (median over {len(busy)} trials), "
        f"max {busy[-1]:.0f}%; {saturated} trials at >= {CPU_SATURATED_PCT:.0f}% "
        "(cpu_saturated: their timings may include waiting for a core)"
    )


def _emulator_drops_row(trials: TrialFrame) -> str:
    recorded = trials.number("emulator_drops")
    drops = [int(d) for d in recorded[~np.isnan(recorded)].tolist()]
    if not drops:
        return "not recorded"
    hit = [d for d in drops if d > 0]
    if not hit:
        return f"none in {len(drops)} trials"
    return (
        f"{len(hit)} of {len(drops)} trials lost packets in Rattan's full sockets ({sum(hit)} "
        "in all; emulator_drops: their links lost more than the profile asks)"
    )


def _shards_row(trials: TrialFrame) -> str:
    """How many trials ran beside others (``h2lab run --jobs``), from each trial's config."""
    counts: dict[str, int] = defaultdict(int)
    for config, n in present(trials.text("config_json")).items():
        try:
            mark = json.loads(config or "").get("shard", "")
        except (ValueError, AttributeError):
            mark = ""
        counts[mark.partition("/")[2]] += n
    alone = counts.pop("", 0)
    parts = [f"{alone} one at a time"] if alone else []
    parts += [f"{n} as shards of --jobs {j}" for j, n in sorted(counts.items())]
    return "; ".join(parts) or "–"


NOT_TOOLS = {*MACHINE_KEYS, DELAY_OVERHEAD_KEY}
"""Keys of ``versions_json`` shown per machine, not as tool versions."""


def _machine_count(ms: Machines) -> str:
    line = f"{ms.count} machine{'' if ms.count == 1 else 's'} ran the {ms.attempts} trial attempts"
    line += " (warm-ups not counted)"
    if ms.unrecorded:
        line += f"; {ms.unrecorded} recorded no machine"
    return line + "."


def _machine_rows(ms: Machines) -> list[tuple[str, ...]]:
    def overhead(r: tuple[float, float] | None) -> str:
        if r is None:
            return "not recorded"
        return f"{r[0]:.3f} ms" if r[0] == r[1] else f"{r[0]:.3f}–{r[1]:.3f} ms"

    return [
        (
            r.machine or "not recorded",
            str(r.attempts),
            str(r.ok),
            "; ".join(r.cpu_models) or "unknown",
            "; ".join(r.kernels) or "unknown",
            overhead(r.delay_overhead_ms),
        )
        for r in ms.rows
    ]


def _machines(trials: TrialFrame) -> str:
    """The machines that ran the trials (``machine``, ``versions_json``), and a warning per
    cell whose successful trials ran on machines that differ in CPU model or kernel."""
    ms = machines(trials)
    parts = [h.h3("machines"), h.note(_machine_count(ms))]
    if ms.rows:
        headers = ("machine", "attempts", "ok", "cpu_model", "kernel", "rattan delay overhead")
        parts.append(h.table(headers, _machine_rows(ms), numeric={1, 2}))
    for c in ms.mixed:
        setups = ", ".join(f"{m} ({cpu}, kernel {k})" for m, cpu, k in c.setups)
        parts.append(
            h.warning(
                f"{c.cell.describe()}: its trials ran on machines that differ in "
                f"{' and '.join(c.differs)}: {setups}"
            )
        )
    if ms.count and not ms.mixed:
        parts.append(h.note("No cell ran on machines that differ in cpu_model or kernel."))
    return "".join(parts)


def _tool_versions(trials: TrialFrame) -> str:
    versions: dict[str, set[str]] = defaultdict(set)
    for vj in (v or "" for v in present(trials.text("versions_json"))):
        try:
            for tool, ver in json.loads(vj).items():
                if tool == "h2lab_commit":
                    versions["h2lab commit"].add(short_commit(str(ver)))
                elif tool not in NOT_TOOLS:
                    versions[str(tool)].add(str(ver))
        except (ValueError, AttributeError):
            versions["(unreadable versions_json)"].add(vj[:60])
    return "; ".join(f"{k} {', '.join(sorted(v))}" for k, v in sorted(versions.items())) or "–"


def experiments(trials: TrialFrame) -> list[str]:
    return sorted(str(e) for e in present(trials.text("experiment")))


def repro(out_dir: Path, trials: TrialFrame, rng_seed: int, failed: str) -> str:
    """The reproducibility table, the machines, ``failed`` (the requests that failed in the
    browser, :mod:`h2lab.report.failed`, and the replay coverage, :mod:`h2lab.report.coverage`),
    then the seeds and configuration."""
    exp = artifacts.experiment_info(out_dir)
    m = artifacts.machine()
    seeds = [int(s) for s in np.unique(trials.number("seed")).tolist()]
    rows = [
        ("experiment", ", ".join(experiments(trials)) or "–"),
        ("experiment file", exp.source or "not recorded (no experiment.json)"),
        ("experiment seed", "–" if exp.seed is None else str(exp.seed)),
        ("trials planned / attempts stored", f"{exp.trials or '–'} / {len(trials)}"),
        ("trial seeds (loss processes)", f"{len(seeds)} distinct, stored with every trial"),
        ("report seed (bootstrap, tree)", str(rng_seed)),
        ("outlier rule", exp.outlier_rule or "none (every value kept)"),
        ("CPU during trials", _cpu_row(trials)),
        ("packets the emulator dropped", _emulator_drops_row(trials)),
        ("trials at once", _shards_row(trials)),
        ("tool versions", _tool_versions(trials)),
        ("h2lab (report)", f"{h2lab.__version__}, commit {short_commit()}"),
        ("machine (report)", f"{m.node}: {m.system}"),
        (
            "CPUs, memory",
            f"{m.cpus or '?'} CPUs, "
            + ("?" if m.memory_bytes is None else f"{m.memory_bytes / 2**30:.1f} GiB"),
        ),
        ("Python", m.python),
    ]
    parts = [h.table(("", ""), rows), _machines(trials), failed]
    if seeds:
        parts.append(h.details("trial seeds", h.pre(" ".join(str(s) for s in seeds[:1000]))))
    if exp.text:
        parts.append(h.details("experiment file", h.pre(exp.text)))
    if len(trials):
        first = trials.text("config_json").at(0) or ""
        try:
            config = json.dumps(json.loads(first), indent=1, sort_keys=True)
        except ValueError:
            config = first
        parts.append(h.details("resolved configuration of the first trial", h.pre(config)))
    return "".join(parts)
