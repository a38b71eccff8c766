"""The fuzz targets: every parser of outside data h2lab has, each as ``run(data: bytes)``.

A target passes an input when the parser accepts it or refuses it with one of h2lab's own
errors in one line (:func:`expect`), within the limits the runner sets (5 s, a memory bound).
Anything else (an uncaught exception, a message over several lines, a write outside the
target's scratch folder) is a finding: the runner keeps the input, and each one found becomes
a regression test (tests/unit/test_fuzz_found.py). Seeds come from the shipped corpus, the
experiment files and hand-made inputs (:mod:`fuzz.seeds`).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from h2lab.errors import H2LabError

MAX_LINE_CHARS = 1100
"""Longest one-line error a target may raise (:func:`h2lab.errors.one_line` cuts at 1000)."""


class Finding(AssertionError):
    """What a target found that is not one of h2lab's own one-line errors."""


@dataclass(frozen=True)
class Target:
    name: str
    what: str
    """the parser, in words"""
    run: Callable[[bytes], None]
    seeds: Callable[[], Iterable[bytes]]


def expect(call: Callable[[], object]) -> None:
    """Run ``call``; an :class:`H2LabError` is an answer when its line is one line."""
    try:
        call()
    except H2LabError as exc:
        line = exc.line()
        if "\n" in line or "\r" in line or len(line) > MAX_LINE_CHARS:
            raise Finding(f"{type(exc).__name__} is not one line: {line[:300]!r}") from exc


_SCRATCH: list[Path] = []
SCRATCH_ENV = "H2LAB_FUZZ_SCRATCH"
"""The scratch folder fuzz/run.py made for this process (and removes); else one of its own."""


def scratch() -> Path:
    """This process's scratch folder, emptied: each input starts from nothing."""
    if not _SCRATCH:
        given = os.environ.get(SCRATCH_ENV)
        if given:
            _SCRATCH.append(Path(given))
        else:  # a harness run in this process (the suite's seeds): gone when it ends
            _SCRATCH.append(Path(tempfile.mkdtemp(prefix="h2lab-fuzz-")))
            atexit.register(shutil.rmtree, _SCRATCH[0], ignore_errors=True)
    root = _SCRATCH[0]
    for child in root.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    return root


def _file(data: bytes, name: str) -> Path:
    path = scratch() / name
    path.write_bytes(data)
    return path


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


# ---------------------------------------------------------------- page importers


def run_warc(data: bytes) -> None:
    from h2lab.pages.importers import read_warc
    from h2lab.pages.importers.common import bomb_cap

    path = _file(data, "capture.warc.gz")

    def read_bounded() -> None:
        # every layer together is held to the file's size on disk (issue #56)
        decoded = read_warc(path).body_bytes
        if decoded > bomb_cap(len(data)):
            raise Finding(f"{len(data)} bytes decoded to {decoded}: past bomb_cap of the file")

    expect(read_bounded)


def run_har(data: bytes) -> None:
    from h2lab.pages.importers import read_har

    path = _file(data, "capture.har")
    expect(lambda: read_har(path))


def run_http_head(data: bytes) -> None:
    import io

    from h2lab.pages.importers.httphead import HeadTooLarge, read_head

    try:
        head = read_head(io.BytesIO(data))
    except HeadTooLarge:
        return
    for name, value in head.headers:
        if "\n" in name or "\n" in value or "\r" in value:
            raise Finding(f"a header kept a line break: {name[:60]!r}")
    head.dropped_notes("head")
    head.status_code  # noqa: B018  (a property that parses)


_CODINGS = (None, "gzip", "deflate", "br", "gzip, br", "br, gzip", "gzip, gzip", "x-gzip, null")


def run_body(data: bytes) -> None:
    """A body and its codings: the first byte picks the codings, the rest is the body."""
    from h2lab.pages.importers.common import MAX_PAGE_BYTES, DecodeError, bomb_cap, decode_body

    if not data:
        return
    te = "chunked" if data[0] & 0x80 else None
    ce = _CODINGS[data[0] % len(_CODINGS)]
    raw = data[1:]
    try:
        body = decode_body(raw, te, ce, MAX_PAGE_BYTES, [])
    except DecodeError:
        return
    if len(body) > bomb_cap(len(raw)):
        raise Finding(f"{len(raw)} bytes decoded to {len(body)}, past the bomb cap")


def run_folder(data: bytes) -> None:
    """A folder made from the input (:func:`fuzz.folders.build`), imported and stored: nothing
    read from outside it, nothing written outside the pages root."""
    from fuzz.folders import OUTSIDE_SECRET, build
    from h2lab.pages.importers import import_folder

    root = scratch()
    folder, entry, host = build(data, root)
    pages = root / "pages"

    def go() -> None:
        page = import_folder(folder, entry, host=host, root=pages)
        for res in page.resources:
            if OUTSIDE_SECRET in page.body_file(res).read_bytes():
                raise Finding(f"{res.url()} serves a file from outside the folder")

    expect(go)
    written = {p.name for p in root.iterdir()}
    if not written <= {"site", "outside", "pages"}:
        raise Finding(f"import wrote outside its pages root: {sorted(written)}")


def run_manifest(data: bytes) -> None:
    """A page folder's manifest.json (a page named by its folder, a copied cache)."""
    from h2lab.pages.manifest import KEPT_HEADERS, check_bodies, load_page

    folder = scratch() / "page"
    (folder / "bodies").mkdir(parents=True)
    (folder / "manifest.json").write_bytes(data)
    loaded: list[Any] = []
    expect(lambda: loaded.append(load_page(folder)))
    if not loaded:
        return
    page = loaded[0]
    check_bodies(page)
    for res in page.resources:
        body = page.body_file(res).resolve()
        if body != Path(os.devnull) and folder.resolve() not in body.parents:
            raise Finding(f"{res.url()} reads {body}, outside the page")
        if any(k not in KEPT_HEADERS or "\n" in v for k, v in res.headers):
            raise Finding(f"{res.url()} keeps a header a server config must not get")


def run_page_archive(data: bytes) -> None:
    """A page archive from the driver, as a lab node unpacks and checks it."""
    from h2lab.cluster.transfer import unpack
    from h2lab.pages.manifest import check_bodies, load_page

    root = scratch()
    folder = root / "page"

    def go() -> None:
        unpack(data, folder)
        check_bodies(load_page(folder))

    expect(go)
    for path in root.rglob("*"):
        if folder not in path.parents and path != folder:
            raise Finding(f"unpack wrote {path} outside its folder")


def run_wire(data: bytes) -> None:
    """A message from the driver, as a lab node decodes and checks it."""
    from h2lab.cluster.checks import check_job
    from h2lab.runner import wire
    from h2lab.runner.executor import BlockJob

    try:
        message = json.loads(data)
    except ValueError:
        return  # Ray hands the node a decoded object: JSON is how a message is made

    def go() -> None:
        job = wire.decode_message(message)
        if isinstance(job, BlockJob):
            check_job(job)

    expect(go)


# ---------------------------------------------------------------- specs and files


def run_experiment(data: bytes) -> None:
    from h2lab.spec.experiment import load_experiment

    path = _file(data, "experiment.toml")
    expect(lambda: load_experiment(path))
    expect(lambda: load_experiment(path, quick=True))


def run_network(data: bytes) -> None:
    from h2lab.spec.network import parse_network

    text = _text(data)
    expect(lambda: parse_network(text, "fuzz"))


def run_trace(data: bytes) -> None:
    from h2lab.spec.cellular import read_mahimahi

    path = _file(data, "trace.down")
    expect(lambda: read_mahimahi(path))


def run_page_spec(data: bytes) -> None:
    from h2lab.pages.synthetic_spec import parse

    text = _text(data)
    expect(lambda: parse("synthetic:" + text, "fuzz"))


def run_qlog(data: bytes) -> None:
    """A qlog file as the report reads it (a trial's ``qlog/``): any bytes summarize."""
    from h2lab.metrics.qlog import summarize

    summary = summarize(_file(data, "trace.sqlog"))
    if summary.lost_packets < 0 or any(b < 0 for _, b in summary.cwnd):
        raise Finding(f"negative figures: {summary.lost_packets} lost")


# ---------------------------------------------------------------- browser messages


def run_cdp(data: bytes) -> None:
    """Bytes from Chromium's DevTools pipe: NUL-separated JSON, each to the tab's listener."""
    from h2lab.clients.browser.chromium.cdp import CdpPipe
    from h2lab.clients.browser.chromium.tab import Tab

    pipes = [os.pipe(), os.pipe()]
    to_browser, from_browser = pipes[0][1], pipes[1][0]
    tab = Tab("context", "session")
    with os.fdopen(pipes[1][1], "wb") as feed:
        cdp = CdpPipe(to_browser, from_browser)
        cdp.listen("session", tab.on)
        feed.write(data)
    cdp.closed.wait(10)
    os.close(pipes[0][0])
    cdp.close()
    _check_log(tab.log)
    _record(data)
    if cdp.fault is not None and "\n" in cdp.fault:
        raise Finding(f"fault is not one line: {cdp.fault[:200]!r}")


def _record(data: bytes) -> None:
    """The same messages as ``h2lab record`` reads them (through the connection's guard)."""
    from h2lab.clients.browser.connection import UNREADABLE
    from h2lab.record.log import RecordLog

    log = RecordLog()
    for raw in data.split(b"\0")[:-1]:
        try:
            message = json.loads(raw)
            log.add(message.get("sessionId", ""), message["method"], message.get("params", {}))
        except UNREADABLE:
            continue  # dropped and noted as the connection's fault, as in a recording
    log.in_flight()
    log.document()


def run_bidi(data: bytes) -> None:
    """Bytes from Firefox's WebDriver BiDi WebSocket: frames of JSON, events to the log."""
    from h2lab.clients.browser.firefox.bidi import BidiConnection
    from h2lab.clients.browser.firefox.events import BidiNetwork
    from h2lab.clients.browser.firefox.websocket import WebSocket

    ours, theirs = socket.socketpair()
    events = BidiNetwork()
    conn = BidiConnection(WebSocket(ours))
    conn.listen(events.add)
    theirs.sendall(data)
    theirs.shutdown(socket.SHUT_WR)
    conn.closed.wait(10)
    conn.close()
    theirs.close()
    _check_log(events.log)


def _check_log(log: Any) -> None:
    """The log as a trial reads it: resources and a HAR, whatever the events said."""
    log.resources(0.0)
    log.har("https://site.h2lab.test/", 0.0, {})


TARGETS: dict[str, Target] = {}


def _add(name: str, what: str, run: Callable[[bytes], None]) -> None:
    from fuzz import seeds

    TARGETS[name] = Target(name, what, run, lambda: seeds.SEEDS[name]())


_add("warc", "WARC files (records, HTTP heads, bodies, revisits)", run_warc)
_add("har", "HAR files", run_har)
_add("http-head", "an HTTP head inside a WARC record", run_http_head)
_add("body", "a body's transfer and content codings (chunked, gzip, deflate, br)", run_body)
_add("folder", "a folder import (names, symlinks, entry, host)", run_folder)
_add("manifest", "a page folder's manifest.json", run_manifest)
_add("page-archive", "a page archive from the driver (lab node)", run_page_archive)
_add("wire", "a block message from the driver (lab node)", run_wire)
_add("experiment", "an experiment TOML file", run_experiment)
_add("network", "a network spec", run_network)
_add("trace", "a Mahimahi trace file", run_trace)
_add("page-spec", "a synthetic page spec", run_page_spec)
_add("qlog", "a qlog file (JSON-SEQ) from a trial's QUIC connections", run_qlog)
_add("cdp", "Chromium DevTools messages to a tab", run_cdp)
_add("bidi", "Firefox WebDriver BiDi frames and events", run_bidi)
