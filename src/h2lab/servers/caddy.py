"""Caddy 2.6 (Debian 13's, :mod:`h2lab.debian13`; ``caddy``) and Caddy 2.11 (built from the Go
module proxy, :mod:`h2lab.servers.caddy_build`; ``caddy@2.11``, which writes qlog): Go's
net/http for HTTP/1.1 and HTTP/2, quic-go for HTTP/3, configured with one generated JSON
document (``caddy.json`` in the state folder) and run in the foreground (``caddy run``).

Per origin address two Caddy servers: one on TCP :443 with TLS (ALPN ``h2``, ``http/1.1``; the
trial's one TLS version) and, with TLS 1.3, HTTP/3 on UDP :443 (Caddy starts QUIC on the
address of a TLS listener; it takes the same TLS configuration, and QUIC is TLS 1.3 only, so
at TLS 1.2 the level offers no h3, which validation refuses there anyway); one cleartext on :80
and :8080 (HTTP/1.1 and h2c with prior knowledge: Caddy 2.6 serves h2c beside HTTP/1.1 on
every address of a server, so :80 also takes prior knowledge, as H2O's does). Each TLS server
presents its origin's certificate whatever the client's SNI (a client of an IP literal sends
none), as nginx's one server block per address does.

Replay as nginx's (:mod:`h2lab.servers.nginx`): three ``map`` handlers pick the resource of a
request (exact method + host + target; closest recorded query, as regexes of query prefixes
longest first; first resource with the same host and path); a route per resource sets its
status, content type and kept headers and serves its body with ``file_server`` from a link in
the state folder (``bodies/r<i>``). A request that matches nothing gets 404 and a line in
``unserved.log``, written when the server stops from Caddy's JSON access log of exactly those
requests (every served route sets ``skip_log``). Caddy keeps no request-length log:
``request_header_bytes`` stays NULL, as behind ``haproxy@3.0``.

What Caddy would do by itself and h2lab turns off: automatic HTTPS (ACME, redirects to
https), the admin endpoint, the autosaved config, TLS session tickets in a first view (no
resumption, as every server of the lab; the repeat view, :attr:`ServeContext.resumption`, has
Caddy's tickets, and with them 0-RTT: Debian's quic-go 0.50 patch sets ``Allow0RTT: true``),
the ``Alt-Svc`` header it adds to every HTTP/1 and HTTP/2 response when it serves h3, and
the ``Etag`` of its file server. Its storage and the XDG folders it would write to are inside
the state folder: it never reaches the network.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from h2lab import debian13, procs, programs
from h2lab.errors import SpecError
from h2lab.pages import Page, Resource
from h2lab.pages.closest import prefix_keys, query_groups
from h2lab.paths import find_build
from h2lab.servers import (
    IDLE_TIMEOUT_S,
    WRITE_TIMEOUT_S,
    ServeContext,
    Serving,
    caddy_build,
    register,
)
from h2lab.servers.process import Launch, serve_process
from h2lab.servers.quic import QLOG_DIR, QlogOnly, QuicLedger
from h2lab.spec.factors import DISCOVERIES
from h2lab.spec.protocols import H1C, H2C, H2S, H3, PORTS, TCP_PROTOCOLS
from h2lab.tls import LocalCA

NAME = "caddy"
NAME_211 = "caddy@2.11"
READY_LINE = "serving initial configuration"
"""What ``caddy run`` logs once every app has started: every listener, TCP and UDP, bound."""
UNSERVED_LOG = "unserved.log"
ACCESS_LOG = "unserved-access.json"
"""Caddy's own access log of the requests no route served (JSON, one object a line)."""
BODIES_DIR = "bodies"
GRACE_PERIOD = "1s"
"""How long a stopping Caddy lets requests in flight finish (its default: forever)."""
_RID = "h2lab_rid"
_NOT_FOUND = {"handler": "static_response", "status_code": 404}


def escape(text: str) -> str:
    """``text`` as a Caddy template that expands to itself: Caddy replaces ``{name}`` in header
    values, paths and outputs (an unknown name by nothing) and reads ``\\{``, ``\\}`` as braces,
    but only in text with an opening brace."""
    if "{" not in text:
        return text
    return text.replace("{", "\\{").replace("}", "\\}")


def go_regex_literal(text: str) -> str:
    """``text`` as an RE2 (Go) pattern matching it literally: ASCII punctuation as ``\\xHH``,
    everything else as it is (RE2's ``\\xHH`` is a code point, not a byte, so the UTF-8 bytes
    of :func:`h2lab.pages.closest.regex_literal` would not match)."""
    return "".join(c if c.isalnum() or not c.isascii() else f"\\x{ord(c):02X}" for c in text)


def _maps(page: Page, host: str) -> list[dict[str, Any]]:
    """The request -> resource maps of one origin, as nginx's (exact, closest query, by path),
    chained by their defaults, then the pick kept in a variable (a map runs again each time
    its placeholder is read)."""
    exact: dict[str, str] = {}
    by_path: dict[str, str] = {}
    for i, r in enumerate(page.resources):
        if r.origin == host:
            exact.setdefault(f"{r.method} {r.origin}{r.target}", str(i))
            by_path.setdefault(f"{r.origin}{unquote(r.path)}", str(i))
    groups = query_groups([(r.method, r.origin, unquote(r.path), r.query) for r in page.resources])
    by_query = []
    for (method, origin, path), recorded in groups.items():
        if origin != host:
            continue
        head = "^" + go_regex_literal(f"{method} {origin}{path}?")
        for prefix, k in prefix_keys([q for q, _ in recorded]):
            by_query.append({"input_regexp": head + go_regex_literal(prefix),
                             "outputs": [str(recorded[k][1])]})  # fmt: skip

    def handler(
        source: str, dest: str, mappings: list[dict[str, Any]], default: str
    ) -> dict[str, Any]:
        return {"handler": "map", "source": source, "destinations": [f"{{{dest}}}"],
                "mappings": mappings, "defaults": [default]}  # fmt: skip

    req = "{http.request.method} {http.request.host}"
    return [
        handler(f"{req}{{http.request.uri}}", "h2lab_exact",
                [{"input": k, "outputs": [v]} for k, v in exact.items()], "{h2lab_query}"),
        handler(f"{req}{{http.request.uri.path}}?{{http.request.uri.query}}", "h2lab_query",
                by_query, "{h2lab_path}"),
        handler("{http.request.host}{http.request.uri.path}", "h2lab_path",
                [{"input": k, "outputs": [v]} for k, v in by_path.items()], ""),
        {"handler": "vars", _RID: "{h2lab_exact}"},
    ]  # fmt: skip


def _resource_route(i: int, res: Resource, bodies: Path) -> dict[str, Any]:
    """The route of resource ``i``: its status, content type and kept headers, and its body."""
    added: dict[str, list[str]] = {}
    for name, value in res.headers:
        if name != "location":
            added.setdefault(name, []).append(escape(value))
    content_type = escape(res.content_type or "application/octet-stream")
    headers: dict[str, Any] = {"set": {"Content-Type": [content_type]}}
    if added:
        headers["add"] = added
    handle: list[dict[str, Any]] = [
        {"handler": "vars", "skip_log": True},
        {"handler": "headers", "response": headers},
    ]
    location = res.header("location")
    if 300 <= res.status < 400 and location is not None:
        handle.append({"handler": "static_response", "status_code": res.status,
                       "headers": {"Location": [escape(location)]}})  # fmt: skip
    elif res.status != 200 or (res.body_sha256 is None and res.size_bytes == 0):
        handle.append({"handler": "static_response", "status_code": res.status})
    else:  # any method, as nginx's error_page 405 =200: Go's ServeContent takes any
        handle += [
            {"handler": "headers", "response": {"delete": ["Etag"], "deferred": True}},
            {"handler": "rewrite", "uri": f"/r{i}"},
            {"handler": "file_server", "root": escape(str(bodies))},
        ]
    return {"match": [{"vars": {_RID: [str(i)]}}], "handle": handle, "terminal": True}


def routes(page: Page, host: str, bodies: Path, alt_svc: bool = False) -> list[dict[str, Any]]:
    """One origin's routes: Caddy's ``Alt-Svc`` removed (kept with ``alt_svc``: Caddy's own,
    ``h3=":443"; ma=2592000``) and the resource picked, the route of each of its resources, and
    404 for anything else (logged: the one route without ``skip_log``)."""
    drop = [] if alt_svc else [{"handler": "headers", "response": {"delete": ["Alt-Svc"]}}]
    pick = [*drop, *_maps(page, host)]
    mine = [_resource_route(i, r, bodies) for i, r in enumerate(page.resources) if r.origin == host]
    internal = {  # the other servers' internal paths: 404 and not logged, as theirs
        "match": [{"path": ["/.h2lab/*"]}],
        "handle": [{"handler": "vars", "skip_log": True}, _NOT_FOUND],
        "terminal": True,
    }
    return [{"handle": pick}, *mine, internal, {"handle": [_NOT_FOUND]}]


def _server(
    listen: list[str], protocols: list[str], routes: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "listen": listen,
        "protocols": protocols,
        "routes": routes,
        "automatic_https": {"disable": True},
        # see WRITE_TIMEOUT_S and IDLE_TIMEOUT_S (Caddy's idle default: 5 min)
        "read_header_timeout": f"{WRITE_TIMEOUT_S}s",
        "read_timeout": f"{WRITE_TIMEOUT_S}s",
        "write_timeout": f"{WRITE_TIMEOUT_S}s",
        "idle_timeout": f"{IDLE_TIMEOUT_S}s",
        "logs": {"default_logger_name": "unserved"},
    }


def render_config(page: Page, ctx: ServeContext, ca: LocalCA) -> dict[str, Any]:
    """Pure except for certificate creation: Caddy's JSON configuration."""
    if any(r.delay_ms for r in page.resources):
        raise SpecError(page.name, "server", "caddy cannot delay responses (use server origin)")
    d = ctx.state_dir
    tls_version = f"tls{ctx.tls_version}"
    servers: dict[str, Any] = {}
    certificates = []
    for k, host in enumerate(page.origins, start=1):
        ip = ctx.origin_ips[host]
        pair = ca.leaf(host)
        certificates.append({"certificate": str(pair.cert), "key": str(pair.key), "tags": [host]})
        mine = routes(page, host, d / BODIES_DIR, host in ctx.alt_svc)
        tls = _server([f"{ip}:{PORTS[H2S]}"], ["h1", "h2"], mine)
        if ctx.tls_version == "1.3":  # QUIC is TLS 1.3 (RFC 9001); Caddy's QUIC takes this TLS
            tls["protocols"].append("h3")
        tls["tls_connection_policies"] = [{
            "certificate_selection": {"any_tag": [host]},
            "protocol_min": tls_version,
            "protocol_max": tls_version,
        }]  # fmt: skip
        servers[f"o{k}-tls"] = tls
        cleartext = [f"{ip}:{PORTS[H1C]}", f"{ip}:{PORTS[H2C]}"]
        servers[f"o{k}-cleartext"] = _server(cleartext, ["h1", "h2c"], mine)
    return {
        "admin": {"disabled": True, "config": {"persist": False}},
        "storage": {"module": "file_system", "root": str(d / "caddy-data")},
        "logging": {
            "logs": {
                "default": {"level": "INFO", "exclude": ["http.log.access"]},
                "unserved": {
                    "writer": {"output": "file", "filename": str(d / ACCESS_LOG), "roll": False},
                    "encoder": {"format": "json"},
                    "include": ["http.log.access.unserved"],
                },
            }
        },
        "apps": {
            "http": {"grace_period": GRACE_PERIOD, "servers": servers},
            "tls": {
                "certificates": {"load_files": certificates},
                # none for a first view; Caddy's (and with them 0-RTT) for the repeat view
                "session_tickets": {"disabled": not ctx.resumption},
            },
        },
    }


def unserved_lines(access_log: str) -> list[str]:
    """Caddy's JSON access log of unserved requests as ``unserved.log``'s lines (nginx's
    ``METHOD scheme://host/target``)."""
    lines = []
    for text in access_log.splitlines():
        try:
            req = json.loads(text)["request"]
        except (ValueError, KeyError, TypeError):
            continue
        scheme = "https" if req.get("tls") else "http"
        lines.append(f"{req.get('method')} {scheme}://{req.get('host')}{req.get('uri')}")
    return lines


def _link_bodies(page: Page, bodies: Path) -> None:
    """``bodies/r<i>`` -> the body file of resource ``i`` (dangling for one without a body: no
    route serves it)."""
    bodies.mkdir(parents=True, exist_ok=True)
    for old in bodies.iterdir():
        old.unlink()
    for i, res in enumerate(page.resources):
        (bodies / f"r{i}").symlink_to(page.body_file(res))


class Caddy:
    """Debian 13's Caddy 2.6 (``caddy``)."""

    name = NAME
    protocols = TCP_PROTOCOLS | {H3}
    discoveries: frozenset[str] = frozenset(DISCOVERIES)
    qlog = False

    def version(self) -> str:
        return debian13.versions().get("caddy", "not installed")

    def check(self) -> None:
        """Nothing to check: Caddy's configuration is h2lab's alone (no ``conf=``)."""

    def argv(self) -> list[str]:
        """How to run it (its arguments follow)."""
        return debian13.argv("caddy")

    def quic(self, state_dir: Path) -> QuicLedger | None:
        """What the trial reads of its QUIC connections (none: 2.6 tells nothing)."""
        return None

    @contextmanager
    def serve(self, page: Page, ctx: ServeContext) -> Iterator[Serving]:
        d = ctx.state_dir
        d.mkdir(parents=True, exist_ok=True)
        for log in (d / ACCESS_LOG, d / UNSERVED_LOG):
            log.unlink(missing_ok=True)
        _link_bodies(page, d / BODIES_DIR)
        conf = d / "caddy.json"
        conf.write_text(json.dumps(render_config(page, ctx, LocalCA(ctx.tls_dir)), indent=1))
        # Caddy's folders for data and config, should it look at them: the state folder's
        env = ["env", f"HOME={d}", f"XDG_DATA_HOME={d}", f"XDG_CONFIG_HOME={d}"]
        if self.qlog and ctx.qlog:
            (d / QLOG_DIR).mkdir(exist_ok=True)
            env.append(f"QLOGDIR={d / QLOG_DIR}")  # quic-go's qlog, one file per connection
        caddy = [*env, *self.argv()]
        procs.run(ctx.exec_argv([*caddy, "validate", "--config", str(conf)]))
        argv = [*caddy, "run", "--config", str(conf)]
        # Caddy starts QUIC on a TLS listener only at TLS 1.3 (render_config)
        h3 = ctx.tls_version == "1.3"
        launch = Launch(self.name, argv, d / "caddy.out", udp=h3, ready_line=READY_LINE)
        try:
            with serve_process(ctx, launch, page.origins) as serving:
                yield Serving(*serving.watched, quic=self.quic(d) if ctx.qlog else None)
        finally:
            access = d / ACCESS_LOG
            said = access.read_text(errors="replace") if access.exists() else ""
            (d / UNSERVED_LOG).write_text("".join(f"{x}\n" for x in unserved_lines(said)))


class Caddy211(Caddy):
    """Caddy 2.11, built from the Go module proxy (:mod:`h2lab.servers.caddy_build`): the same
    configuration, and a qlog file per QUIC connection (quic-go 0.63's, ``QLOGDIR``) with
    ``capture = ["qlog"]``. It tells no counts: its files are flushed as each connection
    closes, so a client that keeps its connection open past the trial (a browser) leaves the
    file to be completed later, in the trial's folder."""

    name = NAME_211
    qlog = True

    def version(self) -> str:
        built = find_build(f"{caddy_build.folder_name()}/{caddy_build.BINARY}")
        if built is None:
            return "not built"
        return programs.CADDY_211.version([str(built)]) or "built, no version answered"

    def argv(self) -> list[str]:
        return [str(caddy_build.ensure_built())]

    def quic(self, state_dir: Path) -> QuicLedger | None:
        return QlogOnly(state_dir)


register(NAME, lambda _: Caddy())
register(NAME_211, lambda _: Caddy211())
