"""HAProxy (Debian ``haproxy``) in TCP mode in front of another server: the hidden buffer of
seed 003 as a factor. Spec: ``haproxy:backend=nginx,buffer=1MB``.

Seed 003 (Hassert, "Bad Buffers"): an h2 server behind a TCP load balancer keeps handing its
output to the balancer as long as the balancer's buffers take it, so the server's own queue
drains at once and its prioritization has nothing left to reorder; a stylesheet requested a
little after the images waits behind every image byte sitting in those buffers.

What sits between the server's HTTP/2 scheduler and the link, per connection:

* ``buffer=none``: nothing added: the backend serves the origin addresses itself (no HAProxy
  process), the "without load balancer" arm of seed 003;
* ``buffer=SIZE``: HAProxy forwards each origin address and port (80, 443, 8080) to the backend,
  which listens on a loopback address of its own in the servers namespace (``127.100.0.k``, on
  ``lo``: all of 127/8 is local, so no address to add or remove and no overlap with Rattan's
  ``10.2.<pair>.x``). TLS passes through untouched (SNI, certificates and the TLS version are
  the backend's: it gets the trial's :attr:`~h2lab.servers.ServeContext.tls_version` with the
  rest of the context; HAProxy's ``ssl-min-ver``/``ssl-max-ver`` apply only to a bind that
  terminates TLS, which none does). SIZE is the data HAProxy may hold for one connection beyond
  what the link needs: ``tune.bufsize`` = SIZE/2 (HAProxy's channel buffer: what it read from
  the server and has not written yet) and ``tune.rcvbuf.server`` = SIZE/4 (its receive socket
  towards the server; Linux doubles a SO_RCVBUF request for bookkeeping, so about SIZE/2 of the
  server's data can wait there). The client-side send buffer (``tune.sndbuf.client``) is left to
  the kernel's autotuning, as the server's own socket is without HAProxy, so the link runs at
  the same rate with and without it and only the added buffering differs.

``version()`` names HAProxy's version, the resolved tunables and the backend's version.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace

from h2lab import procs, programs
from h2lab.errors import UnitError
from h2lab.net import netns
from h2lab.pages import Page
from h2lab.servers import (
    BACKEND_DIR,
    FORCED_ONLY,
    WRITE_TIMEOUT_S,
    ServeContext,
    ServerAdapter,
    Serving,
    register,
)
from h2lab.servers import REGISTRY as SERVERS
from h2lab.servers.process import TCP_PORTS, Launch, serve_process
from h2lab.spec.options import REQUIRED, Parser, option
from h2lab.spec.protocols import QUIC
from h2lab.spec.registry import Nested
from h2lab.units import format_size, parse_size_bytes

BACKEND_NET = "127.100.0."
BACKEND_PREFIX = "127.100.0.0/24"
SOURCE_IP = f"{BACKEND_NET}254"
"""HAProxy's address towards the backend, in the same prefix so the hop's route applies both ways"""
LAN_MTU_BYTES = 1500  # Ethernet (RFC 894), what a server <-> load balancer hop runs on
# HAProxy keeps tune.maxrewrite (1024 B by default in 2.6) of each buffer free for header
# rewrites, so tune.bufsize = SIZE/2 must stay well above it.
MIN_BUFFER_BYTES = 4096


@dataclass(frozen=True)
class Tuning:
    """HAProxy's buffer settings for one ``buffer=`` value."""

    buffer_bytes: int
    bufsize_bytes: int
    """``tune.bufsize``"""
    rcvbuf_server_bytes: int
    """``tune.rcvbuf.server`` (SO_RCVBUF asked for; the kernel doubles it)"""

    @classmethod
    def for_buffer(cls, buffer_bytes: int) -> Tuning:
        return cls(buffer_bytes, buffer_bytes // 2, buffer_bytes // 4)

    def describe(self) -> str:
        return (
            f"buffer={format_size(self.buffer_bytes)}: tune.bufsize={self.bufsize_bytes} "
            f"tune.rcvbuf.server={self.rcvbuf_server_bytes}"
        )


def parse_buffer(text: str) -> Tuning | None:
    """``none`` -> None (no HAProxy); a size -> its tuning. ValueError on anything else."""
    if text == "none":
        return None
    try:
        size = parse_size_bytes(text)
    except UnitError as exc:
        raise ValueError(f"{exc} (or none)") from None
    if size < MIN_BUFFER_BYTES:
        raise ValueError(f"must be none or at least {MIN_BUFFER_BYTES} B, got {text!r}")
    return Tuning.for_buffer(size)


def backend_ips(origins: tuple[str, ...]) -> dict[str, str]:
    """Pure: the backend's loopback address per origin."""
    if len(origins) > 254:
        raise ValueError(f"at most 254 origins behind haproxy, got {len(origins)}")
    return {host: f"{BACKEND_NET}{k}" for k, host in enumerate(origins, start=1)}


def render_config(
    origin_ips: Mapping[str, str], backends: Mapping[str, str], tuning: Tuning, pid_file: str
) -> str:
    """Pure: haproxy.cfg forwarding every origin address and TCP port to its backend."""
    sections = []
    for k, (host, ip) in enumerate(origin_ips.items(), start=1):
        for port in TCP_PORTS:
            sections.append(
                f"""
listen o{k}_{port}
    # {host}
    bind {ip}:{port}
    server backend {backends[host]}:{port}"""
            )
    return f"""# generated by h2lab: {tuning.describe()}
global
    pidfile {pid_file}
    maxconn 4096
    tune.bufsize {tuning.bufsize_bytes}
    tune.rcvbuf.server {tuning.rcvbuf_server_bytes}

defaults
    mode tcp
    source {SOURCE_IP}
    timeout connect 5s
    timeout client {WRITE_TIMEOUT_S}s
    timeout server {WRITE_TIMEOUT_S}s
{"".join(sections)}
"""


class Haproxy:
    name = "haproxy"

    def __init__(self, backend_spec: str, backend: ServerAdapter, tuning: Tuning | None) -> None:
        self.backend_spec = backend_spec
        self.backend = backend
        self.tuning = tuning
        self.protocols = backend.protocols - QUIC
        self.qlog = False
        self.discoveries = FORCED_ONLY

    def version(self) -> str:
        mine = programs.HAPROXY.version() or "unknown"
        backend = f"{self.backend_spec} {self.backend.version()}"
        if self.tuning is None:
            return f"haproxy {mine} not used (buffer=none); backend {backend}"
        return f"haproxy {mine} ({self.tuning.describe()}); backend {backend}"

    def check(self) -> None:
        """The backend's (HAProxy's own configuration is h2lab's alone)."""
        self.backend.check()

    @contextmanager
    def serve(self, page: Page, ctx: ServeContext) -> Iterator[Serving]:
        if self.tuning is None:
            with self.backend.serve(page, ctx) as serving:
                yield serving
            return
        origin_ips = {h: ctx.origin_ips[h] for h in page.origins}
        backends = backend_ips(page.origins)
        ctx.state_dir.mkdir(parents=True, exist_ok=True)
        backend_ctx = replace(ctx, origin_ips=backends, state_dir=ctx.state_dir / BACKEND_DIR)
        conf = ctx.state_dir / "haproxy.cfg"
        conf.write_text(
            render_config(origin_ips, backends, self.tuning, str(ctx.state_dir / "haproxy.pid"))
        )
        procs.run(ctx.exec_argv(["haproxy", "-c", "-q", "-f", str(conf)]))
        launch = Launch(
            "haproxy", ["haproxy", "-db", "-f", str(conf)], ctx.state_dir / "haproxy.out"
        )
        with (
            lan_route(ctx.netns),
            self.backend.serve(page, backend_ctx) as backend,
            serve_process(ctx, launch, page.origins) as serving,
        ):
            yield serving.also(backend)


@contextmanager
def lan_route(ns: str) -> Iterator[None]:
    """The backend hop as an Ethernet LAN: a route for the backend prefix with MTU 1500. On
    plain loopback (MTU 65536) the server's socket towards HAProxy autotunes its send buffer
    to 2.6 MB at once (2 x cwnd 10 x 64 KiB segments; measured with ``ss -m``), a buffer no
    server <-> balancer link over Ethernet has, and larger than any ``buffer=`` asked for."""
    route = ["route", "replace", "local", BACKEND_PREFIX, "dev", "lo", "table", "local"]
    procs.run(netns.exec_argv(ns, ["ip", *route, "mtu", "lock", str(LAN_MTU_BYTES)]))
    try:
        yield
    finally:
        procs.run(
            netns.exec_argv(ns, ["ip", "route", "del", "local", BACKEND_PREFIX, "table", "local"]),
            check=False,
        )


def _not_itself(name: str) -> str:
    return "haproxy cannot be its own backend" if name == "haproxy" else ""


@dataclass(frozen=True)
class Options:
    """``haproxy:backend=SERVER,buffer=SIZE``, parsed by the registry."""

    backend: Nested[ServerAdapter] = option(
        SERVERS.nested(_not_itself),
        REQUIRED,
        "the server behind HAProxy (TCP mode: TLS passes through to it); its own options "
        "joined by ';' (required)",
        "backend=nginx,buffer=none",
    )
    buffer: Tuning | None = option(
        Parser(f"none|SIZE (at least {MIN_BUFFER_BYTES} B)", parse_buffer),
        REQUIRED,
        "HAProxy's buffer per direction (tune.bufsize; seed 003's hidden buffer; required)",
        "backend=h2o,buffer=1MB",
    )


register("haproxy", lambda o: Haproxy(o.backend.spec, o.backend.adapter, o.buffer), Options)
