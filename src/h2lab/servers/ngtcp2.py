"""ngtcp2's example HTTP/3 server (``gtlsserver``, Debian 13's ``ngtcp2-server`` 1.11,
:mod:`h2lab.debian13`): an HTTP/3-only server, here for the one thing no other h3 server h2lab
runs has, BBR (``ngtcp2:cc=bbr``; ``cubic``, its default, and ``newreno`` too).

One process per origin, each on its origin's address (UDP 443), serving the page's bodies from
a folder of links laid out by URL path (``htdocs/<origin>/<path>``, ``index.html`` for a path
ending in ``/``). What it sends is its own: status 200 and a content type from the file's
extension (Debian 13's ``/etc/mime.types``), none of a page's recorded headers; a resource it
cannot serve so (a POST, a query, a status other than 200, a path that is not a plain file
path) is left out and answered 404, counted as any server's. It offers no TCP: a trial over
another protocol is refused at validation.

What a trial stores of its transport (:class:`Ngtcp2Ledger`): the algorithm from the running
server's own command line (its qlog names none), the initial congestion window from its qlog
(the first ``recovery:metrics_updated``, with ``capture = ["qlog"]``); no packet counts: its
qlog files are buffered until a connection closes, so counts over a browser's open
connection would be short.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from h2lab import debian13
from h2lab.pages import Page
from h2lab.pages.manifest import Resource
from h2lab.servers import FORCED_ONLY, ServeContext, Serving, register
from h2lab.servers.process import Launch, serve_process
from h2lab.servers.quic import QLOG_DIR, QuicLedger, QuicTotals
from h2lab.spec.options import choice, option
from h2lab.spec.protocols import H3, PORTS
from h2lab.tls import LocalCA

NAME = "ngtcp2"
PROGRAM = "ngtcp2-server"
CCS = {"cubic": "cubic", "newreno": "reno", "bbr": "bbr"}
"""h2lab's names of its algorithms -> ngtcp2's (``--cc``)"""
HTDOCS_DIR = "htdocs"
MIME_TYPES = "etc/mime.types"
QLOG_HEAD_BYTES = 64 * 1024
"""How much of a qlog file is read for its first window (it is among the first events)."""


def file_path(res: Resource) -> PurePosixPath | None:
    """Where ``res`` lies under its origin's folder, or None when the server cannot serve it as
    recorded (not a plain GET of status 200 without a query, or a path with ``..``, ``.``,
    an empty segment or a byte no file name may hold)."""
    if res.method != "GET" or res.status != 200 or res.query:
        return None
    path = res.path + ("index.html" if res.path.endswith("/") else "")
    parts = path.split("/")[1:]
    if not parts or any(p in ("", ".", "..") or "\0" in p or len(p) > 255 for p in parts):
        return None
    return PurePosixPath(*parts)


def lay_out(page: Page, htdocs: Path) -> int:
    """``htdocs/<origin>/<path>`` -> each servable resource's body (the first of two at one
    path; a file where another needs a folder is left out); how many were laid out."""
    laid = 0
    for res in page.resources:
        rel = file_path(res)
        if rel is None:
            continue
        target = htdocs / res.origin / rel
        with contextlib.suppress(FileExistsError, NotADirectoryError):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(page.body_file(res))
            laid += 1
    return laid


def first_window(qlog_dir: Path) -> int:
    """The congestion window the newest qlog file's connection began with (bytes; 0: none)."""
    files = sorted(qlog_dir.glob("*.sqlog"), key=lambda p: p.stat().st_mtime, reverse=True)
    for path in files[:1]:
        with path.open("rb") as f:
            head = f.read(QLOG_HEAD_BYTES).decode(errors="replace")
        for line in head.splitlines():
            with contextlib.suppress(ValueError, AttributeError):
                event = json.loads(line)
                if event.get("name") == "recovery:metrics_updated":
                    return int(event["data"]["congestion_window"])
    return 0


def ran_cc(pids: list[int]) -> str:
    """The ``--cc`` the running servers were started with (ngtcp2's name), "" if unreadable
    or not the same for all."""
    said = set()
    for pid in pids:
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return ""
        said |= {a.decode(errors="replace")[5:] for a in args if a.startswith(b"--cc=")}
    return said.pop()[:20] if len(said) == 1 else ""


class Ngtcp2Ledger(QuicLedger):
    """The algorithm the servers run and the window the newest connection began with."""

    def __init__(self, state_dir: Path, pids: list[int]) -> None:
        super().__init__(state_dir)
        self.pids = pids

    def totals(self) -> QuicTotals | None:
        cc = ran_cc(self.pids)
        if not cc:
            return None
        window = first_window(self.qlog_dir) if self.qlog_dir.is_dir() else 0
        return QuicTotals(0, None, None, cc=cc, initial_window_bytes=window)


class Ngtcp2:
    name = NAME
    protocols = frozenset({H3})
    discoveries = FORCED_ONLY
    qlog = True

    def __init__(self, cc: str = "") -> None:
        self.cc = cc

    def version(self) -> str:
        mine = debian13.versions().get(PROGRAM, "not installed")
        return f"ngtcp2 {mine} (gtlsserver)" + (f", --cc={CCS[self.cc]}" if self.cc else "")

    def check(self) -> None:
        """Nothing to check: its arguments are h2lab's alone."""

    @contextmanager
    def serve(self, page: Page, ctx: ServeContext) -> Iterator[Serving]:
        d = ctx.state_dir
        d.mkdir(parents=True, exist_ok=True)
        htdocs = d / HTDOCS_DIR
        with contextlib.suppress(FileNotFoundError):
            _remove_tree(htdocs)
        lay_out(page, htdocs)
        ca = LocalCA(ctx.tls_dir)
        # its default spelled out (ngtcp2's own is cubic), so the running server names it
        options = ["-q", f"--cc={CCS[self.cc or 'cubic']}"]
        mime = debian13.root() / MIME_TYPES
        if mime.is_file():  # the root filesystem's own (media-types), else the host's
            options.append(f"--mime-types-file={mime}")
        if ctx.qlog:
            (d / QLOG_DIR).mkdir(exist_ok=True)
            options.append(f"--qlog-dir={d / QLOG_DIR}")
        with ExitStack() as stack:
            served: list[Serving] = []
            for k, host in enumerate(page.origins):
                pair = ca.leaf(host)
                (htdocs / host).mkdir(parents=True, exist_ok=True)
                where = [ctx.origin_ips[host], str(PORTS[H3]), str(pair.key), str(pair.cert)]
                argv = [*debian13.argv(PROGRAM), *options, "-d", str(htdocs / host), *where]
                out = d / f"{NAME}-{k}.out"
                launch = Launch(f"{NAME}-{k}", argv, out, program=PROGRAM, udp=True, tcp=False)
                served.append(stack.enter_context(serve_process(ctx, launch, [host])))
            pids = [w.proc.pid for s in served for w in s.watched]
            yield Serving(*(w for s in served for w in s.watched), quic=Ngtcp2Ledger(d, pids))


def _remove_tree(folder: Path) -> None:
    """The links and folders of an earlier page's layout (links only: never what they name)."""
    for p in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if p.is_symlink() or p.is_file():
            p.unlink()
        else:
            p.rmdir()
    folder.rmdir()


@dataclass(frozen=True)
class Options:
    """``ngtcp2:cc=ALGORITHM``, parsed by the registry."""

    cc: str = option(
        choice(*CCS),
        "",
        "QUIC's congestion control (--cc; default: ngtcp2's own, cubic); the only h3 server "
        "h2lab runs with bbr",
        "cc=bbr",
    )


register(NAME, lambda o: Ngtcp2(o.cc), Options)
