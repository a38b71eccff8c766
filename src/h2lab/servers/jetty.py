"""Jetty 12.0 with HTTP/3 over Cloudflare's quiche (``jetty/``, Java 17, Maven): the lab's
fourth QUIC stack, beside quic-go (origin, Caddy), nginx's and HAProxy's.

One JVM serves every origin address of the page: h1c on :80 and h2c with prior knowledge on
:8080 (Jetty's HTTP/1.1 connection takes the h2c preface on both, as H2O's and Caddy's :80),
h1s and h2s on TCP :443 (ALPN; the trial's one TLS version, :attr:`ServeContext.tls_version`)
and h3 on UDP :443 (quiche, BoringSSL, always TLS 1.3). Each listener presents its origin's
certificate whatever the client's SNI. The replay is the Go origin's (origin/page.go: exact
method + host + target, closest recorded query, first of host and path), with the recorded
status, content type, kept headers, body and ``delay_ms``; anything else gets 404 and a line
in ``unserved.log``. No request-length log: ``request_header_bytes`` stays NULL, as behind Caddy.

What Jetty would do by itself and h2lab turns off: the ``Server`` header, the 400 it answers
an ambiguous path (``%2F``) with, the SNI host check, and, in a first view, TLS resumption over
TCP (docs/servers.md, "jetty"). It adds no ``Alt-Svc``.

The jar is built on first use into ``<cache>/jetty-<source hash>/h2lab-jetty.jar`` beside the
``libquiche.so`` taken out of it (JNA then loads that file instead of unpacking 33 MB into a
temporary folder at every start); ``scripts/setup.sh`` builds it, so no trial waits for Maven.
"""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from h2lab import maven, procs
from h2lab.pages import Page
from h2lab.servers import FORCED_ONLY, IDLE_TIMEOUT_S, ServeContext, Serving, register
from h2lab.servers.process import Launch, serve_process
from h2lab.spec.protocols import H1C, H2C, H2S, H3, PORTS, QUIC, TCP_PROTOCOLS
from h2lab.tls import LocalCA

NAME = "jetty"
SOURCE_DIR = Path(__file__).resolve().parents[3] / "jetty"
"""The Maven project (``pom.xml``, ``src/main/``)."""
NATIVE = "libquiche.so"
NATIVE_IN_JAR = "linux-x86-64/libquiche.so"
READY_LINE = "h2lab-jetty ready"
# A first build downloads Jetty, JNA, libquiche's jar (90 MB) and the Maven plugins.
PROJECT = maven.Project(NAME, "h2lab-jetty.jar", timeout_s=900.0)
JAR = PROJECT.jar
UNSERVED_LOG = "unserved.log"
MAX_STREAMS = 1000
"""Concurrent streams a client may open, h2 and h3 (nginx's adapter takes as many: every stream
of the largest synthetic page at once; Jetty's defaults are 128 and 128)."""
JVM_FLAGS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k")
"""A small, quick-starting JVM: one server of one page, on the lab's 2 cores."""


def java_binary() -> str:
    return maven.tool("java")


def jar_path(src: Path = SOURCE_DIR) -> Path:
    return PROJECT.jar_path(src)


def _take_out_libquiche(jar: Path, folder: Path) -> None:
    """``libquiche.so`` out of the built jar, into the jar's folder (atomically)."""
    with zipfile.ZipFile(jar) as opened, opened.open(NATIVE_IN_JAR) as lib:
        tmp = folder / f"{NATIVE}.tmp-{os.getpid()}"
        with tmp.open("wb") as out_file:
            shutil.copyfileobj(lib, out_file)
        os.replace(tmp, folder / NATIVE)


def ensure_built(src: Path = SOURCE_DIR) -> Path:
    """The jar for the current sources, built if missing, its libquiche beside it."""
    return PROJECT.ensure_built(src, beside=_take_out_libquiche)


def resource_json(page: Page) -> list[dict[str, Any]]:
    """The resources with their lookup keys (origin/page.go's): host in lower case, the target
    and query as recorded, the path decoded; the body as a file name."""
    out = []
    for r in page.resources:
        body = page.body_file(r) if r.body_sha256 is not None else None
        out.append({
            "method": r.method,
            "host": r.origin.lower(),
            "target": r.target,
            "path": unquote(r.path),
            "query": r.query,
            "status": r.status,
            "content_type": r.content_type or "application/octet-stream",
            "headers": [[n, v] for n, v in r.headers],
            "body": str(body) if body is not None else None,
            "delay_ms": r.delay_ms,
        })  # fmt: skip
    return out


def render_config(page: Page, ctx: ServeContext, ca: LocalCA) -> dict[str, Any]:
    """Pure except for certificate creation: ``jetty.json`` (jetty/…/Config.java)."""
    origins = []
    for host in page.origins:
        pair = ca.leaf(host)
        origins.append(
            {"host": host, "ip": ctx.origin_ips[host], "cert": str(pair.cert), "key": str(pair.key)}
        )
    return {
        "origins": origins,
        "ports": {"h1c": PORTS[H1C], "tls": PORTS[H2S], "h2c": PORTS[H2C], "h3": PORTS[H3]},
        "tls_version": ctx.tls_version,
        "resumption": ctx.resumption,
        "state_dir": str(ctx.state_dir),
        "unserved_log": str(ctx.state_dir / UNSERVED_LOG),
        # Jetty's idle timeout is also how long a write may wait on a client (WRITE_TIMEOUT_S:
        # the same number)
        "idle_timeout_s": IDLE_TIMEOUT_S,
        "max_streams": MAX_STREAMS,
        "resources": resource_json(page),
    }


def serve_argv(jar: Path, conf: Path, state_dir: Path) -> list[str]:
    """The JVM's command line: libquiche from the jar's folder; JNA's own small stub unpacked
    into the state folder, not the user's home."""
    return [
        java_binary(), *JVM_FLAGS,
        f"-Djna.library.path={jar.parent}", f"-Djna.tmpdir={state_dir / 'jna'}",
        "-jar", str(jar), "-config", str(conf),
    ]  # fmt: skip


class Jetty:
    name = NAME
    protocols = TCP_PROTOCOLS | QUIC
    discoveries = FORCED_ONLY
    qlog = False

    def version(self) -> str:
        """``h2lab-jetty <source hash> jetty 12.0.36 quiche 0.24.5 java 17.0.15``."""
        return procs.run([java_binary(), "-jar", str(ensure_built()), "-version"]).strip()

    def check(self) -> None:
        """Nothing: Jetty's configuration is h2lab's alone (no ``conf=``)."""

    @contextmanager
    def serve(self, page: Page, ctx: ServeContext) -> Iterator[Serving]:
        jar = ensure_built()
        d = ctx.state_dir
        d.mkdir(parents=True, exist_ok=True)
        (d / UNSERVED_LOG).unlink(missing_ok=True)
        (d / UNSERVED_LOG).touch()
        conf = d / "jetty.json"
        conf.write_text(json.dumps(render_config(page, ctx, LocalCA(ctx.tls_dir)), indent=1))
        launch = Launch(
            NAME, serve_argv(jar, conf, d), d / "jetty.out", tail_chars=1000, udp=True,
            ready_line=READY_LINE,
        )  # fmt: skip
        with serve_process(ctx, launch, page.origins) as serving:
            yield serving


register(NAME, lambda _: Jetty())
