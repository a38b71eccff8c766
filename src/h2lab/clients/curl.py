"""curl 8.14 (Debian 13's, :mod:`h2lab.debian13`) fetching every resource of a page at once:
the lab's h3 page download, next to h2load's h2.

One curl process per trial, every resource of the page a transfer of it, all added at once
(``--parallel``, up to :data:`MAX_TRANSFERS`), each origin's transfers multiplexed over one
connection (curl waits for the first connection to an origin to know it multiplexes before it
opens another): h2load's plan for ``h2s``/``h2c`` (one connection per origin, every request a
stream at once) and the same for ``h3`` (``--http3-only``: QUIC or nothing, no TCP fallback).
curl verifies the servers' certificates against the lab CA. A resource row's connection is its
origin's one (``o1.h2lab.test#0``): curl reports no connection id for most h3 transfers
(``conn_id`` -1), and the lab's own counters say how many TCP connections a trial opened.

curl reports each transfer's times from the moment it was added (``--write-out``: one line of
:data:`WRITE_OUT` per transfer; not ``%{json}``, which held every transfer of a ``--parallel``
run 10 s at its end with curl 8.14.1, measured here), the same
moment for all of them: a request is sent at its ``time_pretransfer`` (its connection and
handshake done), its first byte arrives at ``time_starttransfer``, its last at
``time_total``. So, as h2load's, ``pdt_ms`` runs from the earliest request sent to the
latest response end, and ``connect_ms``/``ttfb_ms`` are the entry document's handshake done
(``time_appconnect``; ``time_connect`` for h2c) and first byte, from the start. Header bytes
are left to the server's count (nginx's ``requests.log``): curl's ``size_header`` is the
decoded header text, not the HPACK or QPACK bytes on the wire.
"""

from __future__ import annotations

from h2lab import debian13, procs
from h2lab.artifacts import CURL_CONFIG, CURL_OUT
from h2lab.clients import ClientAdapter, LoadContext, LoadResult, ResourceTiming, register
from h2lab.errors import TrialFailed, WaitTimeout
from h2lab.net import netns
from h2lab.pages import Page
from h2lab.spec.protocols import H2C, H2S, H3, url_for
from h2lab.tls import LocalCA

MAX_TRANSFERS = 300
"""curl's own ceiling for ``--parallel-max``: a page with more resources would queue some,
and a queued transfer's times would not start where the others' do."""

_FLAGS = {
    H2S: ["--http2"],  # ALPN h2 (curl falls back to http/1.1 only if the server refuses it)
    H2C: ["--http2-prior-knowledge"],
    H3: ["--http3-only"],
}
_PROTOCOL = {"3": "h3", "2": "h2", "1.1": "http/1.1", "1.0": "http/1.0"}
FIELDS = (
    "http_version",
    "response_code",
    "size_download",
    "time_connect",
    "time_appconnect",
    "time_pretransfer",
    "time_starttransfer",
    "time_total",
    "exitcode",
    "url_effective",
    "errormsg",
)
WRITE_OUT = "h2lab\t" + "\t".join(f"%{{{name}}}" for name in FIELDS) + "\n"
"""A transfer's line: a marker, then :data:`FIELDS` tab-separated (the URL has no tab: curl
sends it encoded; the error message, last, may)."""


def config_text(page: Page, protocol: str) -> str:
    """curl's config file (``-K``): every resource of the page, in page order, its body
    discarded. Quoted as curl's config syntax wants (``\\`` and ``"`` escaped)."""

    def quoted(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines = []
    for res in page.resources:
        lines += [f"url = {quoted(url_for(res, protocol))}", 'output = "/dev/null"']
    return "\n".join(lines) + "\n"


def argv_for(page: Page, protocol: str, config: str, ca_file: str | None) -> list[str]:
    transfers = min(len(page.resources), MAX_TRANSFERS)
    verify = ["--cacert", ca_file] if ca_file else ["--insecure"]
    return [
        *debian13.argv("curl"),
        "--silent",
        "--show-error",
        "--parallel",
        "--parallel-max",
        str(transfers),
        *_FLAGS[protocol],
        *verify,
        "--write-out",
        WRITE_OUT,
        "--config",
        config,
    ]


def transfers(text: str) -> list[dict[str, str]]:
    """The :data:`WRITE_OUT` lines curl printed, as field -> text (other lines skipped)."""
    found = []
    for line in text.splitlines():
        marker, _, rest = line.partition("\t")
        values = rest.split("\t", len(FIELDS) - 1)
        if marker == "h2lab" and len(values) == len(FIELDS):
            found.append(dict(zip(FIELDS, values, strict=True)))
    return found


def result_of(page: Page, protocol: str, done: list[dict[str, str]]) -> LoadResult:
    """The trial's result from curl's transfers; :class:`TrialFailed` naming the first
    transfer that failed, or the resources that have none."""
    by_url = {t["url_effective"]: t for t in done}
    wanted = [(res, url_for(res, protocol)) for res in page.resources]
    missing = [url for _, url in wanted if url not in by_url]
    if missing:
        raise TrialFailed(f"curl reported {len(done)} of {len(wanted)} transfers ({missing[0]})")
    for _, url in wanted:
        t = by_url[url]
        code = int(t["response_code"] or 0)
        if t["exitcode"] not in ("", "0") or not 200 <= code < 400:
            why = t["errormsg"] or f"status {code}"
            raise TrialFailed(f"curl: {url}: {why}")
    t0 = min(float(by_url[url]["time_pretransfer"]) for _, url in wanted)
    rows = []
    for res, url in wanted:
        t = by_url[url]
        version = _PROTOCOL.get(t["http_version"], t["http_version"])
        rows.append(
            ResourceTiming(
                url=url,
                origin=res.origin,
                start_ms=(float(t["time_pretransfer"]) - t0) * 1000,
                ttfb_ms=(float(t["time_starttransfer"]) - t0) * 1000,
                end_ms=(float(t["time_total"]) - t0) * 1000,
                bytes=int(t["size_download"] or 0),
                protocol=version,
                connection=f"{res.origin}#0",  # see the module's note on connections
                status=int(t["response_code"]),
            )
        )
    entry = by_url[url_for(page.entry, protocol)]
    handshake = "time_connect" if protocol == H2C else "time_appconnect"
    return LoadResult(
        pdt_ms=max(r.end_ms for r in rows),
        connect_ms=float(entry[handshake]) * 1000,
        ttfb_ms=float(entry["time_starttransfer"]) * 1000,
        body_bytes=sum(r.bytes for r in rows),
        request_header_bytes=None,
        response_header_bytes=None,
        resources=tuple(sorted(rows, key=lambda r: r.start_ms)),
    )


class Curl(ClientAdapter):
    name = "curl"
    protocols = frozenset({H2S, H2C, H3})
    protocol_note = (
        "curl fetches h2 and h3 only: for HTTP/1.1, h2load keeps browsers' 6 connections"
    )
    qlog = True
    """Debian 13's curl runs QUIC on OpenSSL 3.5's stack, which writes a qlog per connection
    into ``$QLOGDIR`` (``<odcid>_client.sqlog``)"""

    def version(self) -> str:
        return debian13.versions().get("curl", "not installed")

    def load(self, page: Page, protocol: str, ctx: LoadContext) -> LoadResult:
        if len(page.resources) > MAX_TRANSFERS:
            raise TrialFailed(f"curl runs at most {MAX_TRANSFERS} transfers at once")
        ctx.artifacts_dir.mkdir(parents=True, exist_ok=True)
        config = ctx.artifacts_dir / CURL_CONFIG
        config.write_text(config_text(page, protocol))
        ca = str(LocalCA(ctx.tls_dir).cert_path) if ctx.tls_dir else None
        argv = argv_for(page, protocol, str(config), ca)
        env = [f"SSLKEYLOGFILE={ctx.keylog}"] if ctx.keylog is not None else []
        if ctx.qlog_dir is not None and protocol == H3:
            ctx.qlog_dir.mkdir(parents=True, exist_ok=True)
            env.append(f"QLOGDIR={ctx.qlog_dir}")
        if env:
            argv = ["env", *env, *argv]
        out = ctx.artifacts_dir / CURL_OUT
        try:
            procs.run_together([(netns.exec_argv(ctx.netns, argv), out)], ctx.timeout_s)
        except WaitTimeout as exc:
            raise TrialFailed(f"curl did not finish within {ctx.timeout_s:g} s") from exc
        said = out.read_text(errors="replace")
        done = transfers(said)
        if not done:
            last = [line for line in said.splitlines() if line.strip()][-1:] or ["nothing"]
            raise TrialFailed(f"curl transferred nothing: {last[0][:300]}")
        return result_of(page, protocol, done)

    def close(self) -> None:
        return None


register("curl", lambda _: Curl())
