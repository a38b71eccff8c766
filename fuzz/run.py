"""Run the fuzz targets (:mod:`fuzz.targets`) under atheris, coverage-guided, for a given time.

``python -m fuzz.run --seconds 300`` fuzzes every target for 300 s in turn (``--only warc,har``
for some), each in a process of its own (atheris instruments h2lab, warcio and the harness,
libFuzzer mutates): inputs run at most :data:`TIMEOUT_S` each and the process at most
:data:`RSS_LIMIT_MB`. The corpus each target grows is kept under ``$H2LAB_CACHE/fuzz/`` (the
next run starts from it), the seeds are made anew each run (:mod:`fuzz.seeds`), and an input
that fails is written to ``$H2LAB_CACHE/fuzz/findings/``. At the end a table gives, per
target, executions, coverage (libFuzzer's ``cov`` edges and ``ft`` features), peak memory, the
slowest input, and findings; the exit code is 1 when anything was found. ``make fuzz``
runs it (``FUZZ_SECONDS``, default 60 per target). docs/fuzzing.md says more.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

TIMEOUT_S = 5
"""An input that runs longer is a finding."""
RSS_LIMIT_MB = 2048
"""The stated memory bound of an importer under fuzzing (the Python process whole)."""
MAX_LEN = {"warc": 262144, "har": 262144, "page-archive": 65536, "folder": 8192}
"""Longest input per target (others: :data:`DEFAULT_MAX_LEN`)."""
DEFAULT_MAX_LEN = 16384

_STATUS = re.compile(r"^#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+).*?exec/s: (\d+) rss: (\d+)Mb")
_FINAL = re.compile(r"^stat::(number_of_executed_units|peak_rss_mb): (\d+)")
_SLOW = re.compile(r"^Slowest unit: (\d+) s")
_WRITTEN = re.compile(r"Test unit written to (\S+)")


@dataclass
class Outcome:
    target: str
    seconds: float = 0.0
    executions: int = 0
    cov: int = 0
    ft: int = 0
    peak_rss_mb: int = 0
    slowest_s: int = 0
    corpus: int = 0
    exit_code: int = 0
    findings: list[str] = field(default_factory=list)
    slow_units: list[str] = field(default_factory=list)
    """inputs past 1 s but within :data:`TIMEOUT_S` (libFuzzer keeps them: not findings)"""

    def read(self, line: str) -> None:
        """Take what one line of libFuzzer's output says."""
        if m := _STATUS.match(line):
            self.executions, self.cov, self.ft = int(m[1]), int(m[2]), int(m[3])
            self.peak_rss_mb = max(self.peak_rss_mb, int(m[5]))
        elif m := _FINAL.match(line):
            if m[1] == "peak_rss_mb":
                self.peak_rss_mb = max(self.peak_rss_mb, int(m[2]))
            else:
                self.executions = int(m[2])
        elif m := _SLOW.match(line):
            self.slowest_s = max(self.slowest_s, int(m[1]))
        elif m := _WRITTEN.search(line):
            slow = "slow-unit-" in m[1].rsplit("/", 1)[-1]
            (self.slow_units if slow else self.findings).append(m[1])


def state() -> Path:
    from h2lab.paths import cache_root

    return cache_root() / "fuzz"


def fuzz_one(name: str, seconds: float, on_line: object = None) -> Outcome:
    """Fuzz target ``name`` for ``seconds`` in a child process."""
    from fuzz.seeds import write_seeds
    from fuzz.targets import SCRATCH_ENV

    root = state()
    corpus, seeds = root / "corpus" / name, root / "seeds" / name
    findings = root / "findings"
    for folder in (corpus, findings):
        folder.mkdir(parents=True, exist_ok=True)
    for old in seeds.glob("seed-*"):
        old.unlink()
    write_seeds(name, seeds)
    args = [
        sys.executable, "-m", "fuzz.run", "--child", name, "--",
        str(corpus), str(seeds),
        f"-max_total_time={max(1, round(seconds))}", f"-timeout={TIMEOUT_S}",
        f"-rss_limit_mb={RSS_LIMIT_MB}", f"-max_len={MAX_LEN.get(name, DEFAULT_MAX_LEN)}",
        f"-artifact_prefix={findings}/{name}-", "-report_slow_units=1",
        "-print_final_stats=1", "-close_fd_mask=1",
    ]  # fmt: skip
    outcome = Outcome(name)
    start = time.monotonic()
    # the child's scratch folder is made and removed here: libFuzzer ends its process with
    # _exit, so the child's own clean-up would never run
    scratch = Path(tempfile.mkdtemp(prefix="h2lab-fuzz-"))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    env[SCRATCH_ENV] = str(scratch)
    try:
        with subprocess.Popen(
            args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, errors="replace",
            env=env, cwd=Path(__file__).resolve().parents[1],
        ) as proc:  # fmt: skip
            assert proc.stderr is not None
            for line in proc.stderr:
                outcome.read(line)
                if callable(on_line):
                    on_line(outcome)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    outcome.exit_code = proc.returncode
    outcome.seconds = time.monotonic() - start
    outcome.corpus = sum(1 for _ in corpus.iterdir())
    return outcome


def child(name: str, libfuzzer_args: list[str]) -> None:
    """The fuzzing process: instrument, then hand ``name``'s harness to libFuzzer."""
    import atheris

    with atheris.instrument_imports(include=["h2lab", "warcio", "fuzz"]):
        from fuzz import targets

        run = targets.TARGETS[name].run
        with contextlib.suppress(Exception):  # the empty input's answer is fuzzing's job
            run(b"")  # its lazy imports happen here, instrumented
    atheris.Setup([sys.argv[0], *libfuzzer_args], run)
    atheris.Fuzz()


def table(outcomes: list[Outcome]) -> str:
    """The closing table, one row per target, figures with their units."""
    rows = [
        "target        seconds  executions  exec/s   cov    ft  corpus  peak_rss_MB  "
        "slowest_s  findings"
    ]
    for o in outcomes:
        rate = o.executions / o.seconds if o.seconds else 0.0
        rows.append(
            f"{o.target:<12} {o.seconds:8.0f} {o.executions:11d} {rate:7.0f} {o.cov:5d} "
            f"{o.ft:5d} {o.corpus:7d} {o.peak_rss_mb:12d} {o.slowest_s:10d}  "
            + (", ".join(o.findings) or (f"exit {o.exit_code}" if o.exit_code else "0"))
        )
    total = sum(o.seconds for o in outcomes)
    execs = sum(o.executions for o in outcomes)
    rows.append(f"total        {total:8.0f} {execs:11d}   (fuzzing time {total / 3600:.2f} h)")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    from fuzz.targets import TARGETS

    parser = argparse.ArgumentParser(prog="python -m fuzz.run", description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="per target (default 60)")
    parser.add_argument("--only", default="", help="comma-separated targets (default: all)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.rest)
        return 0
    names = [n for n in args.only.split(",") if n] or list(TARGETS)
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        print(f"command line: --only: unknown target {unknown[0]!r} (known: {', '.join(TARGETS)})")
        return 2
    outcomes = _run_all(names, args.seconds)
    print(table(outcomes))
    return 1 if any(o.findings or o.exit_code for o in outcomes) else 0


def _run_all(names: list[str], seconds: float) -> list[Outcome]:
    """Each target in turn, under a progress bar with the time left."""
    from h2lab.cli.common import progress

    outcomes = []
    with progress() as bar:
        task = bar.add_task("fuzzing", total=len(names) * seconds, status="")
        for i, name in enumerate(names):

            def show(o: Outcome, i: int = i, started: float = time.monotonic()) -> None:
                bar.update(
                    task,
                    completed=min(i * seconds + time.monotonic() - started, (i + 1) * seconds),
                    status=f"{o.target}: {o.executions} execs, cov {o.cov}",
                )

            outcomes.append(fuzz_one(name, seconds, show))
            bar.update(task, completed=(i + 1) * seconds)
    return outcomes


if __name__ == "__main__":
    sys.exit(main())
