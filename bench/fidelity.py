"""Fidelity of the emulated link: asked vs measured over a grid (prints a table; not a test).

    .venv/bin/python bench/fidelity.py [--quick] [--rtts 20,200] [--rates 100] [--losses 0]

Grid: RTT {0, 20, 100, 200} ms x rate {1, 10, 100} Mbit/s x loss {0, 1, 2}%.
Targets (issue #3): mean RTT error <= max(0.5 ms, 1%); loss-free goodput within +-3% of
rate x 1448/1500; measured loss inside the 99% binomial interval; loss-free goodput at RTT 200 ms
within 3% of that at RTT 20 ms (the rate must not depend on the delay). Also prints Rattan's CPU
use (% of one core) while it carries a bulk flow. Needs root.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time

from h2lab.net.check import check_static
from h2lab.net.check.estimators import binomial_interval
from h2lab.net.lab import Lab
from h2lab.spec.network import parse_network
from h2lab.spec.tcp import TcpSettings

PROBES = 1000  # loss probes per direction and row (check_static quick mode)


def summary(
    rtts: tuple[int, ...],
    rates: tuple[int, ...],
    goodput: dict[tuple[int, int], float],
    pooled: dict[int, list[int]],
) -> int:
    """Print the grid's delay independence and pooled loss; the number of failed checks."""
    failures = 0
    print()
    print("delay independence (loss-free downlink goodput, RTT 200 ms vs 20 ms):")
    far = max(rtts)
    for rate in rates:
        near_gp, far_gp = goodput.get((20, rate)), goodput.get((far, rate))
        if near_gp and far_gp:
            diff = (far_gp - near_gp) / near_gp * 100
            ok = abs(diff) <= 3
            failures += not ok
            verdict = "yes" if ok else "NO"
            print(
                f"  {rate:>4} Mbit/s: {near_gp:.3f} vs {far_gp:.3f} Mbit/s ({diff:+.2f}%) {verdict}"
            )
    print()
    print("loss pooled over the grid (per-row 99% intervals fail 1% of the time by chance):")
    for loss, (lost, sent) in sorted(pooled.items()):
        lo, hi = binomial_interval(sent, loss / 100)
        ok = lo <= lost <= hi
        print(f"  asked {loss}%: {lost}/{sent} = {lost / sent * 100:.3f}% 99% [{lo}, {hi}] "
              f"{'yes' if ok else 'NO'}")  # fmt: skip
    return failures


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="RTT 20/100, rates 10/100, loss 0/1")

    def ints(text: str) -> tuple[int, ...]:
        return tuple(int(x) for x in text.split(","))

    ap.add_argument("--rtts", type=ints, help="only these RTTs, ms (e.g. 20,200)")
    ap.add_argument("--rates", type=ints, help="only these rates, Mbit/s (e.g. 100)")
    ap.add_argument("--losses", type=ints, help="only these losses, %% (e.g. 0)")
    ap.add_argument("--cc", default="cubic", help="congestion control of the goodput flows")
    args = ap.parse_args()
    rtts = args.rtts or ((20, 100) if args.quick else (0, 20, 100, 200))
    rates = args.rates or ((10, 100) if args.quick else (1, 10, 100))
    losses = args.losses or ((0, 1) if args.quick else (0, 1, 2))
    header = (
        f"{'rtt_ms':>6} {'rate_mbps':>9} {'loss_pct':>8} | {'rtt_mean_ms':>11} {'ok':>3} | "
        f"{'down_goodput_mbps':>17} {'up_goodput_mbps':>15} {'ok':>3} | "
        f"{'loss_up_pct':>11} {'loss_down_pct':>13} {'ok':>3} | {'rattan_cpu_pct':>14}"
    )
    print(header)
    print("-" * len(header))
    failures = 0
    goodput: dict[tuple[int, int], float] = {}
    pooled: dict[int, list[int]] = {}  # asked loss % -> [lost, sent] over all rows
    t0 = time.monotonic()
    with Lab(("fidelity.h2lab.test",)) as lab:
        origin_ip = lab.origin_ips["fidelity.h2lab.test"]
        for rtt, rate, loss in itertools.product(rtts, rates, losses):
            profile = parse_network(f"rtt={rtt}ms,rate={rate}Mbps,loss={loss}%")
            with lab.link(
                profile, seed=rtt * 1000 + rate * 10 + loss, tcp=TcpSettings(args.cc)
            ) as link:
                # loss-free rows: a 10 s flow, first 4 s omitted: steady state before cubic first
                # overflows the default 1000-packet queue (at 10 Mbit/s that takes 12-14 s)
                rows = check_static(
                    lab, link, profile, origin_ip, quick=True, queueing=False,
                    flow_s=3.0 if loss else 10.0, rtt_count=30,
                )  # fmt: skip
            by = {(r.metric, r.direction): r for r in rows}
            rtt_row = by[("rtt", "both")]
            down, up = by[("goodput", "down")], by[("goodput", "up")]
            lu, ld = by[("loss", "up")], by[("loss", "down")]
            for r in (lu, ld):
                pooled.setdefault(loss, [0, 0])
                pooled[loss][0] += round((r.measured or 0) / 100 * PROBES)
                pooled[loss][1] += PROBES
            cpu = max(r.measured or 0 for r in rows if r.metric == "emulator_cpu")
            gp_ok = None if loss else bool(down.passed and up.passed)
            loss_ok = bool(lu.passed and ld.passed)
            failures += (not rtt_row.passed) + (gp_ok is False) + (not loss_ok)
            if not loss:
                goodput[(rtt, rate)] = down.measured or 0.0

            def yn(v: bool | None) -> str:
                return "-" if v is None else ("yes" if v else "NO")

            print(
                f"{rtt:>6} {rate:>9} {loss:>8} | "
                f"{rtt_row.measured:>11.3f} {yn(rtt_row.passed):>3} | "
                f"{down.measured:>17.3f} {up.measured:>15.3f} {yn(gp_ok):>3} | "
                f"{lu.measured:>11.2f} {ld.measured:>13.2f} {yn(loss_ok):>3} | {cpu:>14.1f}",
                flush=True,
            )
    failures += summary(rtts, rates, goodput, pooled)
    print(f"\n{failures} failed checks; wall time {time.monotonic() - t0:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
