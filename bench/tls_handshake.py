"""What does TLS 1.2 cost against TLS 1.3? (prints a table; not a test)

    .venv/bin/python bench/tls_handshake.py [--out DIR] [--quick]

Runs ``experiments/tls-handshake.toml`` (one object over h1s at RTT 200 ms, 10 Mbit/s; nginx
and the Go origin; Chromium and h2load; ``tls`` 1.2 and 1.3, 5 repetitions; resumes in DIR)
and prints, per server and client, the median ``ttfb_ms`` and ``connect_ms`` of each TLS
version and the difference of the medians, against what the lower bound expects:
(handshake round trips of TLS 1.2 − of TLS 1.3) × RTT, from
:func:`h2lab.analysis.lower_bound.handshake_rtts` (one RTT: 200 ms). Target: within 10%.
Needs root.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
from collections import defaultdict
from pathlib import Path

from h2lab.analysis.lower_bound import handshake_rtts
from h2lab.results import TrialRecord
from h2lab.spec.experiment import load_experiment
from h2lab.store import Store

ROOT = Path(__file__).resolve().parents[1]
H2LAB = str(ROOT / ".venv" / "bin" / "h2lab")
EXPERIMENT = ROOT / "experiments" / "tls-handshake.toml"
TARGET = 0.10
METRICS = ("ttfb_ms", "connect_ms")


def medians(trials: list[TrialRecord], metric: str) -> dict[tuple[str, str, str], float]:
    """(server, client, tls) -> median of ``metric`` over the successful trials."""
    values: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for t in trials:
        v = getattr(t, metric)
        if t.status == "ok" and v is not None:
            values[(t.cell.server, t.cell.client, str(t.cell["tls"]))].append(float(v))
    return {k: statistics.median(v) for k, v in values.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="results folder (default: a temporary one)")
    parser.add_argument("--quick", action="store_true", help="one repetition")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="h2lab-tls-"))
    subprocess.run(
        [H2LAB, "run", str(EXPERIMENT), "--out", str(out), *(["--quick"] * args.quick)],
        check=True,
    )
    exp = load_experiment(EXPERIMENT, quick=args.quick)
    (network,) = exp.factors["network"]
    rtt_ms = network.rtt_ms
    expected = (handshake_rtts("h1s", "1.2") - handshake_rtts("h1s", "1.3")) * rtt_ms
    store = Store(out)
    try:
        trials = store.trials(experiment=exp.name)
    finally:
        store.close()
    print(f"results: {out}; RTT {rtt_ms:g} ms; expected difference {expected:.0f} ms")
    print(f"{'server':8} {'client':10} {'metric':11} {'tls1.2':>8} {'tls1.3':>8} {'diff':>8} ok")
    for metric in METRICS:
        med = medians(trials, metric)
        for server, client in sorted({(s, c) for s, c, _ in med}):
            old, new = med.get((server, client, "1.2")), med.get((server, client, "1.3"))
            if old is None or new is None:
                print(f"{server:8} {client:10} {metric:11} {'–':>8} {'–':>8} {'–':>8}")
                continue
            diff = old - new
            ok = abs(diff - expected) <= TARGET * expected
            print(
                f"{server:8} {client:10} {metric:11} {old:8.1f} {new:8.1f} {diff:8.1f} "
                f"{'yes' if ok else 'NO'}"
            )


if __name__ == "__main__":
    main()
