"""Soak: 500 short trials in one run; open file descriptors, processes, namespaces and RSS at
the end must be within 10% of their values after the first 50 trials (issue #7).

    .venv/bin/python bench/soak.py [--trials 500] [--client h2load]

Short pages on a fast link; every trial commits to a throwaway store. Needs root.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from h2lab.net import netns
from h2lab.results import TrialRecord
from h2lab.runner.matrix import TrialSpec, expand
from h2lab.runner.run import run_trials
from h2lab.spec.experiment import Experiment, validate_factors
from h2lab.store import Store

CHECK_AFTER = 50
TOLERANCE = 0.10


@dataclass(frozen=True)
class Sample:
    trials: int
    fds: int
    """open file descriptors of this process"""
    processes: int
    """processes on the machine"""
    namespaces: int
    """named network namespaces"""
    rss_kib: int
    """resident memory of this process"""


def sample(trials: int) -> Sample:
    rss = next(
        int(line.split()[1])
        for line in Path("/proc/self/status").read_text().splitlines()
        if line.startswith("VmRSS:")
    )
    return Sample(
        trials=trials,
        fds=len(os.listdir("/proc/self/fd")),
        processes=sum(1 for p in os.listdir("/proc") if p.isdigit()),
        namespaces=len(netns.list_netns()),
        rss_kib=rss,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--client", default="h2load")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("bench/soak.py needs root (network namespaces)", file=sys.stderr)
        return 2
    factors = validate_factors(
        "soak",
        {
            "protocol": ["h1s", "h2s"],
            "network": ["rtt=2ms,rate=100Mbps"],
            "page": ["synthetic:n=4,size=2KB,origins=1"],
            "client": [args.client],
        },
    )
    exp = Experiment(name="soak", factors=factors, seed=1, repetitions=args.trials // 2)
    samples: list[Sample] = []
    done = 0

    def progress(t: TrialSpec, record: TrialRecord | None) -> None:
        nonlocal done
        done += 1
        if done in (CHECK_AFTER, args.trials):
            samples.append(sample(done))
        if done % 50 == 0:
            print(f"  {done} trials", file=sys.stderr, flush=True)

    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="h2lab-soak-") as tmp:
        store = Store(Path(tmp))
        try:
            records = run_trials(expand(exp), store, timeout_s=30, on_progress=progress)
        finally:
            store.close()
    wall_s = time.monotonic() - t0
    failed = sum(r.status != "ok" for r in records)
    first, last = samples[0], samples[-1]
    print(f"\n{args.trials} trials ({args.client}) in {wall_s:.0f} s, {failed} failed\n")
    print(
        f"{'resource':12s} {'after ' + str(first.trials):>12s} {'after ' + str(last.trials):>12s}"
    )
    ok = failed == 0
    for name in ("fds", "processes", "namespaces", "rss_kib"):
        a, b = getattr(first, name), getattr(last, name)
        within = b <= a * (1 + TOLERANCE) + (1 if name != "rss_kib" else 0)
        ok &= within
        print(f"{name:12s} {a:>12d} {b:>12d}  {'ok' if within else 'GROWS'}")
    verdict = "yes" if ok else "NO"
    print(f"\nwithin {TOLERANCE:.0%} of the values after {CHECK_AFTER} trials: {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
