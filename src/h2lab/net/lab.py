"""A lab instance: the servers namespace with one IP per origin, and per-trial Rattan links
that create the client namespace.

Names: instance id ``h2lab-<6 hex>``; namespaces ``<id>-servers`` and ``<id>-client``; state
folder ``/run/h2lab/<id>``. Rattan names its own namespaces ``ns-left-XXXXXX`` and
``ns-rattan-XXXXXX``; the lab records them in its state folder so ``h2lab clean`` can find them.

Lifecycle: the servers namespace lives for the whole lab (servers start once per block); each
trial gets a fresh :class:`Link` — a fresh client namespace (no TCP metrics, no sockets, zeroed
counters) and a fresh loss process seeded by the trial seed.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path
from types import TracebackType

from h2lab import procs
from h2lab.artifacts import LINK_RATTAN_LOG, LINK_STATE
from h2lab.errors import H2LabError
from h2lab.net import calibration, netns, rattan, rmem, userns
from h2lab.net.addresses import ip_literal, why_not_servable
from h2lab.net.clean import clean_stale
from h2lab.net.dns import DNS_FOLDER, DNS_IP, LabDns, resolv_conf
from h2lab.net.probe import rtt_samples_ms
from h2lab.net.rmem import RATTAN_RCVBUF_BYTES
from h2lab.net.teardown import PREFIX, teardown_lab, teardown_link
from h2lab.paths import netns_etc, owners_root, state_root
from h2lab.spec.network import NetworkProfile, parse_network
from h2lab.spec.tcp import TcpSettings

# Origins live on the servers namespace's loopback at 10.2.0.k: Rattan numbers its veth pairs
# 10.2.<pair>.x with pair >= 1, so pair 0 never collides with Rattan's own addresses.
ORIGIN_NET = "10.2.0."
MAX_ORIGINS = 250
CLIENT_NET = "10.1.0.0/16"
"""Rattan's client side: it numbers the veth pairs toward the client 10.1.<pair>.x."""
PROBE_IP = ORIGIN_NET + "254"
"""An address of the servers namespace that is no origin: round-trip probes that need no
server (a SYN to a closed port comes back as a RST), e.g. Rattan's calibration."""
RATTAN_START_TIMEOUT_S = 20.0
LOG_TAIL_CHARS = 64 * 1024
"""How much of Rattan's log and of each link command's output a failed trial keeps."""


class Link:
    """One Rattan process: the emulated path and the client namespace behind it."""

    def __init__(
        self,
        lab: Lab,
        profile: NetworkProfile,
        seed: int,
        tcp: TcpSettings,
        delay_overhead_ms: float | None = None,
    ) -> None:
        self.lab = lab
        self.profile = profile
        self.seed = seed
        self.tcp = tcp
        self.delay_overhead_ms = delay_overhead_ms
        """Rattan's own latency per direction taken off the Delay cells (None: the lab's
        calibration, measured on first use)"""
        self.client_ns = f"{lab.id}-client"
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir = lab.state_dir / "link"
        self.started_at = 0.0
        """monotonic time Rattan was started (its traces start then)"""
        self.rattan_pid: int | None = None
        self.rattan_ns: str | None = None
        """the namespace Rattan's packet sockets live in (``ns-rattan-XXXXXX``)"""
        self.client_ip = ""
        """the client's address on the link (Rattan picks 10.1.1.x)"""

    def __enter__(self) -> Link:
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _start(self) -> None:
        if self.delay_overhead_ms is None:
            self.delay_overhead_ms = self.lab.delay_overhead_ms()
        shutil.rmtree(self._dir, ignore_errors=True)
        self._dir.mkdir(parents=True)
        holder = self._dir / "holder.pid"
        files = rattan.build_config(
            self.profile, self.seed, self._dir, holder, self.delay_overhead_ms
        )
        for name, text in files.files.items():
            (self._dir / name).write_text(text)
        config = self._dir / "rattan.toml"
        config.write_text(files.config_toml)
        # If Rattan dies before we learn its namespace names, teardown finds them by this list.
        (self._dir / "netns-before.json").write_text(json.dumps(netns.list_netns()))
        argv = [
            "nsenter",
            f"--net={netns.netns_path(self.lab.servers_ns)}",
            str(rattan.rattan_binary()),
            "run",
            "-c",
            str(config),
        ]

        def ready() -> bool:
            if self._proc is not None and self._proc.poll() is not None:
                tail = (self._dir / "rattan.log").read_text(errors="replace")[-600:]
                raise H2LabError(f"rattan exited with {self._proc.returncode}: {tail.strip()}")
            return holder.exists()

        # Rattan's packet sockets take their receive buffer from net.core.rmem_default when it
        # starts; raised for those seconds only (see net/rmem.py), then put back. A user
        # namespace or a container cannot: there the sockets are raised after it starts.
        rootless = userns.active()
        after = rmem.raised_after_start(rootless)
        with contextlib.nullcontext() if after else rmem.rmem_default_raised(self._dir):
            # Rattan removes its namespaces on SIGINT (its Ctrl-C handler); SIGTERM kills it.
            log = self._dir / "rattan.log"
            self._proc = procs.spawn(argv, log=log, death_signal=signal.SIGINT)
            self.started_at = time.monotonic()
            self.rattan_pid = self._proc.pid
            (self._dir / "rattan.pid").write_text(str(self._proc.pid))
            procs.wait_until("rattan link up", ready, timeout_s=RATTAN_START_TIMEOUT_S)
        if after:
            self._raise_rcvbuf_after_start(force=not rootless)
        pid = int(holder.read_text())
        procs.run(["ip", "netns", "attach", self.client_ns, str(pid)])
        self._record_rattan_namespaces()
        etc = netns_etc(self.client_ns)
        etc.mkdir(parents=True, exist_ok=True)
        (etc / "hosts").write_text(self.lab.hosts_file())
        (etc / "resolv.conf").write_text(resolv_conf())
        if rootless:
            userns.publish_hosts(self.lab.hosts_file())
        quiet_ipv6(self.client_ns)
        self.client_ip = _link_address(self.client_ns)
        for ns in (self.client_ns, self.lab.servers_ns):
            apply_tcp(ns, self.tcp, socket_buffer_caps(self.profile))

    def _raise_rcvbuf_after_start(self, force: bool) -> None:
        """Rattan's packet sockets to :data:`RATTAN_RCVBUF_BYTES`: as root (a container) with
        SO_RCVBUFFORCE, in a user namespace up to 2 x net.core.rmem_max."""
        assert self._proc is not None
        try:
            userns.raise_packet_rcvbuf(self._proc.pid, RATTAN_RCVBUF_BYTES, force=force)
        except OSError as exc:
            if not force:
                raise
            raise H2LabError(
                "net.core.rmem_default is read-only here (a container?) and Rattan's packet "
                f"sockets could not be raised instead ({exc.strerror}): run the container with "
                "--cap-add=SYS_PTRACE (pidfd_getfd) or --privileged (docs/container.md)"
            ) from exc

    def _record_rattan_namespaces(self) -> None:
        ino = netns.inode(netns.netns_path(self.client_ns))
        for name in netns.list_netns():
            if name.startswith("ns-left-") and netns.inode(netns.netns_path(name)) == ino:
                suffix = name.removeprefix("ns-left-")
                names = [name, f"ns-rattan-{suffix}"]
                self.rattan_ns = names[1]
                (self._dir / "rattan-netns.json").write_text(json.dumps(names))

    def emulator_drops(self) -> int | None:
        """Packets Rattan's sockets dropped since it started, full (sk_drops of its
        AF_PACKET sockets, ``ss -0 -m``'s ``d``): packets the link lost that no loss model
        asked for. None when the namespace is unknown."""
        if self.rattan_ns is None:
            return None
        return packet_socket_drops(
            procs.run(netns.exec_argv(self.rattan_ns, ["ss", "-0", "-m", "-n"]))
        )

    def diagnostics(self) -> dict[str, str]:
        """What a failed trial keeps of its link, by file name: the end of Rattan's log, and
        whether Rattan ran, its packet sockets' drops, the client side's interface counters and
        TCP sockets at the end (a link that carried nothing shows as packets sent and none
        received)."""
        kept: dict[str, str] = {}
        with contextlib.suppress(OSError):
            kept[LINK_RATTAN_LOG] = (self._dir / "rattan.log").read_text(errors="replace")[
                -LOG_TAIL_CHARS:
            ]
        lines = [f"rattan running: {self.alive()}", f"emulator drops: {self._drops_or_none()}"]
        for argv in (["ip", "-s", "link"], ["ss", "-t", "-a", "-n", "-i"]):
            try:
                out = procs.run(netns.exec_argv(self.client_ns, argv))
            except H2LabError as exc:
                out = exc.line()
            lines += [f"$ {' '.join(argv)} (client namespace)", out[-LOG_TAIL_CHARS:]]
        kept[LINK_STATE] = "\n".join(lines) + "\n"
        return kept

    def _drops_or_none(self) -> int | None:
        try:
            return self.emulator_drops()
        except H2LabError:
            return None

    def alive(self) -> bool:
        """Rattan still runs (a link can be reused only then)."""
        return self._proc is not None and self._proc.poll() is None

    def close(self) -> None:
        if self._proc is not None:
            procs.stop(self._proc, sig=signal.SIGINT, group=False)
            self._proc = None
        teardown_link(self.lab.id, self._dir)


def packet_socket_drops(ss_text: str) -> int:
    """The sum of the ``d`` (sk_drops) fields of ``ss -0 -m``'s ``skmem:(...)`` lists."""
    return sum(int(d) for d in re.findall(r"skmem:\([^)]*\bd(\d+)\)", ss_text))


def _link_address(ns: str) -> str:
    """IPv4 address of the namespace's Rattan veth (``vL1-L-*``)."""
    ifaces = json.loads(procs.run(netns.exec_argv(ns, ["ip", "-j", "-4", "addr", "show"])))
    for iface in ifaces:
        if iface.get("ifname", "").startswith("vL1-L"):
            for addr in iface.get("addr_info", []):
                return str(addr["local"])
    raise H2LabError(f"no Rattan veth address in namespace {ns}")


def quiet_ipv6(ns: str) -> None:
    """No IPv6 in the lab: router solicitations and DAD would add packets to the link at
    random times and shift the per-packet loss decisions between trials of one block."""
    netns.sysctl(ns, "net.ipv6.conf.all.disable_ipv6", "1")
    netns.sysctl(ns, "net.ipv6.conf.default.disable_ipv6", "1")


def allow_congestion_control(algorithm: str) -> None:
    """Let namespaces choose ``algorithm``.

    Linux lets a non-initial namespace pick only algorithms in the host's
    ``tcp_allowed_congestion_control`` list (Debian's list here: "reno bbr"). Adding one to
    the list changes nothing else on the host: its default stays as it is.
    """
    allowed_path = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
    available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    allowed = allowed_path.read_text().split()
    if algorithm in allowed:
        return
    # A user namespace cannot add to the list, nor a container (read-only in its namespace).
    if userns.active() or not os.access(allowed_path, os.W_OK):
        raise H2LabError(
            f"congestion control {algorithm!r} is not allowed in namespaces on this host "
            f"(allowed: {' '.join(allowed)}; on the host, as root: sysctl -w "
            f"net.ipv4.tcp_allowed_congestion_control='{' '.join([*allowed, algorithm])}')"
        )
    if algorithm not in available:
        procs.run(["modprobe", f"tcp_{algorithm}"], check=False)
        available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
        if algorithm not in available:
            raise H2LabError(
                f"congestion control {algorithm!r} is not available "
                f"(kernel has: {' '.join(available)})"
            )
    allowed_path.write_text(" ".join([*allowed, algorithm]))


SOCKET_BUFFER_MIN_CAP_BYTES = 32 * 1024 * 1024  # this kernel's default tcp_rmem cap


def socket_buffer_caps(profile: NetworkProfile) -> tuple[int, int]:
    """(send, receive) autotuning caps for a link: 32 MiB (this kernel's receive cap), or
    4 x BDP when larger, so no socket buffer caps the rate. Linux's default 4 MiB send cap
    held a 100 Mbit/s flow at 200 ms RTT (2.5 MB in flight) to 54-75 Mbit/s, 10 MiB to 87."""
    rates = [r for r in (profile.up_rate_bps, profile.down_rate_bps) if r]
    bdp = max(rates, default=0) / 8 * profile.rtt_ms / 1000
    cap = max(SOCKET_BUFFER_MIN_CAP_BYTES, round(4 * bdp))
    return cap, cap


def apply_tcp(ns: str, tcp: TcpSettings, buffer_caps: tuple[int, int]) -> None:
    allow_congestion_control(tcp.congestion_control)
    netns.sysctl(ns, "net.ipv4.tcp_congestion_control", tcp.congestion_control)
    # No cached ssthresh/RTT from earlier trials (tcp_metrics), so each trial starts cold.
    netns.sysctl(ns, "net.ipv4.tcp_no_metrics_save", "1")
    wmem, rmem = buffer_caps
    netns.sysctl(ns, "net.ipv4.tcp_wmem", f"4096 16384 {wmem}")
    netns.sysctl(ns, "net.ipv4.tcp_rmem", f"4096 131072 {rmem}")
    routes = json.loads(procs.run(netns.exec_argv(ns, ["ip", "-j", "route", "show"])) or "[]")
    for r in routes:
        argv = ["ip", "route", "change", r["dst"]]
        if "gateway" in r:
            argv += ["via", r["gateway"]]
        argv += ["dev", r["dev"]]
        if "gateway" in r and r.get("flags") and "onlink" in r["flags"]:
            argv.append("onlink")
        if r.get("scope") == "link":
            argv += ["scope", "link"]
        argv += ["initcwnd", str(tcp.initcwnd_packets)]
        procs.run(netns.exec_argv(ns, argv))


class Lab:
    """Owns the servers namespace, origin addresses and state folder of one instance."""

    def __init__(self, origins: tuple[str, ...] = (), lab_id: str | None = None) -> None:
        if len(origins) > MAX_ORIGINS:
            raise H2LabError(f"at most {MAX_ORIGINS} origins per lab, got {len(origins)}")
        self.id = lab_id or PREFIX + secrets.token_hex(3)
        self.servers_ns = f"{self.id}-servers"
        self.state_dir = state_root() / self.id
        self.origin_ips: dict[str, str] = {}
        self._wanted = origins
        self._started = False
        self._delay_overhead_ms: float | None = None
        self.dns = LabDns(self.servers_ns, self.state_dir / DNS_FOLDER)

    def __enter__(self) -> Lab:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def start(self) -> None:
        clean_stale()
        _make_state_dir(self.state_dir)
        (self.state_dir / "owner.pid").write_text(str(os.getpid()))
        owners_root().mkdir(parents=True, exist_ok=True)
        (owners_root() / self.id).write_text(str(os.getpid()))
        # Every Rattan namespace created after this and left empty is ours to remove.
        (self.state_dir / "netns-at-start.json").write_text(json.dumps(netns.list_netns()))
        self._started = True
        netns.add(self.servers_ns)
        run = netns.exec_argv(self.servers_ns, ["ip", "link", "set", "lo", "up"])
        procs.run(run)
        quiet_ipv6(self.servers_ns)
        if userns.active():  # the servers run as the user (docs/rootless.md) and bind 80/443
            netns.sysctl(self.servers_ns, "net.ipv4.ip_unprivileged_port_start", "0")
        for ip in (PROBE_IP, DNS_IP):
            procs.run(
                netns.exec_argv(self.servers_ns, ["ip", "addr", "add", f"{ip}/32", "dev", "lo"])
            )
        self.set_origins(self._wanted)
        self.dns.start(self.dns_records())

    def set_origins(self, origins: tuple[str, ...]) -> None:
        """Give each origin hostname its own address on the servers side; an origin named by
        an IPv4 literal gets that address (:mod:`h2lab.net.addresses`)."""
        for host in origins:
            if host in self.origin_ips:
                continue
            ip = host if ip_literal(host) else f"{ORIGIN_NET}{len(self.origin_ips) + 1}"
            if ip == host and (why := why_not_servable(ipaddress.ip_address(host))):
                raise H2LabError(f"origin {host} cannot be served in the lab: {why}")
            argv = ["ip", "addr", "add", f"{ip}/32", "dev", "lo"]
            procs.run(netns.exec_argv(self.servers_ns, argv))
            self.origin_ips[host] = ip
        self.dns.publish(self.dns_records())

    def publish_https(self, hosts: frozenset[str]) -> None:
        """The lab resolver answers an HTTPS record (RFC 9460: h3) for each of ``hosts`` and
        for no other origin, from its next lookup on (``discovery = "https-rr"``)."""
        self.dns.publish(self.dns_records(), hosts)

    def dns_records(self) -> dict[str, str]:
        """The lab resolver's A records: every origin named by a host name."""
        return {host: ip for host, ip in self.origin_ips.items() if ip != host}

    def hosts_file(self) -> str:
        lines = ["127.0.0.1 localhost"]
        lines += [f"{ip} {host}" for host, ip in self.origin_ips.items() if ip != host]
        return "\n".join(lines) + "\n"

    def link(
        self,
        profile: NetworkProfile,
        seed: int,
        tcp: TcpSettings,
        delay_overhead_ms: float | None = None,
    ) -> Link:
        return Link(self, profile, seed, tcp, delay_overhead_ms)

    def delay_overhead_ms(self) -> float:
        """Rattan's own latency per direction on this machine (net/calibration.py)."""
        if self._delay_overhead_ms is None:
            self._delay_overhead_ms = calibration.delay_overhead_ms(self._uncalibrated_rtts_ms)
        return self._delay_overhead_ms

    def _uncalibrated_rtts_ms(self, rtt_ms: float, count: int) -> list[float]:
        """``count`` round trips to :data:`PROBE_IP` over a link of one-way Delay cells of
        ``rtt_ms / 2`` with nothing taken off them and nothing else (the calibration's
        measurement, :data:`h2lab.net.calibration.RttProbe`)."""
        profile = parse_network(f"rtt={rtt_ms:g}ms")
        with self.link(profile, 0, TcpSettings(), delay_overhead_ms=0.0) as link:
            return rtt_samples_ms(link.client_ns, PROBE_IP, count=count)

    def reset_client_connections(self) -> None:
        """Destroy every TCP connection of the servers namespace to the client side (``ss
        -K``; the client gets a RST if it is still there). Before each trial, so that no
        connection of an earlier one is open during it: one whose client is gone (its link
        torn down before the client's FIN got through) would otherwise idle in the server for
        its keep-alive time (an hour, ``servers.IDLE_TIMEOUT_S``), and what the server sends
        on it at the end (its FIN, sent again until answered) would go out during a later
        trial, into that trial's counters."""
        argv = ["ss", "-K", "-t", "-n", "state", "connected", "exclude", "time-wait"]
        procs.run(netns.exec_argv(self.servers_ns, [*argv, "dst", CLIENT_NET]))

    def close(self) -> None:
        self.dns.stop()
        if self._started:
            teardown_lab(self.id)
            self._started = False


def _make_state_dir(path: Path, attempts: int = 5) -> None:
    """Make a lab's state folder and its parent. Another lab's :func:`clean_stale` removes the
    parent when it finds it empty, which can fall between making the parent and the folder (two
    shards of ``--jobs`` starting at once): then the parent is made again."""
    for attempt in range(attempts):
        try:
            path.mkdir(parents=True, exist_ok=False)
            return
        except FileNotFoundError:
            if attempt == attempts - 1:
                raise
