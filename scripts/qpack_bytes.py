"""QPACK's header bytes over h3, like HPACK's (seed 000's Table 2): for every h3 trial of a
results folder run with ``capture = ["pcap"]``, the bytes the client sent on its QPACK encoder
stream (the dynamic table's inserts, which HPACK sends inline in its HEADERS frames), read from
the trial's decrypted capture, beside ``request_header_bytes`` (the request streams' HEADERS
frames as nginx 1.26 counts them, ``$request_length``: frame headers and QPACK field sections).
Their sum is what HPACK's count covers.

    .venv/bin/python scripts/qpack_bytes.py RESULTS_DIR

Needs tshark (Wireshark 4.0 decrypts QUIC with the trial's ``keylog.txt``).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from h2lab.artifacts import CAPTURE_KEYLOG, CAPTURE_PCAP, RESULTS_DB
from h2lab.store.sqlite import artifacts_dir

ENCODER, DECODER, CONTROL = 0x02, 0x03, 0x00
"""HTTP/3 unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2)"""
TSHARK_TIMEOUT_S = 600


class Pairs(list[tuple[str, Any]]):
    """A JSON object as its (key, value) pairs: tshark repeats a key (``quic.frame``) for each
    frame of a packet, which a dict would keep only the last of."""

    def get(self, key: str, default: Any = None) -> Any:
        return next((v for k, v in self if k == key), default)


def _frames(node: Any) -> Iterator[Pairs]:
    """Every STREAM frame in tshark's JSON tree of a packet."""
    if isinstance(node, Pairs):
        if node.get("quic.stream.stream_id") is not None:
            yield node
        for _, v in node:
            yield from _frames(v)
    elif isinstance(node, list):
        for v in node:
            yield from _frames(v)


def client_uni_stream_bytes(pcap: Path, keylog: Path, client_ip: str) -> dict[int, int]:
    """Bytes the client sent per unidirectional stream type (over every connection)."""
    argv = [
        "tshark", "-r", str(pcap), "-o", f"tls.keylog_file:{keylog}", "-T", "json", "-J", "quic",
        "-Y", f"ip.src=={client_ip} && quic.stream.stream_id",
    ]  # fmt: skip
    out = subprocess.run(argv, capture_output=True, text=True, timeout=TSHARK_TIMEOUT_S, check=True)
    kind: dict[tuple[str, int], int] = {}
    sent: dict[int, int] = {}
    for packet in json.loads(out.stdout or "[]", object_pairs_hook=Pairs):
        layers = packet.get("_source").get("layers")
        conn = str(layers.get("udp", Pairs()).get("udp.srcport", ""))
        for f in _frames(layers):
            sid = int(f.get("quic.stream.stream_id"))
            if sid % 4 != 2:  # client-initiated unidirectional
                continue
            data = bytes.fromhex(f.get("quic.stream_data", "").replace(":", ""))
            tree = f.get("quic.frame_type_tree", Pairs())
            has_offset = tree.get("quic.stream.off") == "1"
            offset = int(f.get("quic.stream.offset", "0")) if has_offset else 0
            if offset == 0 and data:
                kind[(conn, sid)] = data[0]
            t = kind.get((conn, sid), -1)
            sent[t] = sent.get(t, 0) + len(data)
    return sent


def main(argv: list[str] | None = None) -> int:
    folder = Path((argv or sys.argv[1:])[0])
    db = sqlite3.connect(folder / RESULTS_DB)
    rows = db.execute(
        "SELECT trial_key, attempt, page, server, request_header_bytes FROM trials "
        "WHERE protocol = 'h3' AND status = 'ok' ORDER BY page, server"
    ).fetchall()
    db.close()
    print("| page | server | request streams (nginx), B | encoder stream, B | sum, B |")
    print("| --- | --- | --- | --- | --- |")
    for key, attempt, page, server, request_bytes in rows:
        d = artifacts_dir(folder, key, attempt)
        sent = client_uni_stream_bytes(d / CAPTURE_PCAP, d / CAPTURE_KEYLOG, "10.1.1.1")
        enc = sent.get(ENCODER, 0)
        total = "" if request_bytes is None else f"{request_bytes + enc:,}"
        print(f"| {page} | {server} | {request_bytes or 'NULL'} | {enc:,} | {total} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
