"""h2lab's own origin server (Go, ``origin/``): the HTTP/2 scheduler, server push, 103 Early
Hints and response delays become experiment factors (docs/origin.md).

``origin:scheduler=fcfs,push=css-js,early_hints=css-js,delay_image=200ms,framelog=1,qlog=1``

Listens per origin address like nginx (h1c on :80, h1s/h2s on :443 by ALPN, h2c with prior
knowledge on :8080) and also HTTP/3 on UDP :443. TLS over TCP is the trial's one version
(:attr:`ServeContext.tls_version`, the binary's ``-tls`` flag: ``tls.Config`` MinVersion =
MaxVersion), with crypto/tls's default TLS 1.2 suites (ECDHE-ECDSA-AES128-GCM-SHA256 among
them); HTTP/3 is TLS 1.3 (QUIC). Replays the page manifest with the rules of
docs/pages.md, including the per-resource ``delay_ms`` that nginx refuses.

The binary is built on first use from the sources in ``origin/`` into
``<cache>/origin-<source hash>/h2lab-origin`` (offline once the Go modules are in the module
cache; ``scripts/setup.sh`` downloads them).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from h2lab import procs, programs
from h2lab.errors import MissingTool, ProcessFailed
from h2lab.pages import Page
from h2lab.paths import cache_root, find_build
from h2lab.servers import (
    IDLE_TIMEOUT_S,
    WRITE_TIMEOUT_S,
    ServeContext,
    Serving,
    quicgo,
    register,
)
from h2lab.servers.process import Launch, serve_process
from h2lab.servers.quic import QuicLedger
from h2lab.spec.factors import DISCOVERIES, MAX_INITCWND_PACKETS
from h2lab.spec.options import DURATION, SIZE, Parser, choice, integer, option
from h2lab.spec.protocols import H1C, H2C, H2S, H3, PORTS, QUIC, TCP_PROTOCOLS
from h2lab.tls import LocalCA

SOURCE_DIR = Path(__file__).resolve().parents[3] / "origin"
"""The Go module (``go.mod``, ``*.go``)."""
BINARY = "h2lab-origin"
READY_LINE = "h2lab-origin ready"
# A first build compiles quic-go and x/net: about a minute on the 2-core reference machine.
BUILD_TIMEOUT_S = 600.0
BUILD_TAGS = "http2legacy"
"""x/net/http2 from Go 1.27 on wraps net/http's HTTP/2 and ignores custom write schedulers
unless built with this tag (x/net v0.62.0, ``server_wrap.go``); harmless on Go 1.26."""
UNSERVED_LOG = "unserved.log"
FRAME_LOG = "frames.tsv"
QLOG_DIR = "qlog"

SCHEDULERS = ("client", "rr", "fcfs", "rfc9218")
"""Write schedulers: the client's RFC 7540 priorities, round robin, first come first served
(docs/origin.md, "Semantics"), and RFC 9218's urgency and incremental flag from the
client's priority header and PRIORITY_UPDATE frames (docs/origin.md). Over HTTP/3 quic-go
schedules by RFC 9218 under ``client`` and ``rfc9218``; ``fcfs`` and ``rr`` set every response's
priority to one urgency, not incremental or incremental."""
RULES = ("critical-css", "css-js", "images", "all")
"""Push / early-hint rules of seed 000 §6.2, Fig. 6."""
CLASSES = ("html", "css", "js", "image", "font", "other")
"""Content classes a delay can name (``delay_<class>``), as origin/page.go classifies types."""
QUIC_CCS = ("cubic", "newreno")
"""The congestion controls quic-go has (its ``reno`` sender is NewReno as RFC 9002 gives it),
which the origin's build lets a trial choose (:mod:`h2lab.servers.quicgo`)."""
_FLAGS = {"0": False, "1": True, "no": False, "yes": True, "false": False, "true": True}


@dataclass(frozen=True)
class Selection:
    """Resources to push or hint: a rule, or request targets on the entry's origin."""

    rule: str = ""
    paths: tuple[str, ...] = ()

    @property
    def none(self) -> bool:
        return not self.rule and not self.paths

    def as_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "paths": list(self.paths)}


def _selection(value: str) -> Selection:
    if value == "none":
        return Selection()
    if value in RULES:
        return Selection(rule=value)
    paths = tuple(p for p in value.split("+") if p)
    if paths and all(p.startswith("/") for p in paths):
        return Selection(paths=paths)
    raise ValueError(
        f"expected none, {', '.join(RULES)} or URL paths joined by '+' (/a.css+/b.js), "
        f"got {value!r}"
    )


def _flag(value: str) -> bool:
    if value.lower() not in _FLAGS:
        raise ValueError(f"expected 0 or 1, got {value!r}")
    return _FLAGS[value.lower()]


SELECTION = Parser(f"none|{'|'.join(RULES)}|/PATH+/PATH", _selection)
"""Resources by rule, or URL paths joined by '+' (a parser of its own, not split elsewhere)."""
FLAG = Parser("0|1", _flag)
"""0 or 1; the origin also takes no/yes and false/true, as it always has."""


@dataclass(frozen=True)
class OriginOptions:
    scheduler: str = option(
        choice(*SCHEDULERS),
        "client",
        "the write scheduler: the client's RFC 7540 priorities (default), round robin, first "
        "come first served, or RFC 9218 urgency and incremental with PRIORITY_UPDATE (h2 and "
        "h3; docs/origin.md)",
        "scheduler=rfc9218",
    )
    push: Selection = option(
        SELECTION,
        Selection(),
        "resources pushed with the entry document, by rule or URL paths joined by '+'",
        "push=/0.css+/1.js",
    )
    early_hints: Selection = option(
        SELECTION,
        Selection(),
        "resources announced in a 103 Early Hints response before the entry document",
        "early_hints=css-js",
        values="as push",
    )
    delay_ms: tuple[tuple[str, float], ...] = option(
        DURATION,
        (),
        "a delay before every response of a content class: html, css, js, image, font, other",
        "delay_image=200ms",
        key="delay_<class>",
        members=CLASSES,
    )
    """(content class, delay before its responses), seed 003's "sleepy images" """
    think_ms: float = option(
        DURATION, 0.0, "server think time before every response", "think=50ms", key="think"
    )
    framelog: bool = option(
        FLAG,
        False,
        "every frame the HTTP/2 scheduler hands out, in order, in the state folder's frames.tsv",
        "framelog=1",
    )
    qlog: bool = option(FLAG, False, "a qlog file per QUIC connection", "qlog=1")
    notsent_lowat_bytes: int = option(
        SIZE,
        0,
        "TCP_NOTSENT_LOWAT on accepted connections: the scheduler decides late instead of "
        "filling the socket buffer",
        "notsent_lowat=16KB",
        key="notsent_lowat",
    )
    """0: the kernel's default"""
    quic_cc: str = option(
        choice(*QUIC_CCS),
        "",
        "QUIC's congestion control over h3 (default: quic-go's own, Reno; docs/origin.md)",
        "cc=cubic",
        key="cc",
    )
    quic_initcwnd_packets: int = option(
        integer(1, MAX_INITCWND_PACKETS),
        0,
        "QUIC's initial congestion window over h3, in packets of 1,280 bytes (default: "
        "quic-go's own, 32)",
        "initcwnd=10",
        key="initcwnd",
    )
    early_data: bool = option(
        FLAG,
        False,
        "accept 0-RTT early data over h3 (a repeat view's resumed connection)",
        "early_data=1",
    )
    """quic-go's ``Allow0RTT``, off by default as quic-go has it: a repeat view's first request
    then goes with the client's first packet"""


def render_config(
    page: Page, ctx: ServeContext, ca: LocalCA, opts: OriginOptions
) -> dict[str, Any]:
    """The JSON configuration of origin/main.go's ``Config`` (creates the leaf certificates)."""
    origins = []
    for host in page.origins:
        pair = ca.leaf(host)
        origins.append(
            {"host": host, "ip": ctx.origin_ips[host], "cert": str(pair.cert), "key": str(pair.key)}
        )
    return {
        "page": str(page.docroot),
        "state_dir": str(ctx.state_dir),
        "origins": origins,
        "ports": {"h1c": PORTS[H1C], "tls": PORTS[H2S], "h2c": PORTS[H2C], "h3": PORTS[H3]},
        "scheduler": opts.scheduler,
        "push": opts.push.as_json(),
        "early_hints": opts.early_hints.as_json(),
        "delay_ms": dict(opts.delay_ms),
        "think_ms": opts.think_ms,
        "framelog": opts.framelog,
        "qlog": opts.qlog or ctx.qlog,
        "notsent_lowat_bytes": opts.notsent_lowat_bytes,
        "early_data": opts.early_data,
        "quic_cc": {"newreno": "reno"}.get(opts.quic_cc, opts.quic_cc),
        "quic_initcwnd_packets": opts.quic_initcwnd_packets,
        "alt_svc": sorted(ctx.alt_svc),
        "client_timeout_s": WRITE_TIMEOUT_S,
        "idle_timeout_s": IDLE_TIMEOUT_S,
    }


def source_hash(src: Path = SOURCE_DIR) -> str:
    """12 hex digits over go.mod, go.sum, every non-test ``.go`` file and the quic-go patch
    (names and bytes)."""
    h = hashlib.sha256()
    files = [src / "go.mod", src / "go.sum"]
    files += sorted(p for p in src.rglob("*.go") if not p.name.endswith("_test.go"))
    files += sorted(src.glob(f"{quicgo.OVERLAY_DIR}/*.patch"))
    for f in files:
        h.update(str(f.relative_to(src)).encode() + b"\0")
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()[:12]


def go_binary() -> str:
    found = shutil.which("go") or "/usr/local/go/bin/go"
    if not Path(found).exists():
        raise MissingTool("go", "Go 1.26 in /usr/local/go or on PATH (scripts/setup.sh)")
    return found


def build_argv(
    go: str, output: Path, digest: str, package: str = ".", modfile: Path | None = None
) -> list[str]:
    """The ``go build`` command, run in :data:`SOURCE_DIR`; with the module file that builds
    with the patched quic-go (:mod:`h2lab.servers.quicgo`), and its tag."""
    tags = BUILD_TAGS if modfile is None else f"{BUILD_TAGS},{quicgo.TAG}"
    extra = [] if modfile is None else [f"-modfile={modfile}"]
    return [
        go, "build", "-trimpath", "-tags", tags, *extra,
        "-ldflags", f"-X main.sourceHash={digest}", "-o", str(output), package,
    ]  # fmt: skip


def build_env() -> dict[str, str]:
    """Offline once the modules are downloaded: go.sum pins them, nothing is fetched or edited."""
    return {**os.environ, "GOFLAGS": "-mod=readonly", "GOTOOLCHAIN": "local"}


def ensure_built(src: Path = SOURCE_DIR, command: str = "") -> Path:
    """The binary for the current sources, built if missing (atomically: a rename): the origin,
    or one of ``origin/cmd/`` (``command="h3prio"``)."""
    digest = source_hash(src)
    name = command or BINARY
    built = find_build(f"origin-{digest}/{name}")  # the user's, or the system's (make setup)
    if built is not None:
        return built
    target = cache_root() / f"origin-{digest}" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{name}.tmp-{os.getpid()}")
    go = go_binary()
    module = quicgo.module_dir(go, src, build_env())
    modfile = quicgo.write_module(module, src, target.parent / f"quic-go-{os.getpid()}")
    argv = build_argv(go, tmp, digest, f"./cmd/{command}" if command else ".", modfile)
    try:
        proc = subprocess.run(
            argv, cwd=src, env=build_env(), capture_output=True, timeout=BUILD_TIMEOUT_S
        )
    except subprocess.TimeoutExpired as exc:
        raise ProcessFailed(argv, None, f"go build timed out after {BUILD_TIMEOUT_S} s") from exc
    finally:
        shutil.rmtree(modfile.parent, ignore_errors=True)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise ProcessFailed(argv, proc.returncode, proc.stderr.decode(errors="replace")[-2000:])
    os.replace(tmp, target)
    return target


def serve_argv(binary: Path, conf: Path, tls_version: str) -> list[str]:
    """The server's command line: its JSON config and the one TLS version of its TCP listener
    (``1.2`` or ``1.3``; a flag, not a config key, so that ``origin.json`` is the same for
    both)."""
    return [str(binary), "-config", str(conf), "-tls", tls_version]


class Origin:
    name = "origin"
    protocols = TCP_PROTOCOLS | QUIC
    discoveries: frozenset[str] = frozenset(DISCOVERIES)
    qlog = True

    def __init__(self, options: OriginOptions) -> None:
        self.options = options

    def version(self) -> str:
        """``h2lab-origin <source hash> go1.26.8 x/net v0.62.0 quic-go v0.65.0``."""
        return procs.run(programs.ORIGIN.version_argv([str(ensure_built())])).strip()

    def check(self) -> None:
        """Nothing: the origin takes no configuration file of the user's."""

    @contextmanager
    def serve(self, page: Page, ctx: ServeContext) -> Iterator[Serving]:
        binary = ensure_built()
        ctx.state_dir.mkdir(parents=True, exist_ok=True)
        conf = ctx.state_dir / "origin.json"
        config = render_config(page, ctx, LocalCA(ctx.tls_dir), self.options)
        conf.write_text(json.dumps(config, indent=1) + "\n")
        log = ctx.state_dir / "origin.out"
        argv = serve_argv(binary, conf, ctx.tls_version)
        # the origin prints READY_LINE once every listener is bound (origin/main.go)
        launch = Launch(BINARY, argv, log, tail_chars=1000, udp=True, ready_line=READY_LINE)
        with serve_process(ctx, launch, page.origins) as serving:
            serving.quic = QuicLedger(ctx.state_dir)
            yield serving


register("origin", Origin, OriginOptions)
