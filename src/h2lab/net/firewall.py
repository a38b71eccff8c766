"""A link that drops UDP to one port (the ``udp-blocked`` discovery): an nftables table in the
servers' namespace drops each datagram to the h3 port as it arrives, after it crossed the
emulated link, as a network that blocks QUIC does. TCP and the lab's resolver (port 53) pass.
The rule counts what it dropped, so a trial can tell that its browser tried QUIC."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

from h2lab import procs, programs
from h2lab.net import netns

TABLE = "h2lab_udp_blocked"


def _nft(ns: str, *args: str) -> str:
    return procs.run(netns.exec_argv(ns, [programs.NFT.executable, *args]))


class UdpDropped:
    """The table of :func:`udp_dropped`, while it is in place."""

    def __init__(self, ns: str) -> None:
        self.ns = ns

    def packets(self) -> int:
        """The datagrams dropped so far."""
        listed = json.loads(_nft(self.ns, "-j", "list", "table", "inet", TABLE))
        return sum(
            expr["counter"]["packets"]
            for item in listed["nftables"]
            for expr in item.get("rule", {}).get("expr", [])
            if "counter" in expr
        )


@contextmanager
def udp_dropped(ns: str, port: int) -> Iterator[UdpDropped]:
    """UDP to ``port`` dropped on its way into namespace ``ns`` while the block runs."""
    chain = f"type filter hook input priority 0; policy accept; udp dport {port} counter drop;"
    _nft(ns, f"table inet {TABLE} {{ chain input {{ {chain} }}; }}")
    try:
        yield UdpDropped(ns)
    finally:
        _nft(ns, "delete", "table", "inet", TABLE)
