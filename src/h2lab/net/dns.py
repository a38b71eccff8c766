"""The lab's DNS server: Unbound in the servers namespace at :data:`DNS_IP`, so a lookup
crosses the emulated link as one to an access network's resolver does. It answers an A record
for every lab origin and NXDOMAIN at once for any other name (``local-zone: "." static``: it
never recurses, nothing leaves the lab), and logs every query and its answer.

With ``discovery = "https-rr"`` it also answers an HTTPS record (RFC 9460) for each h3 origin
of the trial's cell (:meth:`LabDns.publish`), and the browsers of that cell look every lab name
up here (:mod:`h2lab.clients.browser.names`).

The client namespace's ``/etc/resolv.conf`` names it (:func:`resolv_conf`). A name the capture
lacks then fails in one round trip of the link, where before the lookup went to the machine's
resolver, unreachable from the namespace, and Firefox waited 10-20 s for each such host
(``NS_ERROR_UNKNOWN_HOST``). The lab's origins stay in the namespace's ``/etc/hosts`` as
before (no lookup crosses the link for them). Chromium answers every name itself
(``--host-resolver-rules``: the lab's origins, and "not found" at once for any other), because
given a resolver it looks up Google's services while it idles (``update.googleapis.com``,
``clients2.google.com``, ``accounts.google.com``: A twice and HTTPS once each, measured
2026-11-29), lookups that would land in whatever trial runs beside it in the namespace.

Unbound rereads its configuration on SIGHUP: :meth:`LabDns.publish` rewrites the records when
the lab gains origins or a cell asks for other HTTPS records, and waits until the server
answers the new configuration's serial (a TXT record, :data:`SERIAL_NAME`). It runs in the
foreground (``-d``) as whoever started it (no chroot, no user switch), with nothing of the
host's configuration: only the file written here.
"""

from __future__ import annotations

import re
import secrets
import signal
import socket
import struct
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from h2lab import procs, programs
from h2lab.errors import ProcessFailed
from h2lab.logtail import read_since, size_of
from h2lab.net import netns

DNS_IP = "10.2.0.253"
"""The resolver's address on the servers namespace's loopback: in the origins' range
(``10.2.0.k``, k at most 250) but no origin's, nor the round-trip probe's (``.254``)."""
DNS_PORT = 53
DNS_FOLDER = "dns"
DNS_LOG = "dns.log"
"""The resolver's log of answers, in its folder (:class:`Lookups` reads it)."""
"""The resolver's folder in the lab's state folder: its configuration and ``dns.log``."""
READY_TIMEOUT_S = 10.0
TTL_S = 3600
"""The records' TTL: a trial's lookups are answered once and cached for the rest of it."""


HTTPS_RDATA = "HTTPS 1 . alpn=h3,h2"
"""The HTTPS record (RFC 9460) of an h3 origin: service mode, the origin itself (``.``),
h3 and h2, as deployed sites publish it (Cloudflare's ``alpn="h3,h2"``); the address stays in
the A record."""
SERIAL_NAME = "serial.h2lab-dns."
"""A TXT record carrying the configuration's number: :meth:`LabDns.publish` asks it until the
reloaded server answers the new one (lookups of it are no trial's: :func:`answers` skips it)."""


def unbound_conf(
    folder: Path, records: Mapping[str, str], https: Iterable[str] = (), serial: int = 0
) -> str:
    """Pure: Unbound's configuration answering ``records`` (host -> IPv4 address), an HTTPS
    record (:data:`HTTPS_RDATA`) for each host of ``https`` that has an address, the
    ``serial`` (:data:`SERIAL_NAME`), and NXDOMAIN for every other name, logging to
    ``folder``."""
    lines = [
        "server:",
        f"    interface: {DNS_IP}",
        f"    port: {DNS_PORT}",
        "    do-ip6: no",
        "    do-daemonize: no",
        '    username: ""',
        '    chroot: ""',
        f'    directory: "{folder}"',
        f'    pidfile: "{folder / "unbound.pid"}"',
        f'    logfile: "{folder / DNS_LOG}"',
        "    use-syslog: no",
        "    log-time-ascii: no",
        "    log-queries: yes",
        "    log-replies: yes",
        "    verbosity: 0",
        "    num-threads: 1",
        "    so-reuseport: no",
        "    outgoing-range: 16",
        "    access-control: 0.0.0.0/0 allow",
        '    module-config: "iterator"',
        "    hide-identity: yes",
        "    hide-version: yes",
        '    local-zone: "." static',
    ]
    for host, ip in sorted(records.items()):
        lines.append(f'    local-data: "{host}. {TTL_S} IN A {ip}"')
    for host in sorted(set(https) & set(records)):
        lines.append(f'    local-data: "{host}. {TTL_S} IN {HTTPS_RDATA}"')
    lines.append(f'    local-data: "{SERIAL_NAME} 0 IN TXT {serial}"')
    lines += ["remote-control:", "    control-enable: no"]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Answer:
    """One query the lab's resolver answered, from its log."""

    at_s: int
    """when (seconds since the epoch: Unbound logs whole seconds)"""
    client: str
    name: str
    """as asked, with its final dot"""
    qtype: str
    rcode: str
    """``NOERROR``, ``NXDOMAIN``..."""


_ANSWER = re.compile(
    r"^\[(\d+)\] unbound\[[\d:]+\] info: (\S+) (\S+) (\S+) IN ([A-Z]+) [\d.]+ \d+ \d+$"
)


def answers(log: str) -> list[Answer]:
    """Pure: the answers in Unbound's log (``log-replies``; queries without an answer and other
    lines are not)."""
    found = []
    for line in log.splitlines():
        if (m := _ANSWER.match(line)) and m.group(3) != SERIAL_NAME:
            at, client, name, qtype, rcode = m.groups()
            found.append(Answer(int(at), client, name, qtype, rcode))
    return found


class Lookups:
    """The lab resolver's log (``folder/dns.log``) read from a mark on: one trial's lookups.
    Unbound writes each line as it answers, so once the client has its answers, so has the
    log."""

    def __init__(self, folder: Path) -> None:
        self.log = folder / DNS_LOG

    def mark(self) -> int | None:
        """Where the log ends now; None: no resolver runs (a lab without one)."""
        return size_of(self.log)

    def since(self, mark: int | None) -> list[Answer] | None:
        """The answers logged since ``mark`` (:func:`h2lab.logtail.read_since`), or None when
        there was no log at ``mark``."""
        if mark is None or not self.log.exists():
            return None
        return answers(read_since(self.log, mark))


def resolv_conf() -> str:
    """The client namespace's ``/etc/resolv.conf``: the lab's resolver only, glibc's defaults
    otherwise (5 s before a lost query is sent again, as on a machine in the field)."""
    return f"nameserver {DNS_IP}\n"


class LabDns:
    """The lab's Unbound, started in ``servers_ns`` with its files in ``folder``."""

    def __init__(self, servers_ns: str, folder: Path) -> None:
        self.servers_ns = servers_ns
        self.folder = folder
        self.conf = folder / "unbound.conf"
        self.proc: subprocess.Popen[bytes] | None = None
        self.serial = 0
        self.records: dict[str, str] = {}
        self.https: frozenset[str] = frozenset()
        """the hosts with an HTTPS record now"""

    def start(self, records: Mapping[str, str]) -> None:
        """Start answering ``records``; returns once UDP port 53 is bound."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self.records = dict(records)
        self.conf.write_text(unbound_conf(self.folder, records, self.https, self.serial))
        argv = [programs.UNBOUND.executable, "-d", "-c", str(self.conf)]
        proc = procs.spawn(netns.exec_argv(self.servers_ns, argv), log=self.folder / "unbound.out")
        self.proc = proc

        def ready() -> bool:
            if proc.poll() is not None:
                tail = (self.folder / "unbound.out").read_text(errors="replace")[-500:]
                raise ProcessFailed([programs.UNBOUND.name], proc.returncode, tail)
            udp = netns.sockets(netns.read_proc_net(self.servers_ns, "udp"))
            return (DNS_IP, DNS_PORT) in udp

        procs.wait_until("the lab's DNS server on port 53", ready, timeout_s=READY_TIMEOUT_S)

    def publish(self, records: Mapping[str, str], https: Iterable[str] | None = None) -> None:
        """Answer ``records`` from now on, and HTTPS records for the hosts of ``https`` (None:
        those of now); nothing to do when they are what is answered now. Unbound rereads its
        configuration on SIGHUP; this returns once it answers the new one (its serial), so
        that no lookup of the next trial reaches the old one."""
        wanted = self.https if https is None else frozenset(https)
        if self.proc is None or self.proc.poll() is not None:
            return
        if dict(records) == self.records and wanted == self.https:
            return
        self.serial += 1
        self.records, self.https = dict(records), wanted
        self.conf.write_text(unbound_conf(self.folder, records, wanted, self.serial))
        self.proc.send_signal(signal.SIGHUP)
        token = str(self.serial).encode()

        def reloaded() -> bool:
            if self.proc is None or self.proc.poll() is not None:
                tail = (self.folder / "unbound.out").read_text(errors="replace")[-500:]
                raise ProcessFailed([programs.UNBOUND.name], None, tail)
            answer = netns.run_in_netns(self.servers_ns, lambda: ask_txt(SERIAL_NAME))
            return answer is not None and txt_strings(answer) == [token]

        procs.wait_until("the lab's DNS server reloaded", reloaded, timeout_s=READY_TIMEOUT_S)

    def stop(self) -> None:
        if self.proc is not None:
            procs.stop(self.proc)
            self.proc = None


QUERY_TIMEOUT_S = 0.2


def ask_txt(name: str, server: tuple[str, int] = (DNS_IP, DNS_PORT)) -> bytes | None:
    """One TXT query for ``name`` to ``server`` over UDP (from the caller's namespace): the
    answer's bytes, or None without one in :data:`QUERY_TIMEOUT_S`."""
    qid = secrets.randbits(16)
    labels = b"".join(bytes([len(p)]) + p.encode() for p in name.rstrip(".").split("."))
    query = (
        struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
        + labels
        + b"\0"
        + struct.pack("!HH", TXT, 1)
    )
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(QUERY_TIMEOUT_S)
        try:
            sock.sendto(query, server)
            data, _ = sock.recvfrom(4096)
        except OSError:  # a timeout, or nothing listening (the server reloading)
            return None
    return data if len(data) >= 12 and struct.unpack("!H", data[:2])[0] == qid else None


TXT = 16


def txt_strings(message: bytes) -> list[bytes]:
    """Pure: the character strings of the first TXT record in the answer section of a DNS
    ``message`` (its question skipped); none when it has none or is malformed."""
    try:
        qd, an = struct.unpack("!HH", message[4:8])
        at = 12
        for _ in range(qd):
            at = _skip_name(message, at) + 4
        for _ in range(an):
            at = _skip_name(message, at)
            rtype, _, _, length = struct.unpack("!HHIH", message[at : at + 10])
            at += 10
            if rtype == TXT:
                rdata, out = message[at : at + length], []
                while rdata:
                    out.append(rdata[1 : 1 + rdata[0]])
                    rdata = rdata[1 + rdata[0] :]
                return out
            at += length
    except (struct.error, IndexError):
        return []
    return []


def _skip_name(message: bytes, at: int) -> int:
    """Where the (possibly compressed) name at ``at`` ends."""
    while True:
        n = message[at]
        if n == 0:
            return at + 1
        if n & 0xC0 == 0xC0:
            return at + 2
        at += 1 + n
