"""The seed corpus of each fuzz target, made from what the repository ships: the corpus's
captures, the experiment files, the tests' small WARCs, HARs, pages, messages and events,
and hand-made hostile inputs (the decompression bombs of :mod:`fuzz.bombs`, names with
``..`` and links leading out). Seeds are made when a run starts, so they follow the code.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import struct
import tempfile
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import brotli

from fuzz import bombs

REPO = Path(__file__).resolve().parents[1]
MAX_SEED_BYTES = 256 * 1024
"""Seeds past this are cut down (a HAR to its first entries) or left out: every execution
stays fast."""


def _warc() -> Iterator[bytes]:
    from tests.unit.test_pages_import import small_site, warc_bytes

    yield warc_bytes(small_site(), requests={"https://www.example.test/beacon": "POST"})
    yield warc_bytes(small_site(), compress=False)
    yield (REPO / "corpus/warc/wikipedia.warc.gz").read_bytes()
    yield from bombs.warcs()


def _har() -> Iterator[bytes]:
    for path in sorted((REPO / "corpus/har").glob("*.har")):
        har = json.loads(path.read_bytes())
        har["log"]["entries"] = har["log"]["entries"][:4]
        for entry in har["log"]["entries"]:
            content = entry["response"].get("content", {})
            if len(content.get("text", "")) > 4096:
                content["text"] = content["text"][:4096]
        yield json.dumps(har).encode()


def _heads() -> Iterator[bytes]:
    from tests.unit.test_pages_import import small_site

    for _, status, headers, _ in small_site():
        head = f"HTTP/1.1 {status}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
        yield head.encode() + b"\r\n"
    yield b"HTTP/1.1 200 OK\r\nX: a\r\n b\r\nbad line\r\n: empty\r\n\r\nbody"


def _bodies() -> Iterator[bytes]:
    html = b"<html><img src=/a.png></html>" * 20
    yield b"\x00" + html
    yield b"\x01" + gzip.compress(html)
    yield b"\x03" + brotli.compress(html)
    yield b"\x81" + b"5\r\nhello\r\n0\r\n\r\n"
    yield b"\x06" + gzip.compress(gzip.compress(html))
    yield from bombs.bodies()


def _folders() -> Iterator[bytes]:
    yield b"\n\nf index.html\t<img src=a.png>\nf a.png\tPNG\nd empty"
    yield b"a.html\nsite.example\nf a.html\thi\nf b.css\tp{}"
    yield b"\n\nd www.example.com\nf www.example.com/index.html\thi\nf cdn.example.com/x.js\t1"
    yield b"\n\nf index.html\thi\nl up\t../outside/secret.html\nl root\t/\nl dir\t../outside/dir"
    yield b"../outside/secret.html\n\nf index.html\thi\nf a?b=c\tq\nf %2e%2e\tdots"
    yield b"\nbad host\nf index.html\thi\nl loop\tloop\nl self\t."


def _page_folder(root: Path) -> Path:
    from h2lab.pages.importers import read_warc, store
    from tests.unit.test_pages_import import small_site, warc_bytes

    path = root / "site.warc.gz"
    path.write_bytes(warc_bytes(small_site()))
    return store(read_warc(path), root=root / "pages").docroot


def _manifests() -> Iterator[bytes]:
    with tempfile.TemporaryDirectory() as tmp:
        manifest = json.loads((_page_folder(Path(tmp)) / "manifest.json").read_bytes())
    yield json.dumps(manifest).encode()
    hostile = json.loads(json.dumps(manifest))
    hostile["resources"][0].update(body_sha256=None, size_bytes=10, url="https://x.test/../../a")
    hostile["resources"][1]["headers"] = [["x always; include /etc", "v"]]
    yield json.dumps(hostile).encode()


def _archives() -> Iterator[bytes]:
    from h2lab.cluster.transfer import pack

    with tempfile.TemporaryDirectory() as tmp:
        yield pack(_page_folder(Path(tmp)))
    yield bombs.tar_escape()


def _wire() -> Iterator[bytes]:
    from h2lab.runner.executor import BlockDone
    from h2lab.runner.wire import encode_message
    from tests.unit.test_runner_wire import block_job, spec

    job = dataclasses.replace(block_job(), pages={spec().page: "0123456789abcdef"})
    yield json.dumps(encode_message(job)).encode()
    yield json.dumps(encode_message(BlockDone(4))).encode()


def _experiments() -> Iterator[bytes]:
    for path in sorted((REPO / "experiments").rglob("*.toml")):
        yield path.read_bytes()


def _networks() -> Iterator[bytes]:
    from h2lab.spec.presets import PRESETS

    yield from (name.encode() for name in PRESETS)
    yield b"rtt=50ms,rate=10Mbit,loss=1%"
    yield b"3g,loss=2%,burst=3,queue=50pkt"
    yield b"up=1Mbit,down=20Mbit,jitter=5ms,aqm=codel"
    yield b"cellular=verizon-lte-driving"


def _traces() -> Iterator[bytes]:
    yield b"0\n1\n1\n5\n9\n"
    yield b"".join(b"%d\n" % t for t in range(0, 2000, 3))
    yield b"+5\n0\n"


def _qlogs() -> Iterator[bytes]:
    rs = b"\x1e"
    quic_go = (
        b'{"file_schema":"urn:ietf:params:qlog:file:sequential","qlog_version":"0.3",'
        b'"trace":{"vantage_point":{"type":"server"}}}\n'
    )
    openssl = (
        b'{"qlog_version":"0.3","qlog_format":"JSON-SEQ","trace":{"common_fields":'
        b'{"time_format":"delta"},"vantage_point":{"type":"client"}}}\n'
    )
    events = [
        b'{"time":1.2,"name":"recovery:metrics_updated","data":{"congestion_window":40960}}\n',
        b'{"time":83.3,"name":"recovery:packet_lost","data":{"header":{"packet_number":4}}}\n',
        b'{"time":84,"name":"recovery:metrics_updated","data":{"congestion_window":28672}}\n',
    ]
    yield rs + quic_go + rs + rs.join(events)
    yield rs + openssl + rs + rs.join(events)
    yield rs + b"{not json" + rs + events[0]
    yield b""


def _page_specs() -> Iterator[bytes]:
    yield b"n=10,size=10KB,origins=2,seed=1"
    yield b"images:n=20,size=4KB"
    yield b"cssjs:css=3,js=4"
    yield b"awp"
    yield b"mix:html=1,img=3"


def _cdp() -> Iterator[bytes]:
    req = {"url": "https://a.test/x.png", "headers": {"a": "b"}, "initialPriority": "High"}
    resp = {"status": 200, "protocol": "h2", "connectionId": 4, "timing": {"requestTime": 1.0}}
    events = [
        ("Network.requestWillBeSent", {"requestId": "1", "timestamp": 1.0, "request": req}),
        ("Network.responseReceived", {"requestId": "1", "timestamp": 1.1, "response": resp}),
        ("Network.dataReceived", {"requestId": "1", "dataLength": 10, "encodedDataLength": 12}),
        ("Network.loadingFinished", {"requestId": "1", "timestamp": 1.2, "encodedDataLength": 9}),
        ("Network.loadingFailed", {"requestId": "2", "timestamp": 1.3, "errorText": "x"}),
        ("Page.loadEventFired", {"timestamp": 1.4}),
    ]
    yield b"".join(
        json.dumps({"sessionId": "session", "method": m, "params": p}).encode() + b"\0"
        for m, p in events
    )
    yield b'{"id": 1, "result": {}}\0not json\0[1]\0'


def _frame(payload: bytes, opcode: int = 1) -> bytes:
    n = len(payload)
    if n < 126:
        return struct.pack("!BB", 0x80 | opcode, n) + payload
    return struct.pack("!BBH", 0x80 | opcode, 126, n) + payload


def _bidi() -> Iterator[bytes]:
    from tests.unit.test_clients_browser_firefox import _request, _response

    sent = {"request": _request("1", "https://a.test/x.png"), "timestamp": 1.0}
    done = {**sent, "response": _response()}
    events = [
        ("network.beforeRequestSent", sent),
        ("network.responseStarted", done),
        ("network.responseCompleted", done),
        ("network.fetchError", {**sent, "errorText": "NS_ERROR_FAILURE"}),
    ]
    yield b"".join(
        _frame(json.dumps({"type": "event", "method": m, "params": p}).encode()) for m, p in events
    )
    yield _frame(b"\x89ping", 9) + _frame(b"{") + _frame(b"\xff\xfe")


SEEDS: dict[str, Callable[[], Iterable[bytes]]] = {
    "warc": _warc,
    "har": _har,
    "http-head": _heads,
    "body": _bodies,
    "folder": _folders,
    "manifest": _manifests,
    "page-archive": _archives,
    "wire": _wire,
    "experiment": _experiments,
    "network": _networks,
    "trace": _traces,
    "page-spec": _page_specs,
    "qlog": _qlogs,
    "cdp": _cdp,
    "bidi": _bidi,
}


def write_seeds(name: str, folder: Path) -> int:
    """The seeds of target ``name`` as files in ``folder``; how many."""
    folder.mkdir(parents=True, exist_ok=True)
    count = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, seed in enumerate(SEEDS[name]()):
            if len(seed) <= MAX_SEED_BYTES:
                (folder / f"seed-{i:03d}").write_bytes(seed)
                count += 1
    return count
