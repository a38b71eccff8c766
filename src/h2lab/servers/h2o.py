"""H2O (Debian ``h2o`` 2.2, built with mruby): one generated config per lab, one host per origin.

Listens per origin address: h1c on :80, h1s/h2s on :443 (ALPN picks http/1.1 or h2), h2c with
prior knowledge on :8080. TLS is the trial's one version (:attr:`ServeContext.tls_version`:
H2O's ``minimum-version`` and OpenSSL's ``MaxProtocol``, see :func:`openssl_conf`), with
OpenSSL's default TLS 1.2 suites (no ``cipher-suite`` here), ECDHE-ECDSA-AES128-GCM-SHA256 among
them. H2O 2.2 takes h2c prior knowledge only when ``http1-upgrade-to-http2`` is ON, a global
switch, so its :80 also accepts ``Upgrade: h2c`` and prior knowledge (no client of h2lab asks
for either there). Compression off (H2O's default), no etag, caching headers left alone, push
off unless asked (H2O would otherwise push every ``Link: rel=preload`` it sees, which nginx does
not).

Every page is served from its manifest, the way a replay proxy does (docs/pages.md, "Replay"):
an mruby handler on ``/`` picks the resource for a request, the exact method + host + request
target first, then the closest recorded query for that method, host and path (longest common
prefix, :mod:`h2lab.pages.closest`), then the first recorded resource with the same host and
path; a 200 with a body
is then served by H2O's file handler through an internal redirect (``X-Reproxy-URL``) to a
per-resource path under ``/.h2lab/<token>/``, which carries the content type and kept headers;
redirects, bodiless statuses and other methods are answered by the handler itself. A request
that matches nothing gets 404 and a line in ``unserved.log`` in the server's state folder.

Options (``h2o:push=css-js``): ``push`` = ``none`` (default), ``preload`` (push what the
manifest's own ``Link: rel=preload`` headers name), or a rule that adds preload links to the
entry document for resources of its origin: ``critical-css`` (the first stylesheet), ``css-js``,
``images``, ``all``.

Option ``h2o:conf=FILE`` (:mod:`h2lab.servers.fragment`): a YAML mapping of the user's, merged
into the global level (``<<: !file FILE``, which H2O 2.2 reads), where H2O's path-level
directives (``header.add``, ``file.*``) are inherited by every host and path; a key it sets
replaces h2lab's own global setting of that key (``num-threads``, ``http2-*``, ...). It may not
set ``hosts`` (h2lab's). Checked with ``h2o -t`` before any trial.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from h2lab import procs, programs
from h2lab.errors import SpecError
from h2lab.net import userns
from h2lab.pages import Page, Resource
from h2lab.pages.closest import query_groups
from h2lab.servers import (
    FORCED_ONLY,
    IDLE_TIMEOUT_S,
    WRITE_TIMEOUT_S,
    ServeContext,
    Serving,
    register,
)
from h2lab.servers.fragment import Fragment, check_setup, conf_option, versioned
from h2lab.servers.process import Launch, serve_process
from h2lab.servers.rules import RULES, select
from h2lab.spec.options import choice, option
from h2lab.spec.protocols import H1C, H2C, H2S, PORTS, TCP_PROTOCOLS
from h2lab.tls import LocalCA

# Streams a connection may have open at once, as nginx's MAX_CONCURRENT_STREAMS (H2O's default
# is 100; it queues requests beyond it rather than refusing them).
MAX_CONCURRENT_STREAMS = 1000
UNSERVED_LOG = "unserved.log"
APP_FILE = "h2o-replay.rb"
OPENSSL_CONF = "h2o-openssl.cnf"
_INTERNAL = "/.h2lab/"
PUSH_RULES = ("none", "preload", *RULES)
_BODILESS = frozenset({204, 304})


def openssl_conf(tls_protocol: str) -> str:
    """The OpenSSL configuration H2O runs with (``OPENSSL_CONF``), for TLS version
    ``tls_protocol`` (``TLSv1.2``). H2O 2.2 predates TLS 1.3, which OpenSSL 3 does for it: its
    ssl-session-resumption leaves OpenSSL sending two TLS 1.3 tickets after every handshake
    (nginx turns them off with NumTickets 0, so does this config), and its own
    ``maximum-version`` does not stop OpenSSL's TLS 1.3 (with ``maximum-version: TLSv1.2`` it
    still completed ``openssl s_client -tls1_3``), so the highest version is set here; the
    lowest is H2O's ``minimum-version``."""
    return f"""openssl_conf = h2lab
[h2lab]
ssl_conf = h2lab_ssl
[h2lab_ssl]
system_default = h2lab_tls
[h2lab_tls]
NumTickets = 0
MaxProtocol = {tls_protocol}
"""


def yaml_str(text: str) -> str:
    """A double-quoted YAML scalar (JSON's escapes are YAML's; H2O interpolates nothing)."""
    return json.dumps(text)


def ruby_str(text: str) -> str:
    """A single-quoted Ruby literal: no interpolation; only ``\\`` and ``'`` are escaped."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _headers(page: Page, i: int, res: Resource, push: str) -> list[tuple[str, str]]:
    """Response headers of resource ``i``: the kept ones, plus preload links on the entry."""
    headers = list(res.headers)
    if i == page.entry_index and push not in ("none", "preload"):
        headers += [("link", f"<{r.target}>; rel=preload") for r in select(page, push)]
    return headers


def _push_links(page: Page, i: int, res: Resource, push: str) -> list[str]:
    """``Link`` values H2O is to push from for resource ``i``: with ``preload`` the recorded
    ones, with a rule the ones it adds to the entry."""
    if push == "none":
        return []
    if push == "preload":
        return [v for k, v in res.headers if k == "link"]
    return [v for k, v in _headers(page, i, res, push)[len(res.headers) :] if k == "link"]


def _has_body(res: Resource) -> bool:
    return res.body_sha256 is not None or res.size_bytes > 0


def _file_served(res: Resource) -> bool:
    """Served by H2O's file handler (the rest is answered by the mruby handler)."""
    return res.status == 200 and res.method == "GET" and _has_body(res)


def _internal_path(token: str, i: int) -> str:
    return f"{_INTERNAL}{token}/r{i}"


def render_app(page: Page, token: str, unserved_log: str, push: str = "none") -> str:
    """The mruby replay handler (Rack): request -> resource, exact first, then by closest
    query (:mod:`h2lab.pages.closest`), then by path."""
    exact: dict[str, int] = {}
    by_path: dict[str, int] = {}
    for i, r in enumerate(page.resources):
        exact.setdefault(f"{r.method} {r.origin}{r.target}", i)
        by_path.setdefault(f"{r.origin}{r.path}", i)
    groups = query_groups([(r.method, r.origin, r.path, r.query) for r in page.resources])
    by_query = {f"{m} {h}{p}": v for (m, h, p), v in groups.items()}
    responses = [_ruby_response(page, i, r, token, push) for i, r in enumerate(page.resources)]
    return (
        f"""# generated by h2lab for page {page.name} ({page.digest})
EXACT = {{{_ruby_table(exact)}
}}
BY_QUERY = {{{_ruby_queries(by_query)}
}}
BY_PATH = {{{_ruby_table(by_path)}
}}
RESPONSES = [
{chr(10).join(responses)}
]
UNSERVED = {ruby_str(unserved_log)}
INTERNAL = {ruby_str(_INTERNAL)}

"""
        + _HANDLER_RB
    )


def _ruby_response(page: Page, i: int, r: Resource, token: str, push: str) -> str:
    """Resource ``i``'s entry of the handler's ``RESPONSES``: reproxied to H2O's file handler
    (with its push links), or answered by the handler with its status, headers and body."""
    if _file_served(r):
        links = ", ".join(_push_links(page, i, r, push))
        link = ruby_str(links) if links else "nil"
        return f"  [:reproxy, {ruby_str(_internal_path(token, i))}, {link}],"
    headers: dict[str, list[str]] = {}
    if r.status not in _BODILESS:
        headers["content-type"] = [r.content_type or "application/octet-stream"]
    for name, value in _headers(page, i, r, push):
        headers.setdefault(name, []).append(value)
    pairs = ", ".join(f"{ruby_str(k)} => {ruby_str(chr(10).join(v))}" for k, v in headers.items())
    body = "nil"
    if r.status not in _BODILESS and _has_body(r):
        body = ruby_str(str(page.body_file(r)))
    return f"  [:respond, {r.status}, {{{pairs}}}, {body}],"


def _ruby_table(m: dict[str, int]) -> str:
    return "".join(f"\n  {ruby_str(k)} => {i}," for k, i in m.items())


def _ruby_queries(m: dict[str, list[tuple[str, int]]]) -> str:
    def pairs(qs: list[tuple[str, int]]) -> str:
        return ", ".join(f"[{ruby_str(q)}, {i}]" for q, i in qs)

    return "".join(f"\n  {ruby_str(k)} => [{pairs(v)}]," for k, v in m.items())


_HANDLER_RB = """lambda do |env|
  method = env["REQUEST_METHOD"]
  host = (env["HTTP_HOST"] || env["SERVER_NAME"]).downcase
  colon = host.index(":")
  host = host[0, colon] if colon
  path = env["PATH_INFO"]
  query = env["QUERY_STRING"]
  target = (query.nil? || query.empty?) ? path : path + "?" + query
  rid = EXACT[method + " " + host + target]
  same = rid.nil? ? BY_QUERY[method + " " + host + path] : nil
  if same
    q = query || ""
    best_len = -1
    same.each do |recorded, i|
      n = 0
      n += 1 while n < recorded.length && n < q.length && recorded[n] == q[n]
      rid, best_len = i, n if n > best_len
    end
  end
  rid ||= BY_PATH[host + path]
  if rid.nil? || path.start_with?(INTERNAL)
    unless path.start_with?(INTERNAL)
      File.open(UNSERVED, "a") do |f|
        f.write(method + " " + env["rack.url_scheme"] + "://" + host + target + "\\n")
      end
    end
    return [404, {"content-type" => "text/plain", "content-length" => "0"}, []]
  end
  response = RESPONSES[rid]
  if response[0] == :reproxy
    # H2O pushes the preload links of the handler's own response, not those that header.add
    # puts on the file handler's (which still carries them, as the final response).
    return [200, {"x-reproxy-url" => response[1]}, []] if response[2].nil?
    return [200, {"x-reproxy-url" => response[1], "link" => response[2]}, []]
  end
  status, headers, body_file = response[1], response[2], response[3]
  headers = headers.dup
  if body_file.nil?
    headers["content-length"] = "0" unless status == 204 || status == 304
    return [status, headers, []]
  end
  body = File.open(body_file, "rb") { |f| f.read }
  headers["content-length"] = body.bytesize.to_s
  [status, headers, [body]]
end
"""
"""The handler itself (Rack), after the tables :func:`render_app` writes for the page."""


def _file_path(i: int, res: Resource, page: Page, token: str, push: str) -> str:
    lines = [
        f"{_internal_path(token, i)}:",
        f"  file.file: {yaml_str(str(page.body_file(res)))}",
        "  file.etag: OFF",
        "  file.mime.settypes: {}",
        f"  file.mime.setdefaulttype: {yaml_str(res.content_type or 'application/octet-stream')}",
    ]
    # H2O's YAML reader takes a directive more than once; header.add takes no list in 2.2.
    lines += [f"  header.add: {yaml_str(f'{k}: {v}')}" for k, v in _headers(page, i, res, push)]
    return "\n        ".join(lines)


TOP_KEY = re.compile(r"^([A-Za-z0-9_.-]+)\s*:", re.M)


def fragment_keys(fragment: Fragment) -> set[str]:
    """The top-level keys of a YAML block mapping (lines that start with ``key:``); a
    fragment that sets ``hosts`` is a SpecError (the hosts are h2lab's)."""
    keys = set(TOP_KEY.findall(fragment.path.read_text(errors="replace")))
    if "hosts" in keys:
        raise SpecError(fragment.path, "hosts", "h2lab writes the hosts; set global keys only")
    return keys


def _globals(ctx: ServeContext, push: str, fragment: Fragment | None) -> str:
    """The global settings, less those ``fragment`` sets, then the fragment's merge key."""
    d = ctx.state_dir
    # rootless mode runs h2o as the user, who has no other user to switch to
    settings = [] if userns.active() else [("user", "root")]
    settings += [
        ("pid-file", yaml_str(str(d / "h2o.pid"))),
        ("error-log", yaml_str(str(d / "h2o-error.log"))),
        ("num-threads", "1  # as nginx's worker_processes 1"),
        ("max-connections", "8192"),
        ("http1-request-timeout", f"{WRITE_TIMEOUT_S}  # also a fresh connection's first request"),
        ("handshake-timeout", f"{WRITE_TIMEOUT_S}  # TLS (H2O's default is 10 s)"),
        ("http2-idle-timeout", str(IDLE_TIMEOUT_S)),
        ("http1-upgrade-to-http2", "ON  # H2O 2.2 takes h2c prior knowledge only with this on"),
        ("http2-max-concurrent-requests-per-connection", str(MAX_CONCURRENT_STREAMS)),
        ("http2-push-preload", "OFF" if push == "none" else "ON"),
        ("http2-casper", "OFF"),
        ("reproxy", "ON"),
        ("send-server-name", "OFF"),
        ("ssl-session-resumption", "\n  mode: off"),
    ]
    mine = fragment_keys(fragment) if fragment else set()
    lines = [
        f"{k}:{v}" if v.startswith("\n") else f"{k}: {v}" for k, v in settings if k not in mine
    ]
    if fragment:
        lines.append(f"<<: !file {yaml_str(str(fragment.path))}  # the user's (conf=)")
    return "\n".join(lines)


def render_config(
    page: Page,
    ctx: ServeContext,
    ca: LocalCA,
    token: str,
    push: str = "none",
    fragment: Fragment | None = None,
) -> str:
    """Pure except for certificate creation: the h2o.conf text (YAML). ``token`` names the
    folder of the per-resource paths, which only the replay handler knows; ``fragment`` is
    merged at the global level."""
    d = ctx.state_dir
    if any(r.delay_ms for r in page.resources):
        raise SpecError(page.name, "server", "h2o cannot delay responses (use server origin)")
    hosts = []
    for host in page.origins:
        ip = ctx.origin_ips[host]
        pair = ca.leaf(host)
        files = "".join(
            f"\n      {_file_path(i, r, page, token, push)}"
            for i, r in enumerate(page.resources)
            if r.origin == host and _file_served(r)
        )
        hosts.append(
            f"""
  {yaml_str(host)}:
    listen:
      host: {ip}
      port: {PORTS[H1C]}
    listen:
      host: {ip}
      port: {PORTS[H2C]}
    listen:
      host: {ip}
      port: {PORTS[H2S]}
      ssl:
        certificate-file: {yaml_str(str(pair.cert))}
        key-file: {yaml_str(str(pair.key))}
        minimum-version: {ctx.tls_protocol}
    paths:
      "/":
        mruby.handler-file: {yaml_str(str(d / APP_FILE))}{files}"""
        )
    return f"""# generated by h2lab for page {page.name} ({page.digest})
{_globals(ctx, push, fragment)}
hosts:{"".join(hosts)}
"""


class H2o:
    name = "h2o"
    protocols = TCP_PROTOCOLS
    discoveries = FORCED_ONLY
    qlog = False

    def __init__(self, push: str = "none", fragment: Fragment | None = None) -> None:
        self.push = push
        self.fragment = fragment

    def version(self) -> str:
        found = programs.H2O.version() or "unknown"
        return versioned(found, self.fragment)

    def check(self) -> None:
        if self.fragment is None:
            return
        with check_setup() as s:
            self._write(s.page, s.ctx)
            self.fragment.test("h2o -t", self._argv(s.ctx, "-t"))

    def _write(self, page: Page, ctx: ServeContext) -> None:
        """The handler, h2o.conf and the OpenSSL configuration, into the state folder."""
        token = secrets.token_hex(8)
        unserved = ctx.state_dir / UNSERVED_LOG
        unserved.touch()
        (ctx.state_dir / APP_FILE).write_text(render_app(page, token, str(unserved), self.push))
        conf = ctx.state_dir / "h2o.conf"
        ca = LocalCA(ctx.tls_dir)
        conf.write_text(render_config(page, ctx, ca, token, self.push, self.fragment))
        (ctx.state_dir / OPENSSL_CONF).write_text(openssl_conf(ctx.tls_protocol))

    @staticmethod
    def _argv(ctx: ServeContext, *extra: str) -> list[str]:
        ssl_conf = ctx.state_dir / OPENSSL_CONF
        conf = ctx.state_dir / "h2o.conf"
        return ["env", f"OPENSSL_CONF={ssl_conf}", "h2o", "-c", str(conf), *extra]

    @contextmanager
    def serve(self, page: Page, ctx: ServeContext) -> Iterator[Serving]:
        ctx.state_dir.mkdir(parents=True, exist_ok=True)
        self._write(page, ctx)
        h2o = self._argv(ctx)
        procs.run(ctx.exec_argv([*h2o, "-t"]))
        d = ctx.state_dir
        launch = Launch("h2o", h2o, d / "h2o.out", logs=(d / "h2o-error.log",))
        with serve_process(ctx, launch, page.origins) as serving:
            yield serving


@dataclass(frozen=True)
class Options:
    """``h2o:key=value,...``, parsed by the registry."""

    push: str = option(
        choice(*PUSH_RULES),
        "none",
        "resources pushed from the entry document's Link: rel=preload headers: the page's own "
        "(preload) or added by a rule",
        "push=css-js",
    )
    conf: Fragment | None = conf_option()


register("h2o", lambda o: H2o(o.push, o.conf), Options)
