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
from collections.abc import Iterator, Mapping
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
    register,
)
from h2lab.servers.process import Launch, serve_process
from h2lab.spec.options import OptionDoc
from h2lab.spec.protocols import H1C, H2C, H2S, H3, PORTS, QUIC, TCP_PROTOCOLS
from h2lab.tls import LocalCA
from h2lab.units import parse_duration_ms, parse_size_bytes

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
(DESIGN.md, "h2lab origin server"), and RFC 9218's urgency and incremental flag from the
client's priority header and PRIORITY_UPDATE frames (docs/origin.md). Over HTTP/3 quic-go
schedules by RFC 9218 under ``client`` and ``rfc9218``; ``fcfs`` and ``rr`` set every response's
priority to one urgency, not incremental or incremental."""
RULES = ("critical-css", "css-js", "images", "all")
"""Push / early-hint rules of seed 000 §6.2, Fig. 6."""
CLASSES = ("html", "css", "js", "image", "font", "other")
"""Content classes a delay can name (``delay_<class>``), as origin/page.go classifies types."""
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


@dataclass(frozen=True)
class OriginOptions:
    scheduler: str = "client"
    push: Selection = Selection()
    early_hints: Selection = Selection()
    delay_ms: tuple[tuple[str, float], ...] = ()
    """(content class, delay before its responses), seed 003's "sleepy images" """
    think_ms: float = 0.0
    """delay before every response"""
    framelog: bool = False
    qlog: bool = False
    notsent_lowat_bytes: int = 0
    """TCP_NOTSENT_LOWAT on accepted connections (0: kernel default)"""
    early_data: bool = False
    """accept 0-RTT requests over HTTP/3 (quic-go's ``Allow0RTT``, off by default as quic-go
    has it): a repeat view's first request then goes with the client's first packet"""


def _selection(key: str, value: str) -> Selection:
    if value == "none":
        return Selection()
    if value in RULES:
        return Selection(rule=value)
    paths = tuple(p for p in value.split("+") if p)
    if paths and all(p.startswith("/") for p in paths):
        return Selection(paths=paths)
    raise ValueError(
        f"origin option {key}={value!r}: expected none, {', '.join(RULES)} "
        "or URL paths joined by '+' (/a.css+/b.js)"
    )


def _flag(key: str, value: str) -> bool:
    if value.lower() not in _FLAGS:
        raise ValueError(f"origin option {key}={value!r}: expected 0 or 1")
    return _FLAGS[value.lower()]


def parse_options(options: Mapping[str, str]) -> OriginOptions:
    """``{"scheduler": "fcfs", "delay_image": "200ms"}`` -> :class:`OriginOptions`; an unknown
    key or value is a ValueError with one line."""
    kw: dict[str, Any] = {}
    delays: dict[str, float] = {}
    for key, value in options.items():
        if key == "scheduler":
            if value not in SCHEDULERS:
                raise ValueError(
                    f"origin option scheduler={value!r}: expected {', '.join(SCHEDULERS)}"
                )
            kw["scheduler"] = value
        elif key in ("push", "early_hints"):
            kw[key] = _selection(key, value)
        elif key.startswith("delay_"):
            cls = key.removeprefix("delay_")
            if cls not in CLASSES:
                raise ValueError(
                    f"origin option {key}: unknown content class {cls!r} "
                    f"(known: {', '.join(CLASSES)})"
                )
            delays[cls] = _duration(key, value)
        elif key == "think":
            kw["think_ms"] = _duration(key, value)
        elif key in ("framelog", "qlog", "early_data"):
            kw[key] = _flag(key, value)
        elif key == "notsent_lowat":
            kw["notsent_lowat_bytes"] = parse_size_bytes(value)
        else:
            raise ValueError(
                f"origin has no option {key!r} (known: scheduler, push, early_hints, "
                f"delay_<{'|'.join(CLASSES)}>, think, framelog, qlog, notsent_lowat, early_data)"
            )
    return OriginOptions(delay_ms=tuple(sorted(delays.items())), **kw)


def _duration(key: str, value: str) -> float:
    ms = parse_duration_ms(value)
    if ms < 0:
        raise ValueError(f"origin option {key}={value!r}: must not be negative")
    return ms


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
        "qlog": opts.qlog,
        "notsent_lowat_bytes": opts.notsent_lowat_bytes,
        "early_data": opts.early_data,
        "client_timeout_s": WRITE_TIMEOUT_S,
        "idle_timeout_s": IDLE_TIMEOUT_S,
    }


def source_hash(src: Path = SOURCE_DIR) -> str:
    """12 hex digits over go.mod, go.sum and every non-test ``.go`` file (names and bytes)."""
    h = hashlib.sha256()
    files = [src / "go.mod", src / "go.sum"]
    files += sorted(p for p in src.rglob("*.go") if not p.name.endswith("_test.go"))
    for f in files:
        h.update(str(f.relative_to(src)).encode() + b"\0")
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()[:12]


def go_binary() -> str:
    found = shutil.which("go") or "/usr/local/go/bin/go"
    if not Path(found).exists():
        raise MissingTool("go", "Go 1.26 in /usr/local/go or on PATH (scripts/setup.sh)")
    return found


def build_argv(go: str, output: Path, digest: str, package: str = ".") -> list[str]:
    """The ``go build`` command, run in :data:`SOURCE_DIR`."""
    return [
        go, "build", "-trimpath", "-tags", BUILD_TAGS,
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
    argv = build_argv(go_binary(), tmp, digest, f"./cmd/{command}" if command else ".")
    try:
        proc = subprocess.run(
            argv, cwd=src, env=build_env(), capture_output=True, timeout=BUILD_TIMEOUT_S
        )
    except subprocess.TimeoutExpired as exc:
        raise ProcessFailed(argv, None, f"go build timed out after {BUILD_TIMEOUT_S} s") from exc
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
            yield serving


def _make(options: Mapping[str, str]) -> Origin:
    return Origin(parse_options(options))


OPTIONS = (
    OptionDoc(
        "scheduler",
        "client|rr|fcfs|rfc9218",
        "the write scheduler: the client's RFC 7540 priorities (default), round robin, first "
        "come first served, or RFC 9218 urgency and incremental with PRIORITY_UPDATE (h2 and "
        "h3; docs/origin.md)",
        "origin:scheduler=rfc9218",
    ),
    OptionDoc(
        "push",
        "none|critical-css|css-js|images|all|/PATH+/PATH",
        "resources pushed with the entry document, by rule or URL paths joined by '+'",
        "origin:push=/0.css+/1.js",
    ),
    OptionDoc(
        "early_hints",
        "as push",
        "resources announced in a 103 Early Hints response before the entry document",
        "origin:early_hints=css-js",
    ),
    OptionDoc(
        "delay_<class>",
        "DURATION",
        "a delay before every response of a content class: html, css, js, image, font, other",
        "origin:delay_image=200ms",
    ),
    OptionDoc("think", "DURATION", "server think time before every response", "origin:think=50ms"),
    OptionDoc(
        "framelog",
        "0|1",
        "every frame the HTTP/2 scheduler hands out, in order, in the state folder's frames.tsv",
        "origin:framelog=1",
    ),
    OptionDoc("qlog", "0|1", "a qlog file per QUIC connection", "origin:qlog=1"),
    OptionDoc(
        "notsent_lowat",
        "SIZE",
        "TCP_NOTSENT_LOWAT on accepted connections: the scheduler decides late instead of "
        "filling the socket buffer",
        "origin:notsent_lowat=16KB",
    ),
    OptionDoc(
        "early_data",
        "0|1",
        "accept 0-RTT early data over h3 (a repeat view's resumed connection)",
        "origin:early_data=1",
    ),
)
"""The options, for docs/reference.md (the registry refuses one not listed here)."""

register("origin", _make, OPTIONS)
