"""The reprioritization test per server (docs/servers.md, "Reprioritization"): prints the table
and writes one stream timeline (SVG) per server, of its median run, into docs/img/.

    .venv/bin/python scripts/reprio_figures.py [--runs 5] [--servers nginx h2o] [--out DIR]
    .venv/bin/python scripts/reprio_figures.py --chromium [--runs 3] [--servers ...]

``--chromium``: the second view, Chromium loading :func:`h2lab.reprio.study.browser_page` (ten
images, a stylesheet a script adds 1.5 s later) as h2lab trials; its request -> last byte from
the trial's resource timings; no figures.

Needs root (namespaces); DIR is docs/img unless given. Every run is a fresh connection to a
server started once per server; see :mod:`h2lab.reprio.study` for the page, the link and the
client's priorities.
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
from pathlib import Path

from h2lab.reprio import study as reprio
from h2lab.runner.matrix import expand
from h2lab.runner.run import run_trials
from h2lab.spec.experiment import Experiment, validate_factors
from h2lab.store import Store

EXTRA = ("origin:scheduler=client,notsent_lowat=16KB",)
"""The origin's client scheduler with its socket buffer kept small: what the buffers cost."""


def slug(server: str) -> str:
    """``origin:scheduler=client`` -> ``origin-scheduler-client`` (a file name)."""
    return re.sub(r"[^a-z0-9]+", "-", server.lower()).strip("-")


def row(server: str, outcomes: list[reprio.Outcome]) -> str:
    """One markdown table row: medians and ranges over the runs."""
    high = [o.high_ms for o in outcomes]
    low = [o.low_median_ms for o in outcomes]
    after = [o.low_after_high for o in outcomes]
    ahead = [o.bytes_ahead / 1e6 for o in outcomes]
    return (
        f"| `{server}` | {len(outcomes)} | {statistics.median(high):.0f} "
        f"({min(high):.0f}-{max(high):.0f}) | {statistics.median(low):.0f} | "
        f"{min(after)}-{max(after)} of {reprio.IMAGES} | {statistics.median(ahead):.2f} |"
    )


def browser_row(server: str, runs: int, folder: Path) -> str:
    """Chromium trials of the browser page against ``server``: one markdown row."""
    page = reprio.browser_page(folder / "pages")
    raw = {
        "protocol": ["h2s"],
        "network": [reprio.NETWORK],
        "page": [str(page.docroot)],
        "server": [server],
        "client": ["chromium"],
    }
    exp = Experiment(name="reprio-chromium", factors=validate_factors("reprio", raw),
                     repetitions=runs)  # fmt: skip
    store = Store(folder / "out")
    try:
        run_trials(expand(exp), store, timeout_s=60)
        css_ms, img_ms, after = [], [], []
        for trial in store.trials(status="ok"):
            assert trial.id is not None
            rows = store.resources(trial.id)
            css = next(r for r in rows if r["url"].endswith("/late.css"))
            imgs = [r for r in rows if r["url"].endswith(".png")]
            css_ms.append(css["end_ms"] - css["start_ms"])
            img_ms.append(statistics.median(r["end_ms"] - r["start_ms"] for r in imgs))
            after.append(sum(1 for r in imgs if r["end_ms"] > css["end_ms"]))
            print(f"{server} chromium: late.css ({css['priority']}) {css_ms[-1]:.0f} ms, "
                  f"images ({imgs[0]['priority']}) {img_ms[-1]:.0f} ms, {after[-1]} after it",
                  flush=True)  # fmt: skip
    finally:
        store.close()
    if not css_ms:
        return f"| `{server}` | 0 | every trial failed | | |"
    return (
        f"| `{server}` | {len(css_ms)} | {statistics.median(css_ms):.0f} "
        f"({min(css_ms):.0f}-{max(css_ms):.0f}) | {statistics.median(img_ms):.0f} | "
        f"{min(after)}-{max(after)} of {reprio.IMAGES} |"
    )


def chromium(servers: list[str], runs: int) -> None:
    rows = []
    for server in servers:
        with tempfile.TemporaryDirectory() as folder:
            rows.append(browser_row(server, runs, Path(folder)))
    print(
        "| server | n | late.css request -> last byte, ms: median (range) | images, ms (median "
        "of medians) | images ending after late.css |"
    )
    print("| --- | --- | --- | --- | --- |")
    print("\n".join(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--servers", nargs="+", default=[*reprio.SERVERS, *EXTRA])
    parser.add_argument("--out", type=Path, default=Path("docs/img"))
    parser.add_argument("--chromium", action="store_true", help="Chromium trials, no figures")
    args = parser.parse_args()
    if args.chromium:
        chromium(args.servers, args.runs)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for server in args.servers:
        with tempfile.TemporaryDirectory() as pages:
            outcomes = reprio.run(server, Path(pages), args.runs)
        for o in outcomes:
            print(
                f"{server}: late.css {o.high_ms:.0f} ms, images {o.low_median_ms:.0f} ms, "
                f"{o.low_after_high} images after it, {o.bytes_ahead} B ahead",
                flush=True,
            )
        median = sorted(outcomes, key=lambda o: o.high_ms)[len(outcomes) // 2]
        svg = args.out / f"reprio-{slug(server)}.svg"
        svg.write_text(reprio.timeline_svg(median))
        rows.append(row(server, outcomes))
    print(
        "| server | n | late.css request -> last byte, ms: median (range) | images, ms (median "
        "of medians) | images ending after late.css | image MB arriving while late.css was "
        "outstanding (median) |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
