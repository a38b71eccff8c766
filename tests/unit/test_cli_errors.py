"""The real ``h2lab`` CLI on bad input: exit 2, one stderr line naming file and field, and
nothing created (no --out folder, no cache, no ``h2lab-`` network namespace).

Each starting ``h2lab`` spends about a second of CPU importing typer, pydantic, rich and
cryptography, which is too slow for a dozen runs in a unit suite. So a few commands run as the
installed ``h2lab`` executable, and the rest run in a "zygote": one fresh Python process
(not pytest's) imports the CLI once and forks one child per command; each child gets its own
stdout/stderr files, cwd and argv and calls ``h2lab.cli:main`` exactly like the executable's
script does, and its exit status is the command's exit code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]
H2LAB = Path(sys.executable).parent / "h2lab"

GOOD_FACTORS = {
    "protocol": '["h1s", "h2s"]',
    "network": '["cable"]',
    "page": '["synthetic:n=2,size=1KB"]',
}


def _experiment(extra: str = "", **factors: str) -> str:
    values = {**GOOD_FACTORS, **factors}
    body = "".join(f"{k} = {v}\n" for k, v in values.items())
    return f'name = "bad"\nseed = 1\n\n[factors]\n{body}{extra}'


# case -> (file text, the field the error must name, what the error must say)
BAD_FILES = {
    "malformed": ('name = "bad"\n[factors\nprotocol = ["h1s"]\n', "toml", "malformed TOML"),
    "unknown-factor": (
        _experiment(extra="bogus = [1]\n"),
        "factors.bogus",
        "unknown factor",
    ),
    "unknown-value": (
        _experiment(protocol='["h1s", "spdy"]'),
        "factors.protocol[1]",
        "unknown value 'spdy'",
    ),
    "bad-unit": (
        _experiment(network='["rtt=50ms,rate=10Mbs"]'),
        "factors.network[0].rate",
        "unknown rate unit in '10Mbs'",
    ),
    "negative-delay": (
        _experiment(network='["cable", "delay=-5ms"]'),
        "factors.network[1].delay",
        "must not be negative",
    ),
    "loss-150": (
        _experiment(network='["rtt=50ms,loss=150%"]'),
        "factors.network[0].loss",
        "cannot exceed 100%",
    ),
    "compare-baseline": (
        _experiment(extra='[compare]\nfactor = "network"\nbaseline = "3g"\n'),
        "compare.baseline",
        "'3g' is not a level of network (levels: cable)",
    ),
    "capture-unknown": (
        _experiment().replace("seed = 1\n", 'seed = 1\ncapture = ["pcap", "video"]\n'),
        "capture[1]",
        "unknown capture 'video' (known: pcap, qlog)",
    ),
    "client-pcap-option": (
        _experiment(client='["chromium:pcap=1"]'),
        "factors.client[0]",
        'pcap is not a client option: capture = ["pcap"]',
    ),
    "qlog-of-stacks-that-write-none": (
        'name = "bad"\nseed = 1\ncapture = ["qlog"]\n\n[factors]\nprotocol = ["h3"]\n'
        'network = ["cable"]\npage = ["synthetic:n=2,size=1KB"]\nserver = ["caddy"]\n'
        'client = ["chromium"]\n',
        "capture",
        "qlog: neither server caddy nor client chromium writes one",
    ),
    "quic-cc-a-stack-cannot-run": (
        _experiment(protocol='["h3"]', server='["origin:cc=bbr"]', client='["curl"]'),
        "factors.server[0]",
        "origin:cc=bbr: cc: expected one of cubic, newreno, got 'bbr'",
    ),
    "quic-cc-of-a-stack-without-one": (
        _experiment(protocol='["h3"]', server='["nginx@1.26:cc=cubic"]', client='["curl"]'),
        "factors.server[0]",
        "nginx@1.26:cc=cubic: no option 'cc'",
    ),
    "cores-zero": (
        _experiment(client='["chromium:cores=0"]'),
        "factors.client[0]",
        "cores: expected a number of cores 0.05..",
    ),
    "cores-beyond-the-machine": (
        _experiment(client='["firefox:cores=4096"]'),
        "factors.client[0]",
        "(this machine's), got '4096'",
    ),
    "h3-server": (
        _experiment(protocol='["h2s", "h3"]', server='["nginx"]'),
        "factors.server[0]",
        "nginx cannot serve protocol h3",
    ),
    "repeat-view-h2load": (
        _experiment(view='["first", "repeat"]'),
        "factors.view[1]",
        "repeat needs a client that visits the page again in its browser profile; h2load does not",
    ),
    "view-unknown": (
        _experiment(view='["second"]'),
        "factors.view[0]",
        "unknown value 'second' (allowed: first, repeat)",
    ),
    "discovery-unknown": (
        _experiment(
            protocol='["h2s", "h3"]',
            server='["caddy"]',
            client='["chromium"]',
            discovery='["https-svcb"]',
        ),
        "factors.discovery[0]",
        "unknown value 'https-svcb' (allowed: forced, alt-svc, https-rr, udp-blocked)",
    ),
    "discovery-without-h3": (
        _experiment(server='["caddy"]', client='["chromium"]', discovery='["alt-svc"]'),
        "factors.discovery[0]",
        "discovery alt-svc is how a browser finds h3, and this table has no h3 (protocols: "
        "h1s, h2s)",
    ),
    "discovery-curl": (
        _experiment(
            protocol='["h2s", "h3"]', server='["caddy"]', client='["curl"]', discovery='["alt-svc"]'
        ),
        "factors.discovery[0]",
        "alt-svc needs a client that runs it; curl does not (alt-svc: chromium, firefox)",
    ),
    "discovery-https-rr-curl": (
        _experiment(
            protocol='["h2s", "h3"]',
            server='["origin"]',
            client='["curl"]',
            discovery='["https-rr"]',
        ),
        "factors.discovery[0]",
        "https-rr needs a client that runs it; curl does not (https-rr: chromium, firefox)",
    ),
    "discovery-server": (
        _experiment(
            protocol='["h2s", "h3"]',
            server='["jetty"]',
            client='["firefox"]',
            discovery='["forced", "alt-svc"]',
        ),
        "factors.discovery[1]",
        "alt-svc needs a server that runs it; jetty does not "
        "(alt-svc: caddy, caddy@2.11, nginx@1.26, origin)",
    ),
    "discovery-repeat-chromium": (
        _experiment(
            protocol='["h3"]',
            server='["caddy"]',
            client='["chromium"]',
            view='["repeat"]',
            discovery='["alt-svc"]',
        ),
        "factors.discovery[0]",
        "alt-svc in a repeat view: chromium runs only forced there",
    ),
    "h3-origins-without-h3": (
        _experiment(client='["chromium"]', h3_origins='["first-party"]'),
        "factors.h3_origins[0]",
        "h3_origins first-party names the origins that speak h3, and this table has no h3 "
        "(protocols: h1s, h2s)",
    ),
    "h3-origins-curl": (
        _experiment(
            protocol='["h2s", "h3"]',
            server='["caddy"]',
            client='["curl"]',
            h3_origins='["first-party"]',
        ),
        "factors.h3_origins[0]",
        "first-party needs a client that speaks h3 to some origins only; curl does not "
        "(h3_origins: chromium, firefox)",
    ),
    "h3-origins-no-host": (
        _experiment(protocol='["h3"]', client='["firefox"]', h3_origins='["o1.h2lab.test+a b"]'),
        "factors.h3_origins[0]",
        "'a b' is no host name",
    ),
    "jitter-beyond-the-delay": (
        _experiment(network='["rtt=20ms,jitter=5ms"]'),
        "factors.network[0].jitter",
        "5 ms cannot be emulated over a 10 ms one-way delay: at most 4.8 ms (48% of it)",
    ),
}

# run as the installed executable; everything else runs in the zygote
EXECUTABLE_JOBS = {"run:bad-unit", "bogus-flag", "demo"}

ZYGOTE = r"""
import contextlib, io, json, os, sys, traceback

import h2lab.cli
import h2lab.clients, h2lab.servers, h2lab.runner.matrix, h2lab.spec.experiment

h2lab.clients.names(), h2lab.servers.names()  # import the adapters' modules
# typer and pydantic import most of themselves lazily on the first command: warm them up
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    for command in ("validate", "run", "load"):
        try:
            h2lab.cli.app([command, "--help"], standalone_mode=False)
        except BaseException:
            pass
jobs = json.load(sys.stdin)
sys.stdout.flush(); sys.stderr.flush()
pids = {}
for job in jobs:
    pid = os.fork()
    if pid:
        pids[pid] = job["name"]
        continue
    code = 1
    try:
        os.chdir(job["cwd"])
        for fd, path in ((1, job["stdout"]), (2, job["stderr"])):
            f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(f, fd)
            os.close(f)
        sys.argv = ["h2lab", *job["argv"]]
        try:
            h2lab.cli.main()
            code = 0
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
forked, codes = list(pids), {}
while pids:
    pid, status = os.wait()
    codes[pids.pop(pid)] = os.waitstatus_to_exitcode(status)
print(json.dumps({"pids": forked, "codes": codes}))
"""


@dataclass(frozen=True)
class Outcome:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class Runs:
    root: Path
    files: dict[str, Path]
    outs: dict[str, Path]
    results: dict[str, Outcome]
    netns_before: set[str]
    leaked_netns: set[str]


def _ip_netns() -> set[str] | None:
    """Names ``ip netns list`` shows; None if it cannot be run."""
    try:
        proc = subprocess.run(
            ["ip", "netns", "list"], capture_output=True, text=True, timeout=10, check=False
        )
    except OSError:
        return None
    if proc.returncode != 0:
        return None
    return {line.split()[0] for line in proc.stdout.splitlines() if line.strip()}


def _ours(ns: str, records: Sequence[Path]) -> bool:
    """A namespace of a lab that one of the commands here made: the commands run with a lab
    state folder and an owners folder of their own (``records``), and a lab records its id in
    both before it makes a namespace, and removes them last. Other suites (tests/integration,
    a cluster's nodes, --jobs shards) may run labs at the same time, with other state folders
    or at a moment when their owner is not yet written: those are not counted."""
    instance = ns.rsplit("-", 1)[0]
    return any((folder / instance).exists() for folder in records)


def _leaked(before: set[str], records: Sequence[Path]) -> set[str]:
    after = _ip_netns()
    if after is None:
        return set()
    return {n for n in after - before if n.startswith("h2lab-") and _ours(n, records)}


def _run_executable(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> Outcome:
    proc = subprocess.Popen(
        [str(H2LAB), *argv],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stdout, stderr = proc.communicate(timeout=120)
    return Outcome(list(argv), proc.returncode, stdout, stderr)


def _run_zygote(
    jobs: dict[str, tuple[list[str], Path]], root: Path, env: dict[str, str]
) -> dict[str, Outcome]:
    spec = [
        {
            "name": name,
            "argv": argv,
            "cwd": str(cwd),
            "stdout": str(root / f"{name}.stdout"),
            "stderr": str(root / f"{name}.stderr"),
        }
        for name, (argv, cwd) in jobs.items()
    ]
    proc = subprocess.Popen(
        [sys.executable, "-c", ZYGOTE],
        cwd=root,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stdout, stderr = proc.communicate(json.dumps(spec), timeout=120)
    assert proc.returncode == 0, stderr
    report = json.loads(stdout)
    codes = report["codes"]
    return {
        name: Outcome(
            argv,
            codes[name],
            (root / f"{name}.stdout").read_text(),
            (root / f"{name}.stderr").read_text(),
        )
        for name, (argv, _) in jobs.items()
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = tmp_path_factory.mktemp("cli")
    env = {**os.environ, "H2LAB_CACHE": str(root / "cache"), "COLUMNS": "80"}
    records = [root / "state", root / "owners"]  # which labs are ours: _ours
    env.update({"H2LAB_STATE": str(records[0]), "H2LAB_OWNERS": str(records[1])})
    files: dict[str, Path] = {}
    outs: dict[str, Path] = {}
    jobs: dict[str, tuple[list[str], Path]] = {}
    for case, (text, _, _) in BAD_FILES.items():
        # a long path: the one error line is well over 80 columns
        path = root / f"{case}-an-experiment-file-with-a-rather-long-name.toml"
        path.write_text(text)
        files[case] = path
        outs[case] = root / f"out-{case}"
        jobs[f"validate:{case}"] = (["validate", str(path)], root)
        jobs[f"run:{case}"] = (["run", str(path), "--out", str(outs[case])], root)
    jobs["bogus-flag"] = (["load", "x", "--bogus"], root)
    capture = ["--capture", "pcap", "--capture", "video", "--out", str(root / "out-capture")]
    jobs["bad-capture-flag"] = (
        ["load", "synthetic:n=2", "--protocol", "h2s", "--network", "cable", *capture],
        root,
    )
    jobs["bad-compare-flag"] = (["report", str(root), "--compare", "sever=nginx"], root)
    only = ["run", "experiments/demo.toml", "--out", str(root / "out-only"), "--jobs", "2"]
    jobs["bad-only-flag"] = ([*only, "--only", "network=cell-poor"], PROJECT)
    warc = (PROJECT / "corpus" / "warc" / "baidu.warc.gz").read_bytes()
    (root / "cut.warc.gz").write_bytes(warc[: len(warc) // 2])
    (root / "notjson.har").write_text("<html>not a HAR</html>")
    (root / "site").mkdir()
    (root / "site" / "other.html").write_text("<p>hi</p>")
    for name, source in BAD_IMPORTS.items():
        jobs[f"import:{name}"] = (["pages", "import", str(root / source)], root)
    jobs["demo"] = (["validate", "experiments/demo.toml"], PROJECT)
    (root / "kept").mkdir()
    (root / "kept" / "trials.csv").write_text("id,trial_key,pdt_ms\n1,b|h2s,12x\n")
    jobs["restore-bad"] = (["restore", str(root / "kept")], root)
    jobs["export-format"] = (["export", str(root / "kept"), "--format", "har"], root)
    _store_without_browser_trials(root / "loads")
    jobs["export-no-browser"] = (["export", str(root / "loads"), "--format", "browsertime"], root)

    before = _ip_netns() or set()
    forked = {k: v for k, v in jobs.items() if k not in EXECUTABLE_JOBS}
    with ThreadPoolExecutor(max_workers=len(EXECUTABLE_JOBS) + 1) as pool:
        zygote = pool.submit(_run_zygote, forked, root, env)
        direct = {k: pool.submit(_run_executable, *jobs[k], env) for k in EXECUTABLE_JOBS}
        results = {**zygote.result(), **{k: f.result() for k, f in direct.items()}}
    return Runs(root, files, outs, results, before, _leaked(before, records))


def _one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, f"expected one stderr line, got {lines!r}"
    return lines[0]


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_file(runs: Runs, command: str, case: str) -> None:
    result = runs.results[f"{command}:{case}"]
    _, field, reason = BAD_FILES[case]
    assert result.returncode == 2, result
    line = _one_line(result.stderr)
    assert line.startswith(f"h2lab: {runs.files[case]}: {field}: "), line
    assert len(line) > 80  # would have been wrapped by a console of 80 columns
    assert reason in line
    assert result.stdout == ""
    assert not runs.outs[case].exists()


BAD_IMPORTS = {
    "truncated-warc": "cut.warc.gz",
    "har-not-json": "notjson.har",
    "folder-without-entry": "site#index.html",
}


@pytest.mark.parametrize("case", sorted(BAD_IMPORTS))
def test_bad_import(runs: Runs, case: str) -> None:
    """Issue #5: bad input to `h2lab pages import` is one line naming the file, exit 2, and
    no page is written (the cache is not even created: see the next test)."""
    result = runs.results[f"import:{case}"]
    assert result.returncode == 2, result
    line = _one_line(result.stderr)
    named = str(runs.root / BAD_IMPORTS[case].split("#")[0])
    assert line.startswith(f"h2lab: {named}"), line
    assert result.stdout == ""


def test_nothing_made_on_disk_or_in_the_kernel(runs: Runs) -> None:
    assert not (runs.root / "cache").exists()
    assert sorted(p.name for p in runs.root.iterdir() if p.name.startswith("out-")) == []
    assert runs.leaked_netns == set()


def test_unknown_flag(runs: Runs) -> None:
    result = runs.results["bogus-flag"]
    assert result.returncode == 2
    line = _one_line(result.stderr)
    assert line.startswith("h2lab: ")
    assert "No such option: --bogus" in line
    assert result.stdout == ""


def test_bad_compare_flag(runs: Runs) -> None:
    result = runs.results["bad-compare-flag"]
    assert result.returncode == 2
    line = _one_line(result.stderr)
    assert line.startswith("h2lab: --compare: sever=nginx: must be FACTOR=BASELINE"), line
    assert result.stdout == ""


def test_bad_capture_flag(runs: Runs) -> None:
    """`h2lab load --capture` with a name it does not know: one line, nothing run or made
    (no out-capture folder: test_nothing_made_on_disk_or_in_the_kernel)."""
    result = runs.results["bad-capture-flag"]
    assert result.returncode == 2, result
    line = _one_line(result.stderr)
    want = "h2lab: command line: --capture: unknown capture 'video' (known: pcap, qlog)"
    assert line == want, line
    assert result.stdout == ""


def test_bad_only_flag(runs: Runs) -> None:
    """`h2lab run --only` with a level the file does not have: one line, before any lab or
    store is made (test_nothing_made_on_disk_or_in_the_kernel: no out-only folder)."""
    result = runs.results["bad-only-flag"]
    assert result.returncode == 2, result
    line = _one_line(result.stderr)
    assert line.startswith(
        "h2lab: --only: network=cell-poor: 'cell-poor' is not a level of network (levels: "
    ), line
    assert result.stdout == ""


def test_bad_restore(runs: Runs) -> None:
    """A trials.csv that does not fit the store: the file and column, and no store left."""
    result = runs.results["restore-bad"]
    assert result.returncode == 2, result
    line = _one_line(result.stderr)
    kept = runs.root / "kept"
    assert line == f"h2lab: {kept / 'trials.csv'}: attempt: required column missing from the header"
    assert result.stdout == ""
    assert sorted(p.name for p in kept.iterdir()) == ["trials.csv"]


def _store_without_browser_trials(folder: Path) -> None:
    from h2lab.store import Store
    from tests.unit.test_report_model import trial

    store = Store(folder)
    store.add_trial(trial("h2s", 0, 100.0))  # h2load: nothing for browsertime
    store.close()


def test_bad_export_format(runs: Runs) -> None:
    result = runs.results["export-format"]
    assert result.returncode == 2, result
    line = _one_line(result.stderr)
    assert line == "h2lab: command line: --format: must be csv or browsertime, got 'har'"
    assert sorted(p.name for p in (runs.root / "kept").iterdir()) == ["trials.csv"]


def test_browsertime_export_of_a_folder_without_browser_trials(runs: Runs) -> None:
    result = runs.results["export-no-browser"]
    assert result.returncode == 2, result
    line = _one_line(result.stderr)
    loads = runs.root / "loads"
    assert line == f"h2lab: {loads}: trials: no successful browser trial to export"
    assert not (loads / "browsertime").exists()


def test_validate_demo(runs: Runs) -> None:
    result = runs.results["demo"]
    assert result.returncode == 0, result
    assert result.stdout == "experiments/demo.toml: ok, 24 trials\n"
    assert result.stderr == ""
