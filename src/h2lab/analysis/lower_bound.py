"""The fastest one object can be fetched on a fresh connection: a floor for measured times.

Model (times from the moment the client starts connecting):

1. **Handshakes.** The request leaves the client after ``handshake_rtts`` round trips: TCP's
   three-way handshake is 1 (RFC 9293 §3.5; the request rides with or right after the final
   ACK), a full TLS 1.3 handshake adds 1 (RFC 8446 §2), a full TLS 1.2 handshake adds 2
   (RFC 5246 §7.3), and QUIC does transport and TLS 1.3 together in 1 (RFC 9000 §7,
   RFC 9001 §4).
2. **Request.** It reaches the server one way (RTT / 2) later.
3. **Slow start.** The server's window starts at ``initcwnd_packets`` × MSS (IW10: RFC 6928)
   and doubles every round trip (RFC 5681 §3.1 slow start, at most one doubling per RTT).
   A round sends one window and lasts max(RTT, time to serialise that window at the rate).
   The first window's ``control_packets`` carry none of the body
   (:func:`first_window_control_packets`: HTTP/2's server preface over TLS).
4. **Bulk.** From the first round whose window covers the bandwidth-delay product (its
   serialisation takes at least an RTT) the link never idles again, so the rest of the body
   costs only its serialisation time. The last round, too, costs only the serialisation of
   what is left.
5. **Last byte.** It reaches the client one way (RTT / 2) after it was serialised.

Serialisation charges ``mtu_bytes`` on the wire per ``mss_bytes`` of payload (1500 B IP
packets carrying 1448 B: 20 B IPv4 + 20 B TCP + 12 B timestamp option, RFC 7323), as a
fraction, not rounded up per packet. ``rate_bps=None`` means an unlimited link.

Left out, each of which can only make a real fetch slower, so the result stays a floor:
HTTP request and response header bytes, TLS record and HTTP/2 frame overhead, small packets
using up slots of the window (Linux counts cwnd in packets, so e.g. a separately written
response header or a TLS session ticket costs a whole MSS of it) other than
``control_packets``, the handshake packets' own serialisation, the per-packet rounding of
the last segment, delayed ACKs and ACK clocking (a round really lasts RTT plus one packet's
serialisation), receive-window limits, HyStart leaving slow start early, server think time
and loss. TCP timestamps are not left out: they are already counted in the 1448 B MSS.
"""

from __future__ import annotations

from h2lab.errors import SpecError
from h2lab.spec.protocols import CLEARTEXT_TCP, H2S, QUIC, TLS_OVER_TCP

# Round trips before the client may send its request on a fresh connection.
TCP_HANDSHAKE_RTTS = 1  # RFC 9293 §3.5: SYN, SYN-ACK; data may follow the final ACK
TLS13_HANDSHAKE_RTTS = 1  # RFC 8446 §2: a full handshake takes one round trip
TLS12_HANDSHAKE_RTTS = 2  # RFC 5246 §7.3: a full handshake takes two round trips
QUIC_HANDSHAKE_RTTS = 1  # RFC 9000 §7 / RFC 9001 §4: transport + TLS 1.3 in one round trip

_TLS_RTTS = {"1.3": TLS13_HANDSHAKE_RTTS, "1.2": TLS12_HANDSHAKE_RTTS}

INITCWND_PACKETS = 10  # RFC 6928: IW10
MSS_BYTES = 1448  # 1500 − 20 (IPv4) − 20 (TCP) − 12 (timestamps, RFC 7323)
MTU_BYTES = 1500  # Ethernet MTU (RFC 894); the emulated link charges IP-layer bytes


def handshake_rtts(protocol: str, tls: str = "1.3") -> int:
    """Round trips of connection set-up before the first request can leave the client.

    ``h1c``/``h1p``/``h2c``: TCP only (1); ``h1s``/``h2s``: TCP + TLS (2 with TLS 1.3, 3 with
    TLS 1.2); ``h3``: QUIC (1). ``tls`` is ignored for protocols that do not use TLS over TCP.
    """
    if protocol in CLEARTEXT_TCP:
        return TCP_HANDSHAKE_RTTS
    if protocol in QUIC:
        return QUIC_HANDSHAKE_RTTS
    if protocol in TLS_OVER_TCP:
        if tls not in _TLS_RTTS:
            known = ", ".join(sorted(_TLS_RTTS))
            raise SpecError(
                "handshake_rtts", "tls", f"unknown TLS version {tls!r} (known: {known})"
            )
        return TCP_HANDSHAKE_RTTS + _TLS_RTTS[tls]
    known = ", ".join(sorted(CLEARTEXT_TCP | TLS_OVER_TCP | QUIC))
    raise SpecError("handshake_rtts", "protocol", f"unknown protocol {protocol!r} (known: {known})")


H2_PREFACE_PACKETS = 1
"""HTTP/2 over TLS: the server's connection preface, its SETTINGS frame (RFC 9113 §3.4), goes
alone in a packet of the first window. Every HTTP/2 server measured (nginx, h2o, Apache, Go's
x/net) sends it as soon as the TLS handshake ends, before the request has arrived: a capture of
nginx's 100 KB fetch at 200 ms shows a 62-byte segment acknowledging only the client's Finished,
then the response. Linux counts the congestion window in packets, so it takes a slot of the
first ten: 100 KB (70 packets, exactly the 10 + 20 + 40 of three rounds) needs a fourth
round on every server (docs/fidelity.md). The packet of SETTINGS ACK and HEADERS that follows is
not counted: a server could write it with the first DATA."""


def first_window_control_packets(protocol: str) -> int:
    """Packets of the server's first window that carry none of the body: HTTP/2 over TLS's
    server preface (:data:`H2_PREFACE_PACKETS`), none for the others (``h2c``'s SETTINGS can
    follow the client's preface, which comes with the request; QUIC's window is not TCP's)."""
    return H2_PREFACE_PACKETS if protocol == H2S else 0


def fetch_lower_bound_ms(
    size_bytes: int,
    rtt_ms: float,
    rate_bps: int | None,
    *,
    handshake_rtts: int,
    initcwnd_packets: int = INITCWND_PACKETS,
    mss_bytes: int = MSS_BYTES,
    mtu_bytes: int = MTU_BYTES,
    control_packets: int = 0,
) -> float:
    """The fastest possible fetch, in ms, of one ``size_bytes`` body on a fresh connection.

    See the module docstring for the model. Never less than ``(handshake_rtts + 1) × rtt_ms``
    and never less than that plus the serialisation of the whole body.
    """
    if size_bytes < 0:
        raise ValueError(f"size_bytes must be >= 0, got {size_bytes}")
    if rtt_ms < 0:
        raise ValueError(f"rtt_ms must be >= 0, got {rtt_ms}")
    if rate_bps is not None and rate_bps <= 0:
        raise ValueError(f"rate_bps must be positive or None (unlimited), got {rate_bps}")
    if handshake_rtts < 0:
        raise ValueError(f"handshake_rtts must be >= 0, got {handshake_rtts}")
    if initcwnd_packets < 1:
        raise ValueError(f"initcwnd_packets must be >= 1, got {initcwnd_packets}")
    if not 0 <= control_packets < initcwnd_packets:
        raise ValueError(
            f"need 0 <= control_packets < initcwnd_packets, got {control_packets} and "
            f"{initcwnd_packets}"
        )
    if not 0 < mss_bytes <= mtu_bytes:
        raise ValueError(f"need 0 < mss_bytes <= mtu_bytes, got {mss_bytes} and {mtu_bytes}")

    def serialisation_ms(payload_bytes: int) -> float:
        if rate_bps is None:
            return 0.0
        wire_bytes = payload_bytes * mtu_bytes / mss_bytes
        return wire_bytes * 8 / rate_bps * 1000

    one_way_ms = rtt_ms / 2
    t_ms = handshake_rtts * rtt_ms + one_way_ms  # the request reaches the server
    remaining_bytes = size_bytes
    window_bytes = initcwnd_packets * mss_bytes
    body_bytes = (initcwnd_packets - control_packets) * mss_bytes  # of the first window
    # Each pass doubles the window, so this ends after at most log2(size / IW) + 1 rounds.
    while remaining_bytes > body_bytes and serialisation_ms(window_bytes) < rtt_ms:
        remaining_bytes -= body_bytes
        t_ms += rtt_ms
        window_bytes *= 2
        body_bytes = window_bytes
    return t_ms + serialisation_ms(remaining_bytes) + one_way_ms
