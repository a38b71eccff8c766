"""OkHttp (``okhttp/``: OkHttp 5.5.1 on Java 17) fetching every resource of a page the way seed
001's Android client did: one ``OkHttpClient`` per trial, every request enqueued at once
(``Call.enqueue``), its ``Dispatcher`` running at most ``maxRequestsPerHost`` calls per origin
(OkHttp ships 5) and ``maxRequests`` in all (64), over HTTP/2 too. Each call reads its whole
body in its callback, so it holds its slot until its last byte is read, as an app's does.

Protocols: ``h1c`` (http://, HTTP/1.1 only), ``h1s`` (https, ALPN http/1.1 only), ``h2s``
(https, ALPN h2 then http/1.1; a trial that does not get h2 fails), ``h2c`` (http:// on :8080,
HTTP/2 with prior knowledge). ``h1p`` and ``h3`` are refused when the experiment is
validated: OkHttp does not pipeline and has no HTTP/3. Names resolve only through the lab's
host map (a custom ``Dns``) and only the lab CA is trusted (hostname verification on).
Redirects are not followed and OkHttp's 10 s connect/read/write timeouts are off: the trial's
timeout bounds the load, one request per resource, as h2load does.

Times come from the program's ``EventListener`` on its own clock, which starts once the client
is built and the TLS classes are loaded (the JVM's start-up, 0.3-0.5 s, is outside every
time). As with h2load, ``pdt_ms`` runs from the first request written (``requestHeadersStart``)
to the last body byte read (``responseBodyEnd``), and each resource row's ``start_ms``,
``ttfb_ms`` and ``end_ms`` are those events from the first request. ``connect_ms`` and
``ttfb_ms`` are the entry call's, from its ``connectStart`` (h2load's "from connect()") to
``connectEnd`` and to ``responseHeadersStart``. A row's connection is ``<origin>#<n>``, n
numbering the connections in the order calls first acquired them. Any failed request fails the
trial with the request's error (as for h2load); the plan, result and JVM output stay in the
trial's artifacts.

Options ``okhttp:per_host=N,max=M``: the Dispatcher's ``maxRequestsPerHost`` and
``maxRequests`` (1..1000; per_host at most max).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from h2lab import procs
from h2lab.artifacts import OKHTTP_OUT, OKHTTP_PLAN, OKHTTP_RESULT
from h2lab.clients import ClientAdapter, LoadContext, LoadResult, ResourceTiming, register
from h2lab.clients.okhttp_build import ensure_built, jar_version, java_binary
from h2lab.errors import TrialFailed, WaitTimeout, telling_line
from h2lab.metrics import okhttp as parse
from h2lab.net import netns
from h2lab.pages import Page, Resource
from h2lab.spec.options import FLAG, integer, option
from h2lab.spec.protocols import H1C, H1S, H2C, H2S, TLS_OVER_TCP, url_for
from h2lab.tls import LocalCA

PROTOCOLS = frozenset({H1C, H1S, H2S, H2C})
PROTOCOL_NOTE = "OkHttp speaks HTTP/1.1 and HTTP/2 over TCP: it does not pipeline and has no HTTP/3"
DEFAULT_PER_HOST = 5  # okhttp3.Dispatcher.maxRequestsPerHost as OkHttp 5.5.1 ships it
DEFAULT_MAX = 64  # okhttp3.Dispatcher.maxRequests
MAX_LIMIT = 1000
JVM_MARGIN_S = 20.0
"""How much longer than the trial's timeout the JVM may run: its start-up (0.3-0.5 s measured)
and writing the result; the program itself gives up on the load after the trial's timeout."""
JVM_FLAGS = ("-XX:+UseSerialGC", "-XX:-UsePerfData")
"""The serial collector: no GC threads competing with the servers and Rattan on 2 cores; no
hsperfdata files."""
NEGOTIATED = {H1C: "http/1.1", H1S: "http/1.1", H2S: "h2", H2C: "h2_prior_knowledge"}
"""The connection protocol (OkHttp's name) each trial protocol must end up with."""


@dataclass(frozen=True)
class Limits:
    """The client's settings: the Dispatcher's limits, and Nagle's algorithm."""

    per_host: int = option(
        integer(1, MAX_LIMIT),
        DEFAULT_PER_HOST,
        "the Dispatcher's calls at once per host (OkHttp's default 5)",
        "per_host=5",
    )
    """``maxRequestsPerHost``: calls running at once per origin"""
    max: int = option(
        integer(1, MAX_LIMIT),
        DEFAULT_MAX,
        "the Dispatcher's calls at once in all (OkHttp's default 64)",
        "max=64",
    )
    """``maxRequests``: calls running at once in all"""
    nodelay: bool = option(FLAG, False, "TCP_NODELAY on its sockets", "nodelay=1")
    """TCP_NODELAY on the client's sockets; OkHttp never sets it (Nagle stays on)"""

    def __post_init__(self) -> None:
        if self.per_host > self.max:
            raise ValueError(
                f"per_host ({self.per_host}) must not exceed max ({self.max}): "
                "the Dispatcher never runs more than max calls"
            )


def plan_resources(page: Page) -> list[Resource]:
    """Pure: the resources in the order their calls are enqueued: the entry, then the rest in
    page order."""
    return [page.entry, *(r for i, r in enumerate(page.resources) if i != page.entry_index)]


def _address_of(origin: str, hosts: Mapping[str, str]) -> str:
    if origin in hosts:
        return hosts[origin]
    try:
        return str(ipaddress.ip_address(origin))  # an IP-literal origin is its own address
    except ValueError:
        raise TrialFailed(
            f"okhttp resolves names only through the lab's host map, which has no {origin}"
        ) from None


def plan_json(
    page: Page,
    protocol: str,
    limits: Limits,
    hosts: Mapping[str, str],
    ca_pem: Path | None,
    timeout_s: float,
) -> dict[str, Any]:
    """Pure: the program's plan (okhttp/src/main/java/h2lab/okhttp/Plan.java)."""
    return {
        "protocol": protocol,
        "urls": [url_for(r, protocol) for r in plan_resources(page)],
        "hosts": {o: _address_of(o, hosts) for o in page.origins},
        "ca_pem": str(ca_pem) if ca_pem else None,
        "max_requests_per_host": limits.per_host,
        "max_requests": limits.max,
        "tcp_nodelay": limits.nodelay,
        "timeout_ms": max(1, round(timeout_s * 1000)),
    }


def _check(result: parse.OkhttpResult, protocol: str, timeout_s: float) -> None:
    """Raise :class:`TrialFailed` with the first reason the load cannot count."""
    n = len(result.calls)
    if result.timed_out:
        late = sum(1 for c in result.calls if c.error and c.error.startswith("not finished"))
        raise TrialFailed(f"okhttp: {late} of {n} requests not finished within {timeout_s:g} s")
    failed = [c for c in result.calls if c.error]
    if failed:
        first = failed[0]
        raise TrialFailed(
            f"okhttp: {len(failed)} of {n} requests failed, {first.url}: {first.error}"
        )
    bad = [(c.url, c.status) for c in result.calls if c.status is None or not 200 <= c.status < 400]
    if bad:
        raise TrialFailed(f"okhttp: {len(bad)} of {n} requests with bad statuses {bad[:3]}")
    wrong = [c for c in result.calls if c.protocol != NEGOTIATED[protocol]]
    if wrong:
        raise TrialFailed(
            f"okhttp: asked {protocol}, but {wrong[0].url} went over {wrong[0].protocol}"
        )


def _row_protocol(okhttp_name: str | None) -> str:
    """OkHttp's protocol name as the rows of other clients write it (``h2``, ``http/1.1``)."""
    return "h2" if okhttp_name == "h2_prior_knowledge" else okhttp_name or ""


def to_load_result(
    result: parse.OkhttpResult, resources: Sequence[Resource], protocol: str, timeout_s: float
) -> LoadResult:
    """Pure: the trial's result from the program's (``resources``: :func:`plan_resources`, in
    plan order); :class:`TrialFailed` when a request failed or went over another protocol."""
    if len(result.calls) != len(resources):
        raise TrialFailed(f"okhttp: {len(result.calls)} results for {len(resources)} requests")
    _check(result, protocol, timeout_s)
    calls = result.calls
    t0 = min(c.request_ms for c in calls if c.request_ms is not None)
    t_end = max(c.end_ms for c in calls if c.end_ms is not None)
    rows = tuple(
        ResourceTiming(
            url=c.url,
            origin=res.origin,
            start_ms=(c.request_ms if c.request_ms is not None else t0) - t0,
            ttfb_ms=None if c.ttfb_ms is None else c.ttfb_ms - t0,
            end_ms=(c.end_ms if c.end_ms is not None else t_end) - t0,
            bytes=c.bytes or 0,
            protocol=_row_protocol(c.protocol),
            connection=f"{res.origin}#{c.connection}",
            status=c.status,
        )
        for c, res in zip(calls, resources, strict=True)
    )
    entry = calls[0]
    since_connect = entry.connect_start_ms
    return LoadResult(
        pdt_ms=t_end - t0,
        connect_ms=_between(since_connect, entry.connect_end_ms),
        ttfb_ms=_between(since_connect, entry.ttfb_ms),
        body_bytes=sum(c.bytes or 0 for c in calls),
        resources=tuple(sorted(rows, key=lambda r: r.start_ms)),
    )


def _between(start: float | None, end: float | None) -> float | None:
    return None if start is None or end is None else end - start


class Okhttp(ClientAdapter):
    name = "okhttp"
    protocols = PROTOCOLS
    protocol_note = PROTOCOL_NOTE

    def __init__(self, limits: Limits = Limits()) -> None:
        self.limits = limits

    def version(self) -> str:
        return jar_version(ensure_built())

    def close(self) -> None:
        """Nothing outlives a trial: one JVM per load."""

    def load(self, page: Page, protocol: str, ctx: LoadContext) -> LoadResult:
        if protocol not in PROTOCOLS:
            raise TrialFailed(f"okhttp cannot run protocol {protocol} ({PROTOCOL_NOTE})")
        jar = ensure_built()
        ca = None
        if protocol in TLS_OVER_TCP:
            if ctx.tls_dir is None:
                raise TrialFailed(f"okhttp over {protocol} needs the lab CA (no tls_dir)")
            ca = LocalCA(ctx.tls_dir).cert_path
        plan = plan_json(page, protocol, self.limits, ctx.hosts, ca, ctx.timeout_s)
        ctx.artifacts_dir.mkdir(parents=True, exist_ok=True)
        plan_file = ctx.artifacts_dir / OKHTTP_PLAN
        plan_file.write_text(json.dumps(plan, indent=1) + "\n")
        result_file = ctx.artifacts_dir / OKHTTP_RESULT
        result_file.unlink(missing_ok=True)
        out = ctx.artifacts_dir / OKHTTP_OUT
        java = [java_binary(), *JVM_FLAGS, "-jar", str(jar), str(plan_file), str(result_file)]
        bound_s = ctx.timeout_s + JVM_MARGIN_S
        try:
            (proc,) = procs.run_together([(netns.exec_argv(ctx.netns, java), out)], bound_s)
        except WaitTimeout as exc:
            raise TrialFailed(f"okhttp did not finish within {bound_s:g} s") from exc
        if proc.returncode != 0 or not result_file.exists():
            said = telling_line(out.read_text(errors="replace")) if out.exists() else ""
            raise TrialFailed(f"okhttp exited {proc.returncode}: {said}")
        try:
            result = parse.parse_result(result_file.read_text())
        except parse.OkhttpParseError as exc:
            raise TrialFailed(f"okhttp: {exc}") from exc
        return to_load_result(result, plan_resources(page), protocol, ctx.timeout_s)


register("okhttp", Okhttp, Limits)
