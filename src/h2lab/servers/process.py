"""A server as a process: started in the servers namespace, ready once every port it is to
serve is bound on every origin address, stopped with its children on exit.

Every adapter starts its program through :func:`serve_process`; what differs between servers
(the configuration, its test, the files a server complains in, a line it prints once started)
is the adapter's, in a :class:`Launch`. One readiness timeout and one port set for them all:
the ports are :data:`h2lab.spec.protocols.PORTS`, TCP for every protocol over TCP, UDP for QUIC.

Readiness is read from the namespace's socket tables (``/proc/net/tcp``, ``/proc/net/udp``), not
by connecting: a TCP socket in LISTEN state has the kernel complete a client's handshake even
before the server's worker accepts, which is all a probe connection showed, and no probe
reaches a server's logs or its per-connection records (the origin's frame log). A UDP port has
no handshake to probe; bound is what QUIC's listener is before its first packet.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from h2lab import procs
from h2lab.errors import ProcessFailed
from h2lab.net import netns
from h2lab.servers import ServeContext, Serving, Watched
from h2lab.spec.protocols import PORTS, QUIC, TCP_PROTOCOLS

READY_TIMEOUT_S = 30.0
"""How long any server has to bind every port after its start: most take well under a second
(HAProxy 3.0 and Caddy, loaded from Debian 13's folder, the longest), Jetty's JVM with
libquiche 1-2 s alone and more on two busy cores. A bound, not a wait: a server that is ready
sooner is used sooner."""

TCP_PORTS = tuple(sorted({PORTS[p] for p in TCP_PROTOCOLS}))
"""The TCP ports every server listens on, per origin address (80, 443, 8080)."""
UDP_PORTS = tuple(sorted({PORTS[p] for p in QUIC}))
"""The UDP ports a server that serves HTTP/3 binds, per origin address (443)."""

ANY_ADDRESS = "0.0.0.0"


@dataclass(frozen=True)
class Launch:
    """One server program as :func:`serve_process` starts it."""

    name: str
    """the name the runner reports it by (:class:`~h2lab.servers.Watched`), and the readiness
    wait's"""
    argv: Sequence[str]
    """the command, run in the servers namespace (:meth:`ServeContext.exec_argv`)"""
    out: Path
    """where its stdout and stderr go"""
    logs: tuple[Path, ...] = ()
    """the files it writes complaints to besides ``out`` (an error log)"""
    program: str = ""
    """the program an early exit names (:class:`ProcessFailed`); ``name`` if empty"""
    said: tuple[Path, ...] | None = None
    """the files whose tail an early exit carries, in order; ``out`` and ``logs`` if None"""
    tail_chars: int = 500
    """how much of their end"""
    udp: bool = False
    """whether it also binds :data:`UDP_PORTS` (it serves HTTP/3)"""
    ready_line: str = ""
    """a line ``out`` holds once the program has started everything (its own word that every
    listener is up, beside the socket tables)"""
    tcp: bool = True
    """whether it listens on :data:`TCP_PORTS` (an HTTP/3-only server does not)"""


def bound(
    tcp_table: str, udp_table: str, ips: Iterable[str], udp: bool, *, tcp_ports: bool = True
) -> bool:
    """Pure: every TCP port of :data:`TCP_PORTS` (unless not ``tcp_ports``) listens on every
    address of ``ips`` (or on every address), and, with ``udp``, every port of
    :data:`UDP_PORTS` is bound there, by the text of ``/proc/net/tcp`` and ``/proc/net/udp``."""
    tcp = netns.sockets(tcp_table, netns.TCP_LISTEN)
    udp_bound = netns.sockets(udp_table) if udp else set()
    for ip in ips:
        for port in TCP_PORTS if tcp_ports else ():
            if (ip, port) not in tcp and (ANY_ADDRESS, port) not in tcp:
                return False
        for port in UDP_PORTS if udp else ():
            if (ip, port) not in udp_bound and (ANY_ADDRESS, port) not in udp_bound:
                return False
    return True


def _tail(paths: Iterable[Path], chars: int) -> str:
    text = "".join(p.read_text(errors="replace") for p in paths if p.exists())
    return text[-chars:]


@contextmanager
def serve_process(ctx: ServeContext, launch: Launch, origins: Iterable[str]) -> Iterator[Serving]:
    """Start ``launch`` in the servers namespace and yield its :class:`Serving` once it serves
    on the address of every host of ``origins`` (the page's, :attr:`ServeContext.origin_ips`);
    stop it and its process group on exit. :class:`ProcessFailed` with the tail of its logs if
    it exits first; :class:`~h2lab.errors.WaitTimeout` after :data:`READY_TIMEOUT_S`."""
    ips = tuple(ctx.origin_ips[host] for host in origins)
    proc = procs.spawn(ctx.exec_argv(list(launch.argv)), log=launch.out)
    try:

        def ready() -> bool:
            if proc.poll() is not None:
                said = launch.said if launch.said is not None else (launch.out, *launch.logs)
                tail = _tail(said, launch.tail_chars)
                raise ProcessFailed([launch.program or launch.name], proc.returncode, tail)
            if launch.ready_line and launch.ready_line not in _tail((launch.out,), 1 << 20):
                return False
            tcp = netns.read_proc_net(ctx.netns, "tcp")
            udp = netns.read_proc_net(ctx.netns, "udp") if launch.udp else ""
            return bound(tcp, udp, ips, launch.udp, tcp_ports=launch.tcp)

        procs.wait_until(
            f"{launch.name} listening on every origin port", ready, timeout_s=READY_TIMEOUT_S
        )
        yield Serving(Watched(launch.name, proc, (launch.out, *launch.logs)))
    finally:
        procs.stop(proc)
