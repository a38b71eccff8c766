"""nginx (Debian ``nginx``): one generated config per lab, one server block per origin.

Listens per origin address: h1c on :80, h1s/h2s on :443 (ALPN picks http/1.1 or h2), h2c with
prior knowledge on :8080. TLS is the trial's one version (``ssl_protocols``, from
:attr:`ServeContext.tls_version`); nginx's default ``ssl_ciphers`` (``HIGH:!aNULL:!MD5``) has the
TLS 1.2 suite Chromium and h2load offer first for the local CA's P-256 keys,
ECDHE-ECDSA-AES128-GCM-SHA256. Compression off and caching headers left alone, so every protocol
moves the same bytes.

Every page is served from its manifest, the way a replay proxy does: each resource gets an
internal exact-match location (its status, content type, kept headers and body file), and maps
pick the resource for a request: the exact method + host + request target first, then the
closest recorded query for that method, host and path (regexes of query prefixes, longest
first, :mod:`h2lab.pages.closest`), then the first recorded resource with the same host and
path. A request that matches nothing gets 404 and a line in
``unserved.log`` in the server's state folder. Every request also writes its header bytes as
received (``$request_length``) to ``requests.log`` (:data:`h2lab.servers.REQUEST_LOG`): the
runner's ``request_header_bytes`` for clients that cannot count them (h2load, Chromium).

Option ``nginx:conf=FILE`` (:mod:`h2lab.servers.fragment`): the user's directives, included in
every ``server`` block after h2lab's (so they override h2lab's http-level choices such as
``sendfile``, ``http2_chunk_size``, ``ssl_*``, buffers and timeouts, which an http-level include
could not: nginx refuses a directive twice in one block). Checked with ``nginx -t`` before any
trial.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import unquote

from h2lab import debian13, procs, programs
from h2lab.errors import SpecError
from h2lab.net import userns
from h2lab.pages import Page, Resource
from h2lab.pages.closest import prefix_keys, query_groups, regex_literal
from h2lab.servers import (
    FORCED_ONLY,
    IDLE_TIMEOUT_S,
    REQUEST_LOG,
    ROOTLESS_NO_USER,
    WRITE_TIMEOUT_S,
    ServeContext,
    Serving,
    register,
)
from h2lab.servers.fragment import Fragment, check_setup, conf_option, versioned
from h2lab.servers.process import Launch, serve_process
from h2lab.spec.factors import DISCOVERIES
from h2lab.spec.protocols import H1C, H2C, H2S, H3, PORTS, TCP_PROTOCOLS
from h2lab.tls import LocalCA

# Enough for every stream of the largest synthetic page at once (nginx's default is 128).
MAX_CONCURRENT_STREAMS = 1000
UNSERVED_LOG = "unserved.log"
_INTERNAL = "/.h2lab/r"


def quote(text: str) -> str:
    """A double-quoted nginx string with no variable interpolation (``$`` comes from a
    variable holding a dollar sign, nginx has no escape for it)."""
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("$", "${h2lab_dollar}")
    return f'"{text}"'


def quote_key(text: str) -> str:
    """A double-quoted map key (map keys are literal: no interpolation to guard against)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _pow2_at_least(n: int) -> int:
    return 1 << max(n - 1, 1).bit_length()


ALT_SVC = 'h3=":443"; ma=86400'
"""The ``Alt-Svc`` header of ``discovery = "alt-svc"``: h3 on the same host's UDP 443 for a
day, as deployed nginx configurations add it (``add_header Alt-Svc``)."""


def _location(i: int, res: Resource, page: Page, alt_svc: bool = False) -> str:
    lines = [f"location = {_INTERNAL}{i} {{", "    internal;"]
    lines.append(f"    default_type {quote(res.content_type or 'application/octet-stream')};")
    for name, value in res.headers:
        if name != "location":
            lines.append(f"    add_header {name} {quote(value)} always;")
    if alt_svc:  # here: a location's add_header hides the server block's
        lines.append(f"    add_header alt-svc {quote(ALT_SVC)} always;")
    location = res.header("location")
    if 300 <= res.status < 400 and location is not None:
        lines.append(f"    return {res.status} {quote(location)};")
    elif res.status != 200 or (res.body_sha256 is None and res.size_bytes == 0):
        lines.append(f"    return {res.status};")
    else:
        lines.append(f"    alias {page.body_file(res)};")
        if res.method != "GET":
            lines.append(f"    error_page 405 =200 {_INTERNAL}{i};")
    lines.append("}")
    return "\n        ".join(lines)


def _query_regexes(page: Page) -> list[tuple[str, int]]:
    """Closest query (:mod:`h2lab.pages.closest`) as regexes on ``METHOD host$uri?$args``:
    per group of recorded queries, its prefixes longest first (the first regex that matches
    wins)."""
    groups = query_groups([(r.method, r.origin, unquote(r.path), r.query) for r in page.resources])
    regexes = []
    for (method, host, path), recorded in groups.items():
        head = "~^" + regex_literal(f"{method} {host}{path}?")
        for prefix, k in prefix_keys([q for q, _ in recorded]):
            regexes.append((head + regex_literal(prefix), recorded[k][1]))
    return regexes


def render_maps(page: Page) -> str:
    """The request -> resource maps (http level): exact, closest query, by path."""
    exact: dict[str, int] = {}
    by_path: dict[str, int] = {}
    for i, r in enumerate(page.resources):
        exact.setdefault(f"{r.method} {r.origin}{r.target}", i)
        by_path.setdefault(f"{r.origin}{unquote(r.path)}", i)
    by_query = _query_regexes(page)
    longest = max(len(k) for k in [*exact, *by_path])
    entries = len(exact) + len(by_path)

    def body(m: dict[str, int] | list[tuple[str, int]]) -> str:
        pairs = m.items() if isinstance(m, dict) else m
        return "".join(f"\n        {quote_key(k)} {i};" for k, i in pairs)

    return f"""
    map_hash_bucket_size {max(64, _pow2_at_least(longest + 16))};
    map_hash_max_size {max(2048, _pow2_at_least(2 * entries))};
    geo $h2lab_dollar {{ default "$"; }}
    map "$request_method $host$request_uri" $h2lab_exact {{
        default "";{body(exact)}
    }}
    map "$request_method $host$uri?$args" $h2lab_query {{
        default "";{body(by_query)}
    }}
    map "$host$uri" $h2lab_path {{
        default "";{body(by_path)}
    }}
    map $h2lab_query $h2lab_near {{
        "" $h2lab_path;
        default $h2lab_query;
    }}
    map $h2lab_exact $h2lab_rid {{
        "" $h2lab_near;
        default $h2lab_exact;
    }}
    log_format h2lab_unserved '$request_method $scheme://$host$request_uri';
    log_format h2lab_request '$request_length $server_protocol';"""


@dataclass(frozen=True)
class Build:
    """One nginx build: the server level's name, how to run it, and whether it speaks h3."""

    name: str
    argv: Callable[[], list[str]]
    h3: bool
    program: programs.Program
    """its record: how its version is printed"""


DEBIAN12 = Build("nginx", lambda: [programs.NGINX.executable], False, programs.NGINX)
"""Debian 12's nginx 1.22: no QUIC module."""
DEBIAN13 = Build("nginx@1.26", lambda: debian13.argv("nginx"), True, programs.NGINX_13)
"""Debian 13's nginx 1.26, built ``--with-http_v3_module`` (:mod:`h2lab.debian13`)."""


def _server_block(listens: list[str], host: str, body: str, extra: str = "") -> str:
    listen = "".join(f"        listen {x};\n" for x in listens)
    return f"""
    server {{
{listen}        server_name {host};
{extra}{body}
    }}"""


def _server_body(
    host: str, page: Page, ctx: ServeContext, ca: LocalCA, fragment: Fragment | None
) -> str:
    d = ctx.state_dir
    pair = ca.leaf(host)
    locations = "\n        ".join(
        _location(i, r, page, host in ctx.alt_svc)
        for i, r in enumerate(page.resources)
        if r.origin == host
    )
    return f"""        ssl_certificate {pair.cert};
        ssl_certificate_key {pair.key};
{_include(fragment)}        location / {{ rewrite ^ {_INTERNAL}$h2lab_rid? last; }}
        location {_INTERNAL} {{
            internal;
            access_log {d / UNSERVED_LOG} h2lab_unserved;
            access_log {d / REQUEST_LOG} h2lab_request;
            return 404;
        }}
        {locations}"""


def render_config(
    page: Page,
    ctx: ServeContext,
    ca: LocalCA,
    fragment: Fragment | None = None,
    h3: bool = False,
) -> str:
    """Pure except for certificate creation: the nginx.conf text; ``fragment`` is included
    in every server block. With ``h3``, each origin also gets a server block listening for
    QUIC on UDP 443, TLS 1.3 whatever the trial's version (RFC 9001)."""
    d = ctx.state_dir
    if any(r.delay_ms for r in page.resources):
        raise SpecError(page.name, "server", "nginx cannot delay responses (use server origin)")
    servers = []
    for host in page.origins:
        ip = ctx.origin_ips[host]
        body = _server_body(host, page, ctx, ca, fragment)
        tcp = [
            f"{ip}:{PORTS[H1C]} reuseport",
            f"{ip}:{PORTS[H2S]} ssl http2 reuseport",
            f"{ip}:{PORTS[H2C]} http2 reuseport",
        ]
        servers.append(_server_block(tcp, host, body))
        if h3:
            tls13 = "        ssl_protocols TLSv1.3;  # QUIC's one version\n"
            servers.append(_server_block([f"{ip}:{PORTS[H3]} quic reuseport"], host, body, tls13))
    http3 = f"    http3_max_concurrent_streams {MAX_CONCURRENT_STREAMS};\n" if h3 else ""
    return f"""# generated by h2lab for page {page.name} ({page.digest})
daemon off;
master_process on;
worker_processes 1;
{ROOTLESS_NO_USER if userns.active() else "user root;"}
pid {d}/nginx.pid;
error_log {d}/nginx-error.log warn;
events {{ worker_connections 8192; }}
http {{
    types {{ }}
    sendfile on;
    tcp_nopush on;  # headers and body in full packets, as production configs do
    tcp_nodelay on;
    gzip off;
    etag off;
    merge_slashes off;
    absolute_redirect off;
    server_tokens off;
    keepalive_requests 100000;
    keepalive_timeout {IDLE_TIMEOUT_S}s;  # not 120 s: see IDLE_TIMEOUT_S
    send_timeout {WRITE_TIMEOUT_S}s;  # not 60 s: see WRITE_TIMEOUT_S
    client_header_timeout {WRITE_TIMEOUT_S}s;  # also a fresh connection's first request
    client_body_timeout {WRITE_TIMEOUT_S}s;
    http2_max_concurrent_streams {MAX_CONCURRENT_STREAMS};
{http3}    ssl_protocols {ctx.tls_protocol};  # the trial's one version
    ssl_session_cache off;
{_tickets(ctx.resumption)}{render_maps(page)}
    access_log {d / REQUEST_LOG} h2lab_request;
{"".join(servers)}
}}
"""


def _tickets(resumption: bool) -> str:
    """TLS session tickets: none (a first view's bytes carry none), or nginx's default for
    the repeat view (ServeContext.resumption; no early data: ``ssl_early_data`` is off by
    default, a user's fragment may turn it on)."""
    if resumption:
        return "    ssl_session_tickets on;  # the repeat view's (ServeContext.resumption)\n"
    return (
        "    ssl_session_tickets off;\n"
        "    ssl_conf_command NumTickets 0;  # OpenSSL sends 2 TLS 1.3 tickets even when off\n"
    )


def _include(fragment: Fragment | None) -> str:
    if fragment is None:
        return ""
    return f"        include {quote_key(str(fragment.path))};  # the user's (conf=)\n"


class Nginx:
    def __init__(self, fragment: Fragment | None = None, build: Build = DEBIAN12) -> None:
        self.fragment = fragment
        self.build = build
        self.name = build.name
        self.protocols = TCP_PROTOCOLS | {H3} if build.h3 else TCP_PROTOCOLS
        self.qlog = False
        self.discoveries: frozenset[str] = frozenset(DISCOVERIES) if build.h3 else FORCED_ONLY

    def version(self) -> str:
        try:
            argv = self.build.argv()
        except debian13.NotInstalled:
            return "not installed"
        found = self.build.program.version(argv) or "unknown"
        return versioned(found, self.fragment)

    def _config(self, page: Page, ctx: ServeContext) -> str:
        ca = LocalCA(ctx.tls_dir)
        return render_config(page, ctx, ca, self.fragment, h3=self.build.h3)

    def check(self) -> None:
        if self.fragment is None:
            return
        with check_setup() as s:
            conf = s.ctx.state_dir / "nginx.conf"
            conf.write_text(self._config(s.page, s.ctx))
            self.fragment.test("nginx -t", [*self.build.argv(), "-t", "-q", "-c", str(conf)])

    @contextmanager
    def serve(self, page: Page, ctx: ServeContext) -> Iterator[Serving]:
        ctx.state_dir.mkdir(parents=True, exist_ok=True)
        # the request log is this run's alone: a server serving next (the origin) keeps none,
        # and must not be read as logging nothing
        request_log = ctx.state_dir / REQUEST_LOG
        request_log.unlink(missing_ok=True)
        conf = ctx.state_dir / "nginx.conf"
        conf.write_text(self._config(page, ctx))
        nginx = self.build.argv()
        procs.run(ctx.exec_argv([*nginx, "-t", "-q", "-c", str(conf)]))
        launch = Launch(
            self.name,
            [*nginx, "-c", str(conf)],
            ctx.state_dir / "nginx.out",
            logs=(ctx.state_dir / "nginx-error.log",),
            program="nginx",
            said=(ctx.state_dir / "nginx-error.log",),
            udp=self.build.h3,
        )
        try:
            with serve_process(ctx, launch, page.origins) as serving:
                yield serving
        finally:
            request_log.unlink(missing_ok=True)


@dataclass(frozen=True)
class Options:
    """``nginx:key=value,...`` (both builds), parsed by the registry."""

    conf: Fragment | None = conf_option(
        "a configuration fragment of the user's, included in h2lab's http block and tested with "
        "nginx -t before any trial (docs/servers.md)"
    )


def _maker(build: Build) -> Callable[[Options], Nginx]:
    return lambda o: Nginx(o.conf, build)


for _build in (DEBIAN12, DEBIAN13):
    register(_build.name, _maker(_build), Options)
