"""nghttp (Debian ``nghttp2-client``): an HTTP/2 page client that accepts server push and sends
priorities, which Chromium no longer does (push was removed in Chromium 106).

One ``nghttp`` process opens one connection, so a page load runs one process per origin, all
started together:

* the entry's origin: ``nghttp -a ENTRY [URL...]``. ``-a`` parses the entry's HTML as it
  arrives and requests the assets it links (``<img src>``, ``<script src>``, stylesheets,
  preloads) *on the same origin only* (same scheme, host and port), with priorities by type
  (CSS and scripts in the head above images, the Firefox-like tree nghttp builds). A resource
  the server pushes is not requested again. The origin's other resources (not linked from the
  HTML, so ``-a`` cannot find them) are listed after the entry and requested at once;
* every other origin: ``nghttp URL...``, its resources requested at once, like h2load does
  (``-a`` does not follow links to other origins).

``h2c`` (prior knowledge on :8080): the synthetic pages link ``//host/path``, which resolves to
port 80, not the entry's 8080, so ``-a`` finds nothing there and every resource is listed (all
requested at once; pushes can still come). h2s is the protocol where the HTML gates the assets.

Windows: ``-w30 -W30`` (stream and connection windows 2^30-1), h2load's defaults, so flow
control never limits the transfer (nghttp's own default, 64 KiB per connection, caps it at
64 KiB per round trip). Timings come from each process's HAR (1 ms resolution across
processes, see :mod:`h2lab.metrics.nghttp`), header bytes and priorities from its ``-v`` log.
Each HAR is kept mended as HAR 1.2 (:func:`h2lab.metrics.nghttp.complete_har`).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from h2lab import procs, programs
from h2lab.artifacts import NGHTTP_HAR, NGHTTP_OUT
from h2lab.clients import ClientAdapter, LoadContext, LoadResult, ResourceTiming, register
from h2lab.errors import TrialFailed, WaitTimeout
from h2lab.metrics import nghttp as parse
from h2lab.net import netns
from h2lab.pages import Page, Resource
from h2lab.spec.protocols import H2C, H2S, url_for

PROTOCOLS = frozenset({H2S, H2C})
WINDOW_BITS = 30  # h2load's default for -w and -W (h2load --help, nghttp2 1.52)


@dataclass(frozen=True)
class Invocation:
    """One nghttp process: one connection to one origin."""

    origin: str
    urls: tuple[str, ...]
    """on the command line, in order"""
    get_assets: bool
    """``-a``: follow the HTML's same-origin links"""
    expected: tuple[Resource, ...]
    """the page's resources this connection must fetch"""

    @property
    def id(self) -> str:
        return f"{self.origin}#0"


def plan(page: Page, protocol: str, entry_html: str) -> list[Invocation]:
    """Pure: the nghttp processes of one page load (``entry_html``: the entry's body)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"nghttp loads h2s and h2c, not {protocol}")
    entry = page.entry
    entry_url = url_for(entry, protocol)
    out: list[Invocation] = []
    for origin in page.origins:
        res = page.resources_of(origin)
        if not res:
            continue
        urls = [url_for(r, protocol) for r in res]
        if origin != entry.origin:
            out.append(Invocation(origin, tuple(urls), False, tuple(res)))
            continue
        rest = [u for u in urls if u != entry_url]
        listed = parse.unlinked(rest, entry_html, entry_url)
        out.insert(0, Invocation(origin, (entry_url, *listed), True, tuple(res)))
    return out


def argv_for(inv: Invocation, har_file: str) -> list[str]:
    return [
        "nghttp",
        "-n",  # discard bodies
        "-v",  # frame log: header bytes, priorities
        "-y",  # the lab CA is not in the system store; h2load does not verify either
        f"-w{WINDOW_BITS}",
        f"-W{WINDOW_BITS}",
        *(["-a"] if inv.get_assets else []),
        f"--har={har_file}",
        *inv.urls,
    ]


class Nghttp(ClientAdapter):
    name = "nghttp"
    protocols = PROTOCOLS

    def version(self) -> str:
        return programs.NGHTTP.version() or "unknown"

    def close(self) -> None:
        """Nothing outlives a trial."""

    def load(self, page: Page, protocol: str, ctx: LoadContext) -> LoadResult:
        entry_html = page.body_file(page.entry).read_text(errors="replace")
        invocations = plan(page, protocol, entry_html)
        ctx.artifacts_dir.mkdir(parents=True, exist_ok=True)
        jobs = []
        for i, inv in enumerate(invocations):
            har = ctx.artifacts_dir / NGHTTP_HAR.format(i=i)
            har.unlink(missing_ok=True)
            argv = netns.exec_argv(ctx.netns, argv_for(inv, str(har)))
            jobs.append((argv, ctx.artifacts_dir / NGHTTP_OUT.format(i=i)))
        try:
            finished = procs.run_together(jobs, ctx.timeout_s)
        except WaitTimeout as exc:
            raise TrialFailed(f"nghttp did not finish within {ctx.timeout_s:g} s") from exc
        return self._collect(list(zip(invocations, finished, strict=True)), protocol, ctx)

    def _collect(
        self,
        running: Sequence[tuple[Invocation, subprocess.Popen[bytes]]],
        protocol: str,
        ctx: LoadContext,
    ) -> LoadResult:
        rows: list[tuple[Invocation, parse.HarEntry, str | None]] = []
        req_header = resp_header = 0
        for i, (inv, proc) in enumerate(running):
            out = (ctx.artifacts_dir / NGHTTP_OUT.format(i=i)).read_text(errors="replace")
            har = ctx.artifacts_dir / NGHTTP_HAR.format(i=i)
            if proc.returncode != 0 or not har.exists():
                tail = [ln for ln in out.splitlines() if ln.strip()][-1:] or [""]
                raise TrialFailed(f"{inv.id}: nghttp exited {proc.returncode}: {tail[0]}")
            try:
                text = har.read_text()
                entries = parse.parse_har(text)
                har.write_text(json.dumps(parse.complete_har(text, inv.id)))
            except parse.NghttpParseError as exc:
                raise TrialFailed(f"{inv.id}: {exc}") from exc
            frames = parse.parse_frame_log(out)
            req_header += frames.request_header_bytes
            resp_header += frames.response_header_bytes
            fetched = {e.url for e in entries if 200 <= e.status < 400}
            missing = [r.path for r in inv.expected if url_for(r, protocol) not in fetched]
            bad = [(e.url, e.status) for e in entries if not 200 <= e.status < 400]
            if missing or bad:
                raise TrialFailed(f"{inv.id}: not fetched {missing[:3]}, bad statuses {bad[:3]}")
            rows += [(inv, e, frames.priorities.get(e.stream_id)) for e in entries]
        t0 = min(e.start_ms for _, e, _ in rows)
        t_end = max(e.end_ms for _, e, _ in rows)
        resources = tuple(
            ResourceTiming(
                url=e.url,
                origin=inv.origin,
                start_ms=e.start_ms - t0,
                ttfb_ms=e.ttfb_ms - t0,
                end_ms=e.end_ms - t0,
                bytes=e.body_bytes,
                protocol="h2" if e.http_version == "HTTP/2.0" else e.http_version,
                connection=inv.id,
                priority=prio,
                status=e.status,
                pushed=e.pushed,
            )
            for inv, e, prio in rows
        )
        return LoadResult(
            pdt_ms=t_end - t0,
            body_bytes=sum(e.body_bytes for _, e, _ in rows),
            request_header_bytes=req_header,
            response_header_bytes=resp_header,
            resources=tuple(sorted(resources, key=lambda r: r.start_ms)),
        )


register("nghttp", lambda _: Nghttp())
