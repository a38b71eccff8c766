"""Chaos soak on a local Ray cluster (issue #44): 1,000 short trials on two lab nodes, a lab
node killed (``kill -9``) every 100 ok trials and started again, the driver killed once and
the same command run again (:mod:`h2lab.cluster.chaos`). Prints every trial key's outcome,
the driver's file descriptors and memory through the run, what is left after ``h2lab clean``,
and the verdict (exit 1 when it does not hold).

    .venv/bin/python bench/chaos.py [--trials 1000] [--kill-every 100] [--driver-kill-at 550]

Needs root. tests/integration/test_chaos.py runs the short version (40 trials, one kill).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from h2lab.cluster.chaos import soak


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--kill-every", type=int, default=100)
    parser.add_argument("--driver-kill-at", type=int, default=550)
    parser.add_argument("--port", type=int, default=6397)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="chaos-", dir="/var/tmp") as tmp:
        result = soak(
            Path(tmp),
            args.trials,
            kill_every=args.kill_every,
            driver_kill_at=args.driver_kill_at or None,
            port=args.port,
            say=lambda line: print(line, file=sys.stderr, flush=True),
        )
    for line in result.lines():
        print(line)
    problems = result.flat()
    if result.ok_keys != args.trials or result.keys_ok_twice:
        problems.append(f"{result.ok_keys} of {args.trials} keys ok, {result.keys_ok_twice} twice")
    problems += result.leftovers
    print("verdict: " + ("holds" if not problems else "FAILS: " + "; ".join(problems)))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
