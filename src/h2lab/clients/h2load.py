"""h2load (Debian ``nghttp2-client``) fetching every resource of a page, browser-like.

Per origin, as browsers and seed 002 do:

* ``h1c``/``h1s``: up to 6 connections (the browsers' per-host limit), one request at a time
  on each; the origin's resources are dealt round-robin over the connections in page order;
* ``h1p``: one connection, every request pipelined at once;
* ``h2s``/``h2c``: one connection, every request as its own stream at once.

h2load hands every connection (``-c``) the same URI list from the start, so each connection
here is its own h2load process (``-c 1``) with its own share of the URIs. All processes of a
trial start together; ``pdt_ms`` is from the earliest request start to the latest response end
over all their request logs. h2load does not report request header bytes (nginx counts them,
see ``servers.REQUEST_LOG``); it does report response header bytes as received. With a
packet capture, every process logs its TLS keys to the trial's keylog (h2load honours
``SSLKEYLOGFILE``).

``connect_ms`` and ``ttfb_ms`` are h2load's own ``time for connect`` and ``time to 1st byte``
(defined in :mod:`h2lab.metrics.h2load`: from h2load's ``connect()`` call to the TCP, and for
h1s/h2s the TLS, handshake done; and to the first response body byte) of the connection that
fetches the entry document, the first connection a browser opens. That process runs one
connection, so h2load's min, max and mean are its value (with ``clients=N``, the mean over
its N connections, see below). Unlike ``pdt_ms`` they include the handshakes: h2load sends the
connection's first request when ``connect_ms`` ends. Where the entry is its origin's first
resource (synthetic pages) it is that connection's first request, and for h1 ``ttfb_ms`` is
the entry's first byte; over h2 the first body byte may be another stream's.

Option ``clients`` (``h2load:clients=40``, seed 002's 40 parallel clients): that many page
loads at once, each with its own connections; every process above runs ``-c N`` with N times
its requests, h2load giving each of its clients an equal share. ``pdt_ms`` is then the time
until the last of the N page loads ended, and ``connect_ms`` and ``ttfb_ms`` the means over the
N connections that fetch the entry (h2load's summary has no per-connection times). h2load's
request log does not say which client made a request, so a trial of several clients stores no
per-resource rows.

Option ``per_host`` (``h2load:per_host=5``): at most that many requests outstanding at once per
origin, for every protocol, as an app client's dispatcher allows (OkHttp's ``Dispatcher`` runs at
most 5 calls per host, over HTTP/2 too; seed 001's client was OkHttp). ``h1c``/``h1s`` then
open up to that many connections instead of 6; ``h2s``/``h2c`` keep that many streams open on
their one connection (h2load ``-m``), starting the next request when one ends; ``h1p`` keeps
that many requests pipelined. Without it, the browser-like plan above.

A trial of one client leaves its requests as HAR 1.2 (:data:`~h2lab.artifacts.PAGE_HAR`,
:func:`h2load_har`), with what h2load's request log knows: each request's URL (from the plan),
status, start and duration. The whole duration is ``wait`` (the log has no first byte);
a connection's first request carries the connection's ``time for connect`` as ``connect``
(TLS in it; ``ssl`` is -1, not told apart) and starts that much earlier; headers, cookies and
the phases it cannot tell are empty or -1, as HAR allows.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from h2lab import har, procs, programs
from h2lab.artifacts import H2LOAD_LOG, H2LOAD_OUT, PAGE_HAR
from h2lab.clients import ClientAdapter, LoadContext, LoadResult, ResourceTiming, register
from h2lab.errors import TrialFailed, WaitTimeout
from h2lab.metrics import h2load as parse
from h2lab.net import netns
from h2lab.pages import Page, Resource
from h2lab.spec.options import integer, option
from h2lab.spec.protocols import H1C, H1P, H1S, H2C, H2S, url_for

BROWSER_CONNECTIONS_PER_HOST = 6  # Chrome/Firefox per-host limit for HTTP/1.1
MAX_CLIENTS = 100
MAX_PER_HOST = 1000

_FLAGS = {
    H1C: ["--h1"],
    H1P: ["--h1"],
    H1S: ["--h1"],  # ALPN http/1.1 only
    H2S: ["--npn-list=h2"],
    H2C: ["--no-tls-proto=h2c"],  # HTTP/2 with prior knowledge
}


@dataclass(frozen=True)
class Connection:
    """One h2load process: one TCP connection to one origin with its share of resources."""

    origin: str
    index: int
    resources: tuple[Resource, ...]
    in_flight: int
    """requests outstanding at once: 1, or all of them (pipelining / h2 streams)"""

    @property
    def id(self) -> str:
        return f"{self.origin}#{self.index}"


def plan(page: Page, protocol: str, per_host: int | None = None) -> list[Connection]:
    """Pure: which connections a page load opens and what each fetches; ``per_host`` caps the
    requests outstanding at once per origin (None: 6 connections for h1, everything at once
    otherwise)."""
    conns: list[Connection] = []
    for origin in page.origins:
        res = page.resources_of(origin)
        if not res:
            continue
        if protocol in (H1C, H1S):
            k = min(per_host or BROWSER_CONNECTIONS_PER_HOST, len(res))
            for i in range(k):
                conns.append(Connection(origin, i, tuple(res[i::k]), 1))
        else:
            conns.append(Connection(origin, 0, tuple(res), min(per_host or len(res), len(res))))
    return conns


def entry_connection(conns: Sequence[Connection], page: Page) -> int:
    """Pure: the index in ``conns`` (a :func:`plan`) of the connection that fetches the page's
    entry document."""
    return next(i for i, c in enumerate(conns) if page.entry in c.resources)


def argv_for(conn: Connection, protocol: str, log_file: str, clients: int = 1) -> list[str]:
    n = len(conn.resources)
    return [
        "h2load",
        *_FLAGS[protocol],
        f"-c{clients}",
        "-t1",
        f"-n{clients * n}",
        f"-m{conn.in_flight}",
        f"--log-file={log_file}",
        *(url_for(r, protocol) for r in conn.resources),
    ]


class H2load(ClientAdapter):
    name = "h2load"
    protocols = frozenset(_FLAGS)

    def __init__(self, clients: int = 1, per_host: int | None = None) -> None:
        self.clients = clients
        self.per_host = per_host

    def version(self) -> str:
        return programs.H2LOAD.version() or "unknown"

    def close(self) -> None:
        """Nothing outlives a trial."""

    def load(self, page: Page, protocol: str, ctx: LoadContext) -> LoadResult:
        conns = plan(page, protocol, self.per_host)
        ctx.artifacts_dir.mkdir(parents=True, exist_ok=True)
        jobs = []
        for i, conn in enumerate(conns):
            log = ctx.artifacts_dir / H2LOAD_LOG.format(i=i)
            argv = argv_for(conn, protocol, str(log), self.clients)
            if ctx.keylog is not None:  # h2load appends a line per secret and flushes it
                argv = ["env", f"SSLKEYLOGFILE={ctx.keylog}", *argv]
            argv = netns.exec_argv(ctx.netns, argv)
            jobs.append((argv, ctx.artifacts_dir / H2LOAD_OUT.format(i=i)))
        try:
            finished = procs.run_together(jobs, ctx.timeout_s)
        except WaitTimeout as exc:
            raise TrialFailed(f"h2load did not finish within {ctx.timeout_s:g} s") from exc
        return self._collect(list(zip(conns, finished, strict=True)), page, protocol, ctx)

    def _collect(
        self,
        running: Sequence[tuple[Connection, subprocess.Popen[bytes]]],
        page: Page,
        protocol: str,
        ctx: LoadContext,
    ) -> LoadResult:
        """The result of a load's finished processes (the h2load times of the one whose
        connection fetched the entry document are ``connect_ms``, ``ttfb_ms``), its HAR
        written for one client."""
        entry = entry_connection([conn for conn, _ in running], page)
        per_conn: list[tuple[Connection, list[parse.RequestLog]]] = []
        summaries: list[parse.H2loadSummary] = []
        header_bytes = body_bytes = 0
        for i, (conn, proc) in enumerate(running):
            text = (ctx.artifacts_dir / H2LOAD_OUT.format(i=i)).read_text(errors="replace")
            try:
                summary = parse.parse_summary(text)
            except parse.H2loadParseError as exc:
                raise TrialFailed(f"{conn.id}: h2load exited {proc.returncode}: {exc}") from exc
            wanted = self.clients * len(conn.resources)
            if summary.requests_succeeded != wanted:
                tail = text.strip().splitlines()[-1:] or [""]
                raise TrialFailed(
                    f"{conn.id}: {summary.requests_succeeded}/{wanted} requests "
                    f"succeeded ({tail[0]})"
                )
            rows = parse.in_request_order(
                parse.parse_log((ctx.artifacts_dir / H2LOAD_LOG.format(i=i)).read_text())
            )
            bad = [r.status for r in rows if not 200 <= r.status < 400]
            if bad or len(rows) != wanted:
                raise TrialFailed(f"{conn.id}: statuses {bad} in {len(rows)} logged requests")
            header_bytes += summary.header_bytes
            body_bytes += summary.data_bytes
            per_conn.append((conn, rows))
            summaries.append(summary)
        t0 = min(r.start_us for _, rows in per_conn for r in rows)
        t_end = max(r.end_us for _, rows in per_conn for r in rows)
        # rows of several clients cannot be told apart: none are kept then
        resources = (
            ()
            if self.clients > 1
            else tuple(
                ResourceTiming(
                    url=url_for(res, protocol),
                    origin=conn.origin,
                    start_ms=(row.start_us - t0) / 1000,
                    ttfb_ms=None,
                    end_ms=(row.end_us - t0) / 1000,
                    bytes=res.size_bytes,
                    protocol=protocol,
                    connection=conn.id,
                    status=row.status,
                )
                for conn, rows in per_conn
                for res, row in zip(conn.resources, rows, strict=True)
            )
        )
        if self.clients == 1:
            fetched = [
                (conn, rows, summary.connect.mean_ms if summary.connect else None)
                for (conn, rows), summary in zip(per_conn, summaries, strict=True)
            ]
            page_har = h2load_har(url_for(page.entry, protocol), protocol, fetched)
            (ctx.artifacts_dir / PAGE_HAR).write_text(json.dumps(page_har))
        first = summaries[entry]
        return LoadResult(
            pdt_ms=(t_end - t0) / 1000,
            connect_ms=first.connect.mean_ms if first.connect else None,
            ttfb_ms=first.first_byte.mean_ms if first.first_byte else None,
            body_bytes=body_bytes,
            request_header_bytes=None,
            response_header_bytes=header_bytes,
            resources=tuple(sorted(resources, key=lambda r: r.start_ms)),
        )


def h2load_har(
    page_url: str,
    protocol: str,
    fetched: Sequence[tuple[Connection, Sequence[parse.RequestLog], float | None]],
) -> dict[str, Any]:
    """A one-client load as HAR 1.2: each connection with its request-log rows (in request
    order, one per resource) and its ``time for connect`` (ms; None: not told). The page
    starts with the first entry; it has no load events (-1) and has its ``_pdt_ms``."""
    version = "HTTP/1.1" if protocol in (H1C, H1P, H1S) else "HTTP/2.0"
    timed: list[tuple[float, dict[str, Any]]] = []
    for conn, rows, connect_ms in fetched:
        for i, (res, row) in enumerate(zip(conn.resources, rows, strict=True)):
            setup_ms = connect_ms if i == 0 and connect_ms is not None else har.NOT_APPLICABLE
            start_s = row.start_us / 1e6 - max(setup_ms, 0.0) / 1000
            entry = _h2load_entry(url_for(res, protocol), version, res, row, setup_ms, conn.id)
            entry["startedDateTime"] = har.iso_date(start_s)
            timed.append((start_s, entry))
    timed.sort(key=lambda t: t[0])
    rows_all = [row for _, rows, _ in fetched for row in rows]
    pdt_ms = (max(r.end_us for r in rows_all) - min(r.start_us for r in rows_all)) / 1000
    page = har.page(page_url, timed[0][0], None, None, {"pdt_ms": pdt_ms})
    return har.log([e for _, e in timed], [page])


def _h2load_entry(
    url: str,
    version: str,
    res: Resource,
    row: parse.RequestLog,
    connect_ms: float,
    connection: str,
) -> dict[str, Any]:
    """One request of h2load's log as a HAR entry (its date is the caller's)."""
    timings = {
        "blocked": har.NOT_APPLICABLE,
        "dns": har.NOT_APPLICABLE,
        "connect": connect_ms,
        "ssl": har.NOT_APPLICABLE,
        "send": 0.0,
        "wait": row.duration_us / 1000,
        "receive": 0.0,
    }
    return {
        "pageref": har.PAGE_ID,
        "time": har.total_ms(timings),
        "request": {
            "method": "GET", "url": url, "httpVersion": version, "cookies": [], "headers": [],
            "queryString": har.query_string(url), "headersSize": -1, "bodySize": 0,
        },
        "response": {
            "status": row.status, "statusText": "", "httpVersion": version, "cookies": [],
            "headers": [], "content": {"size": res.size_bytes, "mimeType": res.content_type},
            "redirectURL": "", "headersSize": -1, "bodySize": -1,
        },
        "cache": {},
        "timings": timings,
        "connection": connection,
    }  # fmt: skip


@dataclass(frozen=True)
class Options:
    """``h2load:key=value,...``, parsed by the registry."""

    clients: int = option(
        integer(1, MAX_CLIENTS),
        1,
        "page loads at once, each with its own connections (seed 002's parallel clients); "
        "pdt_ms until the last ends, no resource rows",
        "clients=40",
    )
    per_host: int | None = option(
        integer(1, MAX_PER_HOST),
        None,
        "requests outstanding at once per origin (an app client's dispatcher: OkHttp's 5)",
        "per_host=5",
    )
    """None: every request of a connection's share at once"""


register("h2load", lambda o: H2load(o.clients, o.per_host), Options)
