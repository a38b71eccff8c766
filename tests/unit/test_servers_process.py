"""h2lab.servers.process: the one readiness check of every server, read from the servers
namespace's socket tables."""

from __future__ import annotations

from h2lab.net import netns
from h2lab.servers import process

HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid\n"


def row(ip: str, port: int, state: str) -> str:
    """A /proc/net/tcp or udp line for a socket bound to ip:port."""
    addr = bytes(int(x) for x in ip.split("."))[::-1].hex().upper()
    return f"   0: {addr}:{port:04X} 00000000:0000 {state} 00000000:00000000 00:00000000 0 0\n"


def table(*sockets: tuple[str, int, str]) -> str:
    return HEADER + "".join(row(*s) for s in sockets)


def test_the_port_set_is_the_protocols_ports() -> None:
    assert process.TCP_PORTS == (80, 443, 8080)
    assert process.UDP_PORTS == (443,)


def test_sockets_reads_addresses_ports_and_states() -> None:
    text = table(("10.2.0.3", 443, "0A"), ("10.2.0.3", 80, "01"), ("0.0.0.0", 8080, "0A"))
    assert netns.sockets(text, netns.TCP_LISTEN) == {("10.2.0.3", 443), ("0.0.0.0", 8080)}
    assert len(netns.sockets(text)) == 3


def test_ready_when_every_tcp_port_listens_on_every_address() -> None:
    ips = ("10.2.0.3", "10.2.0.4")
    every = [(ip, port, "0A") for ip in ips for port in (80, 443, 8080)]
    assert process.bound(table(*every), "", ips, udp=False)
    assert not process.bound(table(*every[:-1]), "", ips, udp=False)
    # an established connection on the port is not a listener
    assert not process.bound(table(*every[:-1], ("10.2.0.4", 8080, "01")), "", ips, udp=False)
    # a listener on every address serves each
    wildcard = table(*[("0.0.0.0", port, "0A") for port in (80, 443, 8080)])
    assert process.bound(wildcard, "", ips, udp=False)


def test_a_server_of_http3_is_ready_once_its_udp_port_is_bound_too() -> None:
    ips = ("10.2.0.3",)
    tcp = table(*[("10.2.0.3", port, "0A") for port in (80, 443, 8080)])
    assert not process.bound(tcp, table(), ips, udp=True)
    assert not process.bound(tcp, table(("10.2.0.9", 443, "07")), ips, udp=True)
    assert process.bound(tcp, table(("10.2.0.3", 443, "07")), ips, udp=True)


def test_a_server_of_http3_alone_is_ready_on_its_udp_port_without_tcp() -> None:
    ips = ("10.2.0.3",)
    udp = table(("10.2.0.3", 443, "07"))
    assert process.bound("", udp, ips, udp=True, tcp_ports=False)
    assert not process.bound("", table(), ips, udp=True, tcp_ports=False)
    assert not process.bound("", udp, ips, udp=True)  # the others still need their TCP ports
