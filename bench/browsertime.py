"""Page loads per minute of h2lab against browsertime, side by side: the same page, the same
Chromium, the same emulated link (issue #43: h2lab must do >= 10x browsertime's loads per
minute). Runs outside CI; needs root (the lab, and apt-get for what browsertime needs).

    flock /tmp/h2lab-bench.lock .venv/bin/python bench/browsertime.py [--loads 20]
        [--network cable] [--client chromium] [--browsertime-arg=ARG ...] [--keep DIR]
        [--install-only]

The page is the demo page ``synthetic:n=32,size=10KB,origins=2`` (33 requests, two origins),
served by nginx over h2 (TLS 1.3, ALPN h2) behind the ``cable`` link (28 ms, 5/1 Mbit/s:
Rattan between network namespaces). The browser is Debian's Chromium
(/usr/lib/chromium/chromium) in both.

- **h2lab**: ``h2lab load PAGE --protocol h2s --network cable --client chromium --repeat N``,
  the whole command timed: it makes its own lab (namespaces, Rattan's calibration, nginx, the
  link), then per load a new browser context in one kept headless Chromium, the load, a
  trace with screenshots -> FCP, SpeedIndex (h2lab's mode; ``--client
  chromium:speed_index=wpt`` for WebPageTest's), TBT, a HAR of the load and its resources, the
  link's counters, the row committed to the store.
- **browsertime** 24.8.1 (npm): ``browsertime -b chrome -n N --video --visualMetrics --xvfb``
  in the client namespace of a lab this script makes (nginx serving the page, the same link
  profile; that lab's set-up is not in its time), the whole command timed. Per load it starts
  a new Chromium through chromedriver (Debian's ``chromium-driver``, the same version as the
  browser) on an Xvfb screen, records the screen with ffmpeg (x11grab, 30 fps, lossless),
  loads the page, waits for its page-complete check (its defaults: first asked 5 s after the
  navigation, then every 1.5 s, true 8 s after loadEventEnd: ``pageCompleteCheckStartWait``,
  ``pageCompleteCheckPollTimeout``, ``pageCompleteWaitTime``), runs its browser scripts
  (navigation and paint timings, LCP, CLS, TBT...), makes the HAR from Chrome's performance
  log, converts the video to a viewable MP4, turns it into frames and visual metrics
  (visualmetrics-portable.py: SpeedIndex, first/last visual change, visual complete 85/95/99)
  and a filmstrip, and writes the timings onto the video. Video and visual metrics are off in
  browsertime's own defaults (sitespeed.io turns them on); here they are on, since they are how
  browsertime computes SpeedIndex, which h2lab computes on every load; everything else is
  browsertime's default (``--browsertime-arg`` adds to it). Chromium is told what h2lab's
  client tells it to stay offline and in the lab
  (:func:`h2lab.clients.browser.chromium.options.launch_flags`: no background networking or
  component updates, every name but the lab's origins "not found", the lab CA pinned by its
  SPKI hash; browsertime adds ``--ignore-certificate-errors`` of its own); headed on Xvfb, not
  headless, since browsertime's video is a screen recording.

Prints loads per minute of each, the ratio, and each one's median loadEventEnd (``plt_ms``),
first contentful paint and SpeedIndex, so that one sees both loaded the same page through the
same link. Exit 0 when h2lab's loads per minute are >= 10x browsertime's, 1 when not.

Most of browsertime's 20 s a load here is waiting and video work, not the 0.8 s page: its
page-complete check (about 10 s), the MP4 conversion and the timer overlay (about 4 s), the
visual metrics (about 3 s), a browser and chromedriver started per load. The 10x holds against
those defaults only: with ``--browsertime-arg=--pageCompleteCheckStartWait=500
--browsertime-arg=--pageCompleteWaitTime=1000 --browsertime-arg=--pageCompleteCheckPollTimeout=200
--browsertime-arg=--videoParams.convert=false --browsertime-arg=--videoParams.addTimer=false``
it did 7.9 s a load and the ratio was 5.7x, with the same SpeedIndex (docs/measured.md).

Installs, once, what browsertime needs (``--install-only`` stops there):

- browsertime :data:`BROWSERTIME_VERSION` from the npm registry: ``npm ci --ignore-scripts``
  of ``bench/browsertime-npm/package-lock.json`` (every one of its 178 packages pinned by
  version and integrity; browsertime's own checked against :data:`BROWSERTIME_INTEGRITY`
  first) into ``~/.cache/h2lab/npm/browsertime-<version>-install``. No install script runs:
  its chromedriver/geckodriver/edgedriver packages would download drivers from the internet;
  the driver is Debian's. Not 28.3.0 (scripts/setup.sh's, for its visualmetrics script only):
  it needs Node >= 22 (Node 20 here) and the registry here does not serve its pinned
  ``@sitespeed.io/edgedriver@149.0.4022`` and ``@sitespeed.io/log@2.0.0`` (npm ETARGET).
- Debian's ``chromium-driver`` at :data:`CHROMIUM_DRIVER_DEB` (Chromium's own version), and
  ``xvfb`` and ``ffmpeg`` for the video (apt-get, as root).
- the Python packages of visualmetrics-portable.py (numpy, OpenCV, Pillow, pyssim), pinned
  (:data:`VISUALMETRICS_PIP`), in a venv beside browsertime (PyPI).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from h2lab.clients.browser.chromium.options import launch_flags
from h2lab.clients.browser.load import page_url
from h2lab.clients.browser.options import DEVICES
from h2lab.errors import H2LabError, ProcessFailed
from h2lab.net import netns
from h2lab.net.lab import Lab
from h2lab.pages import Page, resolve_page
from h2lab.paths import cache_root
from h2lab.servers import ServeContext
from h2lab.servers import get as get_server
from h2lab.spec.network import parse_network
from h2lab.spec.tcp import TcpSettings
from h2lab.tls import LocalCA

ROOT = Path(__file__).resolve().parents[1]
H2LAB = str(ROOT / ".venv" / "bin" / "h2lab")
NPM_PROJECT = ROOT / "bench" / "browsertime-npm"
"""package.json and package-lock.json of the browsertime install (nothing else in it)"""

DEMO_PAGE = "synthetic:n=32,size=10KB,origins=2"
PROTOCOL = "h2s"
SERVER = "nginx"
TARGET_RATIO = 10.0
"""issue #43: h2lab's loads per minute at least this many times browsertime's"""

BROWSERTIME_VERSION = "24.8.1"
BROWSERTIME_INTEGRITY = (
    "sha512-b2oEcexKmib6Ke18osAUblApOEoEUTDwPG3qmCW1U3cdOlJiQPABruzxindDb5KG8RgFQ8ZEuyhjNnMNPeQhYQ=="
)  # fmt: skip
"""the registry's ``dist.integrity`` of browsertime-24.8.1.tgz (``npm view browsertime@24.8.1
dist.integrity``)"""
CHROMIUM_DRIVER_DEB = "156.0.8078.108-1~deb12u1"
"""Debian 12's chromium-driver; must be the installed chromium's version (chromedriver
drives only its own major version)"""
VIDEO_DEBS = ("xvfb", "ffmpeg")
"""the screen browsertime records and the recorder (any Debian 12 version)"""
VISUALMETRICS_PIP = (
    "numpy==2.4.6",
    "opencv-python-headless==5.0.0.93",
    "pillow==13.0.0",
    "scipy==1.17.1",
    "PyWavelets==1.9.0",
    "pyssim==0.7.1",
)
"""what visualmetrics-portable.py's ``--check`` asks for (numpy, cv2, PIL, ssim), and pyssim's
own dependencies; versions as pip chose them for Python 3.11 on 2026-11-27"""
PYTHON = "/usr/bin/python3.11"
"""Debian's interpreter, as scripts/setup.sh uses for the venv"""

XVFB_FIRST_DISPLAY = 99
"""browsertime's default display (lib/video/defaults.js); a later one when it is taken"""
TIMEOUT_S_PER_LOAD = 120.0
"""longest a load may take in either tool before the bench gives up (h2lab's default trial
timeout)"""


class BenchError(H2LabError):
    """The bench could not run: what it needed, and what it found."""


# -- what each tool measured (pure)


@dataclass(frozen=True)
class Measured:
    """One tool's N loads, its whole command timed."""

    tool: str
    """``h2lab`` or ``browsertime``"""
    wall_s: float
    """the whole command, start to exit"""
    plt_ms: tuple[float, ...]
    """loadEventEnd of each load, from navigation start"""
    fcp_ms: tuple[float, ...]
    """first contentful paint of each load"""
    speed_index_ms: tuple[float, ...]
    """SpeedIndex of each load"""

    @property
    def loads(self) -> int:
        return len(self.plt_ms)

    @property
    def loads_per_min(self) -> float:
        return self.loads / self.wall_s * 60

    @property
    def s_per_load(self) -> float:
        return self.wall_s / self.loads


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def parse_browsertime(doc: Any, wall_s: float, loads: int) -> Measured:
    """browsertime.json (one entry per URL) -> :class:`Measured`; a BenchError when it has
    not ``loads`` loads with their timings and visual metrics, or marks one as failed."""
    if not isinstance(doc, list) or len(doc) != 1:
        raise BenchError(f"browsertime.json: expected one URL's results, got {type(doc).__name__}")
    (result,) = doc
    if result.get("markedAsFailure"):
        raise BenchError(f"browsertime marked the run failed: {result.get('failureMessages')}")
    scripts, visual = result.get("browserScripts", []), result.get("visualMetrics", [])
    if len(scripts) != loads or len(visual) != loads:
        raise BenchError(
            f"browsertime.json: {len(scripts)} loads with timings and {len(visual)} with visual "
            f"metrics, expected {loads} of each"
        )
    timings = [s["timings"] for s in scripts]
    return Measured(
        tool="browsertime",
        wall_s=wall_s,
        plt_ms=tuple(float(t["loadEventEnd"]) for t in timings),
        fcp_ms=tuple(float(t["paintTiming"]["first-contentful-paint"]) for t in timings),
        speed_index_ms=tuple(float(v["SpeedIndex"]) for v in visual),
    )


def parse_h2lab(rows: Any, wall_s: float, loads: int) -> Measured:
    """``h2lab load --json``'s trial records -> :class:`Measured`; a BenchError naming the
    first failed trial, or when there are not ``loads`` of them."""
    failed = [r for r in rows if r["status"] != "ok"]
    if failed:
        raise BenchError(f"h2lab: {len(failed)} of {len(rows)} loads failed: {failed[0]['error']}")
    if len(rows) != loads:
        raise BenchError(f"h2lab: {len(rows)} loads, expected {loads}")
    return Measured(
        tool="h2lab",
        wall_s=wall_s,
        plt_ms=tuple(float(r["plt_ms"]) for r in rows),
        fcp_ms=tuple(float(r["fcp_ms"]) for r in rows if r["fcp_ms"] is not None),
        speed_index_ms=tuple(float(r["speed_index_ms"]) for r in rows),
    )


def chrome_args(hosts: Mapping[str, str], spki: str) -> list[str]:
    """browsertime's ``--chrome.args``: h2lab's Chromium switches for h2s (offline, names
    mapped to the lab, the lab CA pinned). chromedriver merges their ``--disable-features``
    with browsertime's own into one (seen in the browser's command line: both lists)."""
    return [f"--chrome.args={flag}" for flag in launch_flags(PROTOCOL, hosts, spki)]


# -- installing


def _run(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 900,
) -> str:
    """Run ``argv`` (``env`` added to this process's); its output, or ProcessFailed with the
    end of it."""
    proc = subprocess.run(
        argv, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True,
        timeout=timeout_s, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise ProcessFailed(argv, proc.returncode, (proc.stdout + proc.stderr)[-4000:])
    return proc.stdout


def deb_version(package: str) -> str | None:
    """The installed version of a Debian package, None when it is not installed."""
    proc = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}\t${Version}", package],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    status, _, version = proc.stdout.partition("\t")
    return version if proc.returncode == 0 and status.endswith(" installed") else None


def ensure_debian_packages() -> dict[str, str]:
    """chromium-driver (pinned), Xvfb and ffmpeg, installed with apt-get when missing; their
    versions, and Chromium's."""
    chromium = deb_version("chromium")
    if chromium != CHROMIUM_DRIVER_DEB:
        raise BenchError(
            f"chromium is {chromium or 'not installed'}, chromium-driver is pinned to "
            f"{CHROMIUM_DRIVER_DEB} (bench/browsertime.py CHROMIUM_DRIVER_DEB): the driver must "
            "be the browser's version; change the pin to chromium's"
        )
    wanted = {"chromium-driver": CHROMIUM_DRIVER_DEB, **dict.fromkeys(VIDEO_DEBS, "")}
    missing = [
        f"{name}={version}" if version else name
        for name, version in wanted.items()
        if deb_version(name) is None or (version and deb_version(name) != version)
    ]
    if missing:
        print(f"installing Debian packages: {' '.join(missing)}", file=sys.stderr)
        _run(["apt-get", "update", "-qq"])
        _run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing],
             env={"DEBIAN_FRONTEND": "noninteractive"}, timeout_s=1800)  # fmt: skip
    return {name: deb_version(name) or "?" for name in ("chromium", *wanted)}


def check_lock(lock: Any) -> None:
    """The shipped package-lock.json names browsertime at the pinned version and integrity
    (npm ci then checks every package against the lock)."""
    entry = lock.get("packages", {}).get("node_modules/browsertime", {})
    got = (entry.get("version"), entry.get("integrity"))
    if got != (BROWSERTIME_VERSION, BROWSERTIME_INTEGRITY):
        raise BenchError(
            f"{NPM_PROJECT / 'package-lock.json'}: browsertime {got[0]} ({got[1]}), expected "
            f"{BROWSERTIME_VERSION} ({BROWSERTIME_INTEGRITY})"
        )


@dataclass(frozen=True)
class Browsertime:
    """An installed browsertime and the Python its visual metrics run with."""

    script: Path
    """bin/browsertime.js"""
    python: Path
    """the venv's interpreter (browsertime's ``PYTHON``)"""


def ensure_browsertime() -> Browsertime:
    """browsertime from the npm registry (``npm ci --ignore-scripts`` of the shipped lock) and
    visualmetrics' Python packages, each done once: a stamp of what was installed is kept."""
    dest = cache_root() / "npm" / f"browsertime-{BROWSERTIME_VERSION}-install"
    names = ("package.json", "package-lock.json")
    files = {name: (NPM_PROJECT / name).read_bytes() for name in names}
    check_lock(json.loads(files["package-lock.json"]))
    stamp = hashlib.sha256(b"".join(files.values())).hexdigest()
    script = dest / "node_modules" / "browsertime" / "bin" / "browsertime.js"
    if _stamp(dest / ".npm-installed") != stamp or not script.exists():
        print(f"installing browsertime {BROWSERTIME_VERSION} into {dest}", file=sys.stderr)
        dest.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (dest / name).write_bytes(data)
        _run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=dest)
        (dest / ".npm-installed").write_text(stamp)
    venv = dest / "visualmetrics-venv"
    python = venv / "bin" / "python"
    pins = "\n".join(VISUALMETRICS_PIP)
    if _stamp(venv / ".pip-installed") != pins or not python.exists():
        print("installing visualmetrics' Python packages", file=sys.stderr)
        shutil.rmtree(venv, ignore_errors=True)
        _run([PYTHON, "-m", "venv", str(venv)])
        binary = ",".join(p.split("==")[0] for p in VISUALMETRICS_PIP if not p.startswith("pyssim"))
        pip = [str(python), "-m", "pip", "install", "-q", "--only-binary", binary]
        _run([*pip, *VISUALMETRICS_PIP])  # pyssim has no wheel: its sdist, built here
        (venv / ".pip-installed").write_text(pins)
    visualmetrics = script.parents[1] / "visualmetrics" / "visualmetrics-portable.py"
    _run([str(python), str(visualmetrics), "--check"])  # ffmpeg, numpy, cv2, PIL, ssim
    return Browsertime(script, python)


def _stamp(path: Path) -> str | None:
    return path.read_text() if path.exists() else None


# -- the two runs


def run_h2lab(loads: int, network: str, client: str, out: Path) -> Measured:
    """``h2lab load`` of the demo page, ``loads`` times over h2s; the whole command timed."""
    argv = [
        H2LAB, "load", DEMO_PAGE, "--protocol", PROTOCOL, "--network", network,
        "--server", SERVER, "--client", client, "--repeat", str(loads), "--out", str(out),
        "--timeout", str(TIMEOUT_S_PER_LOAD), "--json",
    ]  # fmt: skip
    t0 = time.monotonic()
    stdout = _run(argv, timeout_s=TIMEOUT_S_PER_LOAD * loads)
    wall_s = time.monotonic() - t0
    return parse_h2lab(json.loads(stdout), wall_s, loads)


def free_display() -> int:
    """The first X display from :data:`XVFB_FIRST_DISPLAY` with no lock file."""
    n = XVFB_FIRST_DISPLAY
    while Path(f"/tmp/.X{n}-lock").exists():
        n += 1
    return n


def browsertime_argv(bt: Browsertime, page: Page, hosts: Mapping[str, str], spki: str,
                     loads: int, out: Path, extra: Sequence[str] = ()) -> list[str]:  # fmt: skip
    """browsertime's command line for ``loads`` loads of ``page`` over h2s, ``extra`` last."""
    desktop = DEVICES["desktop"]
    return [
        "node", str(bt.script), page_url(page, PROTOCOL),
        "--browser", "chrome", "--iterations", str(loads),
        "--xvfb", "--xvfbParams.display", str(free_display()),
        "--video", "--visualMetrics",
        "--viewPort", f"{desktop.width}x{desktop.height}",  # h2lab's desktop window
        "--chrome.binaryPath", "/usr/lib/chromium/chromium",  # h2lab's: no /usr/bin wrapper
        "--chrome.chromedriverPath", "/usr/bin/chromedriver",
        *chrome_args(hosts, spki),
        "--timeouts.pageLoad", str(int(TIMEOUT_S_PER_LOAD * 1000)),
        "--resultDir", str(out),
        *extra,
    ]  # fmt: skip


def run_browsertime(
    bt: Browsertime, loads: int, network: str, out: Path, extra: Sequence[str] = ()
) -> Measured:
    """browsertime's ``loads`` loads of the demo page in a lab of its own (nginx, the link),
    from the link's client namespace; the browsertime command alone timed."""
    page = resolve_page(DEMO_PAGE)
    with Lab(page.origins) as lab:
        ctx = ServeContext(
            lab.servers_ns, lab.origin_ips, lab.state_dir / "server", lab.state_dir / "tls"
        )
        profile = parse_network(network, "command line", field="--network")
        with (
            get_server(SERVER).serve(page, ctx),
            lab.link(profile, 0, TcpSettings()) as link,
        ):
            hosts = {h: lab.origin_ips[h] for h in page.origins}
            spki = LocalCA(ctx.tls_dir).spki_sha256()
            argv = browsertime_argv(bt, page, hosts, spki, loads, out, extra)
            # PYTHON: the Python browsertime runs visualmetrics with; SE_OFFLINE: Selenium
            # Manager never looks for drivers or browsers online (the driver is given anyway)
            env = {**os.environ, "PYTHON": str(bt.python), "SE_OFFLINE": "true"}
            log = out / "browsertime.log"
            out.mkdir(parents=True, exist_ok=True)
            t0 = time.monotonic()
            with log.open("w") as f:
                proc = subprocess.run(
                    netns.exec_argv(link.client_ns, argv), env=env, stdout=f,
                    stderr=subprocess.STDOUT, timeout=TIMEOUT_S_PER_LOAD * loads, check=False,
                )  # fmt: skip
            wall_s = time.monotonic() - t0
    if proc.returncode != 0:
        raise ProcessFailed(argv, proc.returncode, log.read_text(errors="replace")[-4000:])
    return parse_browsertime(json.loads((out / "browsertime.json").read_text()), wall_s, loads)


# -- the table


def report(
    h2lab: Measured, browsertime: Measured, network: str, versions: Mapping[str, str]
) -> float:
    """Print both runs side by side and the ratio; the ratio."""
    tools = ", ".join(f"{k} {v}" for k, v in versions.items())
    print(f"\n{DEMO_PAGE} over {PROTOCOL}, network {network}, server {SERVER}, "
          f"{h2lab.loads} loads each; {tools}\n")  # fmt: skip
    print(f"{'tool':<12} {'loads':>5} {'wall_s':>8} {'s_per_load':>10} {'loads_per_min':>13}"
          f" {'plt_ms':>7} {'fcp_ms':>7} {'speed_index_ms':>14}")  # fmt: skip
    for m in (h2lab, browsertime):
        print(f"{m.tool:<12} {m.loads:>5} {m.wall_s:>8.1f} {m.s_per_load:>10.2f}"
              f" {m.loads_per_min:>13.1f} {_median(m.plt_ms):>7.0f} {_median(m.fcp_ms):>7.0f}"
              f" {_median(m.speed_index_ms):>14.0f}")  # fmt: skip
    ratio = h2lab.loads_per_min / browsertime.loads_per_min
    verdict = "yes" if ratio >= TARGET_RATIO else "NO"
    per_min = f"h2lab {h2lab.loads_per_min:.1f} vs browsertime {browsertime.loads_per_min:.1f}"
    print(f"\nloads per minute: {per_min} = {ratio:.1f}x (target >= {TARGET_RATIO:g}x) {verdict}")
    print("(medians; plt_ms = loadEventEnd; SpeedIndex: h2lab's from its trace's screenshots, "
          "browsertime's from its video)")  # fmt: skip
    return ratio


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loads", type=int, default=20, help="loads per tool (default 20)")
    ap.add_argument("--network", default="cable", help="h2lab profile (default cable)")
    ap.add_argument("--client", default="chromium", help="h2lab's client (default chromium)")
    ap.add_argument("--browsertime-arg", action="append", default=[], metavar="ARG",
                    help="one more browsertime argument (repeatable; with '=', e.g. "
                    "--browsertime-arg=--pageCompleteCheckStartWait=0)")  # fmt: skip
    ap.add_argument("--keep", type=Path, help="keep both tools' results in this folder")
    ap.add_argument("--install-only", action="store_true", help="install, run nothing")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/browsertime.py needs root (apt-get, the lab's namespaces)", file=sys.stderr)
        return 2
    try:
        versions = ensure_debian_packages()
        bt = ensure_browsertime()
        versions = {"browsertime": BROWSERTIME_VERSION, **versions,
                    "node": _run(["node", "--version"]).strip()}  # fmt: skip
        if args.install_only:
            print(", ".join(f"{k} {v}" for k, v in versions.items()))
            return 0
        out = args.keep or Path(tempfile.mkdtemp(prefix="h2lab-browsertime-"))
        try:
            h2lab = run_h2lab(args.loads, args.network, args.client, out / "h2lab")
            browsertime = run_browsertime(
                bt, args.loads, args.network, out / "browsertime", args.browsertime_arg
            )
        finally:
            if args.keep is None:
                shutil.rmtree(out, ignore_errors=True)
    except H2LabError as exc:
        print(f"bench/browsertime.py: {exc.line()}", file=sys.stderr)
        return 2
    ratio = report(h2lab, browsertime, args.network, versions)
    return 0 if ratio >= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
