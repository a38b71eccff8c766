"""Servers: a :class:`ServerAdapter` protocol and a registry. The runner never branches on names."""

from __future__ import annotations

import signal
import subprocess
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from h2lab.errors import telling_line
from h2lab.logtail import read_since
from h2lab.net import netns, userns
from h2lab.pages import Page
from h2lab.servers.quic import QuicLedger
from h2lab.spec.limits import MAX_TIMEOUT_S
from h2lab.spec.protocols import TLS_VERSIONS
from h2lab.spec.registry import Registry

WRITE_TIMEOUT_S = int(MAX_TIMEOUT_S)
"""How long a server waits on a client that reads nothing before it gives up on a response,
and on a connection's TLS handshake and request header (from the connection's start for its
first request). Servers' own defaults are too short for an emulated slow link: nginx's
``send_timeout`` 60 s reset 22 of 31 h2 streams of Fig. 1c on cell-poor (Chromium's
priorities queue each image behind the others, and a queued stream waited over 60 s), as
Apache's ``Timeout`` 60 s would; and the origin's 10 s handshake and 30 s header deadlines
closed connections whose client had sent (or would send) a request: a TLS 1.3 client ends
the handshake before the server has its Finished, and Chromium opens sockets ahead and may
first use one minutes later (``net::ERR_EMPTY_RESPONSE`` on h1s loads of mitmproxy.org and
reddit on cell-poor), as nginx's ``client_header_timeout`` 60 s and H2O's 10 s
``handshake-timeout`` would. At least any trial's ``timeout_s``, so a slow load ends by its
own timeout."""

IDLE_TIMEOUT_S = WRITE_TIMEOUT_S
"""How long a server keeps a keep-alive connection with no request in progress. A server
counts a response as sent when its last byte is in the kernel's send buffer, not when the
client has it: on a slow link with a deep queue the buffer holds up to a megabyte (1 Mbit/s,
8-9 s RTT in Table I's grid), which can take longer than nginx's, Apache's, H2O's or the
origin's usual 5-120 s to drain; the server then closes the connection under a client still
reading its last response, and h2load fails the requests it sends next on it (our reading of
``4/6 requests succeeded``, h1s 32 x 1 MB at 1 Mbit/s, docs/servers.md), a browser opens
another connection. As long as the write timeout: the runner destroys the servers'
connections to the client side before each trial
(:meth:`h2lab.net.lab.Lab.reset_client_connections`), so none idles into the next."""


BACKEND_DIR = "backend"
"""The state folder of a proxy's backend server, inside the proxy's (HAProxy)."""

REQUEST_LOG = "requests.log"
"""Where a server that can writes, one line per request, ``<bytes> <protocol>``: the bytes of the
request's line and headers as it received them (nginx's ``$request_length``: HTTP/1.x the
request line and header lines; HTTP/2 the HEADERS frame's payload, HPACK-compressed)."""

H2_FRAME_HEADER_BYTES = 9


def request_header_bytes(lines: str) -> int:
    """Request header bytes on the wire for the lines of a :data:`REQUEST_LOG`: HTTP/2 adds
    the 9-byte header of each HEADERS frame to what the server counted."""
    total = 0
    for line in lines.splitlines():
        size, _, proto = line.partition(" ")
        if size.isdigit():
            total += int(size) + (H2_FRAME_HEADER_BYTES if proto.startswith("HTTP/2") else 0)
    return total


class RequestLog:
    """The :data:`REQUEST_LOG` of the server in ``state_dir`` (or of its backend, behind
    HAProxy), read from a mark on: the request header bytes of one trial."""

    def __init__(self, state_dir: Path) -> None:
        self._paths = (state_dir / REQUEST_LOG, state_dir / BACKEND_DIR / REQUEST_LOG)

    def mark(self) -> dict[Path, int]:
        return {p: p.stat().st_size for p in self._paths if p.exists()}

    def since(self, mark: dict[Path, int]) -> int | None:
        """Bytes of the requests logged since ``mark`` (:func:`h2lab.logtail.read_since`);
        None when the server keeps no log."""
        logs = [p for p in self._paths if p.exists()]
        if not logs:
            return None
        return sum(request_header_bytes(read_since(p, mark.get(p, 0))) for p in logs)


ROOTLESS_NO_USER = "# rootless mode: the server runs as the user, who switches to no other"
"""What a server's configuration says in rootless mode where root mode names its user."""


FORCED_ONLY: frozenset[str] = frozenset({"forced"})
"""The discovery of a server that sends no ``Alt-Svc`` header: h3 only where a client forces it."""


@dataclass(frozen=True)
class ServeContext:
    """Everything a server needs to serve a page inside the lab."""

    netns: str
    """servers namespace name"""
    origin_ips: dict[str, str]
    """origin hostname -> address on the servers side"""
    state_dir: Path
    """folder for the server's config, pid and logs"""
    tls_dir: Path
    """folder of the local CA; leaf certificates are made there"""
    tls_version: str = "1.3"
    """the only TLS version the servers offer for TLS over TCP (h1s, h2s): ``1.2`` or ``1.3``
    (the trial's ``tls`` factor); a client asking for the other fails its handshake. QUIC (h3)
    is TLS 1.3 whatever this says (RFC 9001)."""
    resumption: bool = False
    """the repeat view's servers: TLS session tickets on (off otherwise, so that a first
    view's bytes carry none), so a client may resume, and send early data where the server
    accepts it (docs/servers.md, "Repeat view")"""
    alt_svc: frozenset[str] = frozenset()
    """the origins that advertise HTTP/3 in an ``Alt-Svc`` header on every response
    (``discovery = "alt-svc"``: those of ``h3_origins``; none otherwise, as no h2lab server
    sent one before the factor). Only servers with ``alt-svc`` in
    :attr:`ServerAdapter.discoveries`"""
    qlog: bool = False
    """write a qlog file per QUIC connection (``capture = ["qlog"]``), where the server can
    (:attr:`ServerAdapter.qlog`)"""

    def __post_init__(self) -> None:
        if self.tls_version not in TLS_VERSIONS:
            raise ValueError(
                f"tls_version {self.tls_version!r}: expected one of {', '.join(TLS_VERSIONS)}"
            )

    def exec_argv(self, argv: list[str]) -> list[str]:
        """``argv`` run in the servers namespace; as the user's own uid in rootless mode
        (docs/rootless.md: a server's switch to another user needs ``setgroups``, which an
        unprivileged user namespace denies)."""
        return netns.exec_argv(self.netns, userns.unprivileged(argv))

    @property
    def tls_protocol(self) -> str:
        """:attr:`tls_version` as OpenSSL names it (``TLSv1.2``), as nginx, H2O and Apache
        spell it in their configs."""
        return f"TLSv{self.tls_version}"


def exit_text(returncode: int) -> str:
    """``code 2`` or ``signal SIGSEGV`` (Popen's negative return codes)."""
    if returncode < 0:
        try:
            return f"signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"signal {-returncode}"
    return f"code {returncode}"


@dataclass(frozen=True)
class Watched:
    """One process a server runs as, and the files it writes its complaints to."""

    name: str
    proc: subprocess.Popen[bytes]
    logs: tuple[Path, ...]


class Serving:
    """What :meth:`ServerAdapter.serve` yields: the processes serving the page, so that the
    runner can tell a server that died from a client that failed, keep its logs, and start it
    again for the next trial."""

    def __init__(self, *watched: Watched, quic: QuicLedger | None = None) -> None:
        self.watched = list(watched)
        self.quic = quic
        """its QUIC connections' counts and qlog files, where the server tells them (the
        origin's)"""

    def also(self, other: Serving) -> Serving:
        """This and ``other`` (a proxy and its backend): dead when either is. Its QUIC counts
        are the proxy's (none): the proxy ends the client's connections."""
        return Serving(*self.watched, *other.watched, quic=self.quic)

    def exited(self) -> str | None:
        """None while every process runs; else one line: which exited, how, and the telling
        line of its logs."""
        for w in self.watched:
            code = w.proc.poll()
            if code is None:
                continue
            text = "".join(p.read_text(errors="replace")[-4000:] for p in w.logs if p.exists())
            said = telling_line(text)
            return f"{w.name} exited with {exit_text(code)}" + (f": {said}" if said else "")
        return None

    def logs(self) -> list[Path]:
        return [p for w in self.watched for p in w.logs if p.exists()]


class ServerAdapter(Protocol):
    name: str
    protocols: frozenset[str]
    """protocols it serves (a trial asking another fails validation)"""
    qlog: bool
    """whether it writes a qlog file per QUIC connection when asked (:attr:`ServeContext.qlog`)"""
    discoveries: frozenset[str]
    """the ``discovery`` factor's levels it serves (:data:`FORCED_ONLY` for most): ``alt-svc``
    when it can advertise h3 in an ``Alt-Svc`` header, per origin (:attr:`ServeContext.alt_svc`)"""

    def version(self) -> str: ...

    def check(self) -> None:
        """Test the configuration the user gave (``conf=``, :mod:`h2lab.servers.fragment`) with
        the server's own configuration test, serving nothing; :class:`SpecError` naming the
        file and carrying the server's message when it fails. Nothing to do without one."""
        ...

    def serve(self, page: Page, ctx: ServeContext) -> AbstractContextManager[Serving]:
        """Start serving ``page`` on every origin address; ready when entered; stopped on exit."""
        ...


ADAPTERS = tuple(
    f"h2lab.servers.{m}"
    for m in ("apache", "caddy", "h2o", "haproxy", "haproxy3", "jetty", "nginx", "ngtcp2", "origin")
)
"""The modules that register a server when imported, one line each (the only place that names
them). Loaded by name, as plug-ins: the registry depends on none of them, they depend on it (no
import cycle)."""

REGISTRY: Registry[ServerAdapter] = Registry("server", ADAPTERS)
"""Every server by name, with its options (:mod:`h2lab.spec.registry`)."""

register = REGISTRY.register
names = REGISTRY.names
options_of = REGISTRY.options_of


def get(spec: str, source: str = "server", field: str = "server") -> ServerAdapter:
    """The server named by ``spec``: a name, or ``name:key=value,...``; :class:`SpecError`
    naming ``source`` and ``field`` when it is unknown or its options are not taken."""
    return REGISTRY.get(spec, source, field)
