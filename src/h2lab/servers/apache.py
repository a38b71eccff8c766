"""Apache httpd 2.4 (Debian ``apache2``: mpm_event, mod_http2, mod_ssl): one generated config
per lab, three virtual hosts per origin.

Listens per origin address: h1c on :80 (``Protocols http/1.1``), h1s/h2s on :443 (``Protocols
h2 http/1.1``, ALPN picks), h2c with prior knowledge on :8080 (``Protocols h2c http/1.1``,
``H2Direct on``). TLS is the trial's one version (``SSLProtocol -all +TLSv1.x``, from
:attr:`ServeContext.tls_version`), with OpenSSL's default TLS 1.2 suites (no ``SSLCipherSuite``
here), ECDHE-ECDSA-AES128-GCM-SHA256 among them. One child process (as nginx's one worker),
compression off (mod_deflate not loaded), no ETag, caching headers left alone, push off unless
asked (mod_http2 would otherwise push every ``Link: rel=preload`` it sees, which nginx does
not).

Options (``apache:push=critical-css``, ``apache:early_hints=css-js``), seed 000 Fig. 6 (which
used Apache): ``push`` and ``early_hints`` = ``none`` (default) or a rule of
:mod:`h2lab.servers.rules` (``critical-css``, ``css-js``, ``images``, ``all``: resources of the
entry's origin). Push: ``H2Push on`` (mod_http2 honours it per server, not per location, so a
recorded ``Link: rel=preload`` is then pushed too, as with H2O's rules) and one
``H2PushResource`` per resource in the entry's ``<Location>``. Early Hints: one ``H2EarlyHint
Link "</path>; rel=preload; as=..."`` per resource there and ``H2EarlyHints on`` (server level
only) for a 103 before the HTML (HTTP/2 only); with push on too, the 103 also names the pushed
resources (mod_http2 adds them).

Option ``apache:conf=FILE`` (:mod:`h2lab.servers.fragment`): the user's directives, an
``Include`` at server level after h2lab's server-level directives (so a directive given once per
server, ``H2WindowSize``, ``EnableSendfile``, ``Timeout``, replaces h2lab's; the virtual hosts
inherit them). Checked with ``apache2 -t`` before any trial.

Every page is served from its manifest, the way a replay proxy does (docs/pages.md, "Replay"):
mod_rewrite looks the request up in two ``txt:`` RewriteMaps, the exact method + host + request
target first (the raw target, from ``THE_REQUEST``), then the closest recorded query for that
method, host and path (one ``RewriteCond`` per query prefix, longest first, on ``THE_REQUEST``,
:mod:`h2lab.pages.closest`), then the first recorded resource with the same host and path, and
passes it to an internal ``<Location>`` per resource under
``/.h2lab/<token>/``, which carries the body (``Alias``), content type (``ForceType``) and kept
headers (``Header always add``); redirects and bodiless statuses are ``Redirect <status>``. A
request that matches nothing gets 404 and a line in ``unserved.log`` in the server's state folder.

Apache will not serve as root (its workers run as ``www-data``) and h2lab's page store is under
root's private home, so the bodies a page uses are copied into the server's state folder.
Two limits of this replay: a recorded non-GET 200 with a body gets 405 from Apache's static
file handler, and a request target with white space cannot be a ``txt:`` map key (such a
resource is reached by path only).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from h2lab import procs, programs
from h2lab.errors import SpecError
from h2lab.net import userns
from h2lab.pages import Page, Resource
from h2lab.pages.closest import prefix_keys, query_groups, regex_literal
from h2lab.servers import (
    FORCED_ONLY,
    IDLE_TIMEOUT_S,
    ROOTLESS_NO_USER,
    WRITE_TIMEOUT_S,
    ServeContext,
    Serving,
    register,
)
from h2lab.servers.fragment import Fragment, check_setup, conf_option, versioned
from h2lab.servers.process import Launch, serve_process
from h2lab.servers.rules import RULES, preload_link, select
from h2lab.spec.options import choice, option
from h2lab.spec.protocols import H1C, H2C, H2S, PORTS, TCP_PROTOCOLS
from h2lab.tls import LocalCA

WORKERS_USER = "User www-data\nGroup www-data"
"""Root mode's (Apache will not serve as root); rootless mode runs Apache as the user."""
# As nginx's MAX_CONCURRENT_STREAMS (mod_http2's default H2MaxSessionStreams is 100).
MAX_CONCURRENT_STREAMS = 1000
# Connections served at once by the one child; mod_http2 adds its own workers for streams.
THREADS = 64
UNSERVED_LOG = "unserved.log"
BODIES = "apache-bodies"
EXACT_MAP = "apache-exact.map"
PATH_MAP = "apache-path.map"
MODULES = Path("/usr/lib/apache2/modules")
_MODULES = ("mpm_event", "authz_core", "mime", "alias", "rewrite", "headers", "ssl", "http2")
_INTERNAL = "/.h2lab/"
_EMPTY = "empty"


def quote(text: str) -> str:
    """A double-quoted Apache argument with no ``${VAR}`` expansion (``$`` comes from a Define
    holding a dollar sign, as nginx's quote does) and no ``%`` format (``%%``)."""
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("$", "${h2lab_dollar}")
    return f'"{text}"'


def header_value(text: str) -> str:
    """A ``Header`` value: ``%`` starts a format specifier there."""
    return quote(text.replace("%", "%%"))


def body_name(res: Resource, i: int) -> str:
    """The body's file name in the copy Apache serves from."""
    if res.body_sha256 is not None:
        return res.body_sha256
    return f"r{i}" if res.size_bytes > 0 else _EMPTY


def _redirect(res: Resource) -> bool:
    return 300 <= res.status < 400 and res.header("location") is not None


def render_maps(page: Page) -> tuple[str, str]:
    """The ``txt:`` RewriteMaps (exact, by path): ``METHOD:host+target`` and ``host+path`` ->
    resource index (``|`` would start a lookup's default value). Keys cannot hold white space;
    such targets are left out."""
    exact: dict[str, int] = {}
    by_path: dict[str, int] = {}
    for i, r in enumerate(page.resources):
        exact.setdefault(f"{r.method}:{r.origin}{r.target}", i)
        by_path.setdefault(f"{r.origin}{r.path}", i)

    def text(m: dict[str, int]) -> str:
        return "".join(f"{k} {i}\n" for k, i in m.items() if not re.search(r"\s", k))

    return text(exact), text(by_path)


def _alias(i: int, res: Resource, token: str, bodies: Path) -> str:
    """Server level: a ``<Location>``'s own Alias is not seen after mod_rewrite's PT (the
    location walk that mod_alias uses ran on the request's URI)."""
    return f'Alias "{_INTERNAL}{token}/r{i}" {quote(str(bodies / body_name(res, i)))}'


def _location(i: int, res: Resource, token: str, extra: tuple[str, ...] = ()) -> str:
    lines = [f'<Location "{_INTERNAL}{token}/r{i}">', *extra]
    for name, value in res.headers:
        if name != "location":
            lines.append(f"    Header always add {name} {header_value(value)}")
    location = res.header("location")
    if _redirect(res) and location is not None:
        lines.append(f"    Redirect {res.status} {quote(location)}")
    elif res.status != 200:
        lines.append(f"    Redirect {res.status}")
    else:
        lines.append(f"    ForceType {quote(res.content_type or 'application/octet-stream')}")
    lines.append("</Location>")
    return "\n".join(lines)


def _query_rules(page: Page, host: str, token: str) -> str:
    """Closest query (:mod:`h2lab.pages.closest`) for ``host``'s virtual hosts: per group of
    recorded queries, one rule per prefix, longest first, on the raw request line."""
    groups = query_groups([(r.method, r.origin, r.path, r.query) for r in page.resources])
    lines = []
    for (method, origin, path), recorded in groups.items():
        if origin != host:
            continue
        for prefix, k in prefix_keys([q for q, _ in recorded]):
            line = (
                regex_literal(f"{method} {path}?{prefix}")
                if prefix
                else (regex_literal(f"{method} {path}") + r"(\x3F|\x20)")
            )
            lines.append(f'    RewriteCond %{{THE_REQUEST}} "^{line}"')
            lines.append(f'    RewriteRule ^ "{_INTERNAL}{token}/r{recorded[k][1]}" [PT,L]')
    return "".join(f"{line}\n" for line in lines)


def _rules(d: Path, token: str, scheme: str, near: str = "") -> str:
    """mod_rewrite rules of one virtual host: exact, then ``near`` (:func:`_query_rules`),
    then by path, else 404 and a log line."""
    to = f'"{_INTERNAL}{token}/r%1" [PT,L]'
    host = "${h2lab_lc:%{SERVER_NAME}}"
    logged = "%{h2lab_host}e%{h2lab_target}e"
    return f"""    RewriteEngine On
    RewriteMap h2lab_exact "txt:{d / EXACT_MAP}"
    RewriteMap h2lab_path "txt:{d / PATH_MAP}"
    RewriteMap h2lab_lc int:tolower
    RewriteRule "^/\\.h2lab/" - [R=404,L]
    RewriteCond %{{THE_REQUEST}} "^\\S+ (\\S+)"
    RewriteCond "${{h2lab_exact:%{{REQUEST_METHOD}}:{host}%1}}" "^(\\d+)$"
    RewriteRule ^ {to}
{near}    RewriteCond %{{THE_REQUEST}} "^\\S+ ([^?\\s]+)"
    RewriteCond "${{h2lab_path:{host}%1}}" "^(\\d+)$"
    RewriteRule ^ {to}
    RewriteCond %{{THE_REQUEST}} "^\\S+ (\\S+)"
    RewriteRule ^ - [E=h2lab_target:%1,E=h2lab_host:{host},R=404,L]
    CustomLog "{d / UNSERVED_LOG}" "%m {scheme}://{logged}" env=h2lab_target"""


def _entry_directives(page: Page, push: str, hints: str) -> tuple[str, ...]:
    """Push and Early Hints directives of the entry's ``<Location>``."""
    lines = [f"    H2PushResource {quote(r.target)}" for r in select(page, push)]
    lines += [f"    H2EarlyHint Link {quote(preload_link(r))}" for r in select(page, hints)]
    return tuple(lines)


def _virtual_hosts(
    page: Page, ctx: ServeContext, ca: LocalCA, token: str
) -> tuple[list[str], list[str]]:
    """The ``Listen`` lines and ``<VirtualHost>`` blocks: every origin on its h1c, h2c and
    TLS (h1s/h2s) ports."""
    listen = []
    vhosts = []
    for host in page.origins:
        ip = ctx.origin_ips[host]
        pair = ca.leaf(host)
        near = _query_rules(page, host, token)
        for proto, port, extra in (
            ("http/1.1", PORTS[H1C], ""),
            ("h2c http/1.1", PORTS[H2C], "    H2Direct on\n"),
            ("h2 http/1.1", PORTS[H2S], ""),
        ):
            listen.append(f"Listen {ip}:{port}")
            tls = ""
            if port == PORTS[H2S]:
                tls = (
                    f"    SSLEngine on\n    SSLCertificateFile {quote(str(pair.cert))}\n"
                    f"    SSLCertificateKeyFile {quote(str(pair.key))}\n"
                )
            scheme = "https" if tls else "http"
            vhosts.append(
                f"""<VirtualHost {ip}:{port}>
    ServerName {host}
    Protocols {proto}
{extra}{tls}{_rules(ctx.state_dir, token, scheme, near)}
</VirtualHost>"""
            )
    return listen, vhosts


def render_config(
    page: Page,
    ctx: ServeContext,
    ca: LocalCA,
    token: str,
    push: str = "none",
    hints: str = "none",
    fragment: Fragment | None = None,
) -> str:
    """Pure except for certificate creation: the apache2.conf text. ``token`` names the folder
    of the internal per-resource locations; the bodies are in ``<state>/apache-bodies``;
    ``push`` and ``hints`` are rules of :mod:`h2lab.servers.rules` (or ``none``); ``fragment``
    is included after h2lab's server-level directives."""
    d = ctx.state_dir
    if any(r.delay_ms for r in page.resources):
        raise SpecError(page.name, "server", "apache cannot delay responses (use server origin)")
    bodies = d / BODIES
    listen, vhosts = _virtual_hosts(page, ctx, ca, token)
    locations = "\n".join(
        [_alias(i, r, token, bodies) for i, r in enumerate(page.resources) if r.status == 200]
        + [
            _location(i, r, token, _entry_directives(page, push, hints) if r is page.entry else ())
            for i, r in enumerate(page.resources)
        ]
    )
    modules = "\n".join(f"LoadModule {m}_module {MODULES / f'mod_{m}.so'}" for m in _MODULES)
    return f"""# generated by h2lab for page {page.name} ({page.digest})
ServerRoot {quote(str(d))}
DefaultRuntimeDir {quote(str(d))}
PidFile {quote(str(d / "apache.pid"))}
ErrorLog {quote(str(d / "apache-error.log"))}
LogLevel warn
Mutex file:{d} default
Define h2lab_dollar $
{modules}
{ROOTLESS_NO_USER if userns.active() else WORKERS_USER}
ServerName h2lab
ServerTokens Prod
ServerSignature Off
UseCanonicalName Off
StartServers 1
ServerLimit 1
ThreadLimit {THREADS}
ThreadsPerChild {THREADS}
MaxRequestWorkers {THREADS}
MinSpareThreads 1
MaxSpareThreads {THREADS}
MaxConnectionsPerChild 0
KeepAlive On
MaxKeepAliveRequests 0
KeepAliveTimeout {IDLE_TIMEOUT_S}
Timeout {WRITE_TIMEOUT_S}
# Apache's default and Debian's (h2 over TLS never uses sendfile; docs/servers.md)
EnableSendfile Off
FileETag None
TypesConfig /dev/null
H2MaxSessionStreams {MAX_CONCURRENT_STREAMS}
H2Push {"off" if push == "none" else "on"}
H2EarlyHints {"off" if hints == "none" else "on"}
SSLProtocol -all +{ctx.tls_protocol}
SSLSessionCache none
SSLSessionTickets off
SSLOpenSSLConfCmd NumTickets 0
{_include(fragment)}<Location "/">
    Require all granted
</Location>
{chr(10).join(listen)}
{chr(10).join(vhosts)}
{locations}
"""


def _include(fragment: Fragment | None) -> str:
    if fragment is None:
        return ""
    return f"# the user's (conf=)\nInclude {quote(str(fragment.path))}\n"


def copy_bodies(page: Page, bodies: Path) -> None:
    """The bodies the page uses, readable by Apache's workers (hard links where possible)."""
    bodies.mkdir(parents=True, exist_ok=True)
    bodies.chmod(0o755)
    (bodies / _EMPTY).touch()
    for i, r in enumerate(page.resources):
        dst = bodies / body_name(r, i)
        if dst.exists() or (r.body_sha256 is None and r.size_bytes == 0):
            continue
        src = page.body_file(r)
        try:
            if not src.stat().st_mode & 0o004:
                raise PermissionError(src)  # a link shares the mode: copy instead
            os.link(src, dst)
        except OSError:
            shutil.copyfile(src, dst)
            dst.chmod(0o644)


class Apache:
    name = "apache"
    protocols = TCP_PROTOCOLS
    discoveries = FORCED_ONLY
    qlog = False

    def __init__(
        self, push: str = "none", early_hints: str = "none", fragment: Fragment | None = None
    ) -> None:
        self.push = push
        self.early_hints = early_hints
        self.fragment = fragment

    def version(self) -> str:
        found = programs.APACHE.version() or "unknown"
        return versioned(found, self.fragment)

    def check(self) -> None:
        if self.fragment is None:
            return
        with check_setup() as s:
            conf = self._write(s.page, s.ctx)
            self.fragment.test("apache2 -t", ["apache2", "-t", "-f", str(conf)])

    def _write(self, page: Page, ctx: ServeContext) -> Path:
        """Bodies, maps and apache2.conf into the state folder; the config's path."""
        d = ctx.state_dir
        d.mkdir(parents=True, exist_ok=True)
        d.chmod(0o755)
        copy_bodies(page, d / BODIES)
        exact, by_path = render_maps(page)
        (d / EXACT_MAP).write_text(exact)
        (d / PATH_MAP).write_text(by_path)
        (d / UNSERVED_LOG).touch()
        conf = d / "apache2.conf"
        token = secrets.token_hex(8)
        ca = LocalCA(ctx.tls_dir)
        hints = self.early_hints
        conf.write_text(render_config(page, ctx, ca, token, self.push, hints, self.fragment))
        return conf

    @contextmanager
    def serve(self, page: Page, ctx: ServeContext) -> Iterator[Serving]:
        d = ctx.state_dir
        conf = self._write(page, ctx)
        procs.run(ctx.exec_argv(["apache2", "-t", "-f", str(conf)]))
        launch = Launch(
            "apache2",
            ["apache2", "-f", str(conf), "-DFOREGROUND"],
            d / "apache.out",
            logs=(d / "apache-error.log",),
        )
        with serve_process(ctx, launch, page.origins) as serving:
            yield serving


@dataclass(frozen=True)
class Options:
    """``apache:key=value,...``, parsed by the registry."""

    push: str = option(
        choice("none", *RULES),
        "none",
        "resources pushed with the page (mod_http2's H2PushResource), by rule",
        "push=css-js",
    )
    early_hints: str = option(
        choice("none", *RULES),
        "none",
        "resources announced in a 103 Early Hints response (H2EarlyHint), by rule",
        "early_hints=critical-css",
    )
    conf: Fragment | None = conf_option()


register("apache", lambda o: Apache(o.push, o.early_hints, o.conf), Options)
