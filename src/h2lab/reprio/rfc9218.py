"""The RFC 9218 test (docs/servers.md, "RFC 9218"): does a server send critical resources,
discovered late, ahead of many large images already in flight, when the client says how urgent
each is with RFC 9218's priority field (HTTP/2 and HTTP/3) or PRIORITY_UPDATE frames (HTTP/2)?

On :data:`NETWORK` the client asks for :data:`IMAGES` images of :data:`IMAGE_BYTES` each at
``u=5, i`` (Chromium's images below the fold), and, once :data:`LATE_AFTER_BYTES` of them have
arrived, for :data:`CRITICAL` stylesheets and scripts at ``u=0`` (how: :data:`HOW`), and no other
priority signal (no RFC 7540 weights: every HTTP/2 stream has the default). The measure
is how many images ended before the last critical resource did: a server that follows the
priorities ends the critical ones before almost every image; first come, first served after
every image.

Clients: over HTTP/2 the scripted client of :mod:`h2lab.reprio.client` (priority fields as
header lines, PRIORITY_UPDATE frames); over HTTP/3 ``origin/cmd/h3prio`` (quic-go's client:
the priority field only, since quic-go's client keeps its control stream to itself).
"""

from __future__ import annotations

import json
import random
import subprocess
from dataclasses import dataclass
from pathlib import Path

from h2lab.errors import H2LabError
from h2lab.net import netns
from h2lab.net.lab import Lab
from h2lab.pages import Page
from h2lab.pages.manifest import PageWriter
from h2lab.reprio.client import Plan, Target, fetch
from h2lab.servers import ServeContext
from h2lab.servers import get as get_server
from h2lab.servers.origin import ensure_built
from h2lab.spec.network import parse_network
from h2lab.spec.protocols import H2S, H3, PORTS
from h2lab.spec.tcp import TcpSettings

HOST = "o1.h2lab.test"
NETWORK = "rtt=100ms,rate=10Mbps"
IMAGES = 30
IMAGE_BYTES = 100_000
CRITICAL = ("/a.css", "/b.css", "/a.js", "/b.js")
CRITICAL_BYTES = 150_000
"""larger than what is left of each image when they are asked for, so that sharing the link
equally (round robin, or RFC 7540's tree with every stream at its default weight) ends the
images first: only the urgency tells the critical ones apart"""
LATE_AFTER_BYTES = 300_000
"""Image bytes the client has before it asks for the critical resources: a tenth of them,
0.25 s of the link, so the connection is past its first round trips and every image has
started (round robin at ``u=5, i``)."""
IMAGE_PRIORITY = "u=5, i"
CRITICAL_PRIORITY = "u=0"
HOW = ("header", "update", "none")
"""``header``: each critical request carries ``priority: u=0``; ``update``: it carries the
images' ``u=5, i`` and a PRIORITY_UPDATE to ``u=0`` follows it (HTTP/2 only); ``none``, the
control: it carries the images' ``u=5, i`` and nothing more, so a server that still sends it
first goes by something else (the content type: H2O's ``http2-reprioritize-blocking-assets``)."""
TIMEOUT_S = 60.0


def page(root: Path, seed: int = 0) -> Page:
    """Index, the images and the critical resources, bytes drawn from ``seed`` (random, so
    nothing compresses)."""
    rng = random.Random(seed)
    with PageWriter("rfc9218", root=root) as w:
        w.add(f"https://{HOST}/index.html", b"<html>rfc9218</html>", content_type="text/html")
        for i in range(IMAGES):
            w.add(
                f"https://{HOST}/img/{i:02d}.jpg", rng.randbytes(IMAGE_BYTES),
                content_type="image/jpeg",
            )  # fmt: skip
        for path in CRITICAL:
            body = rng.randbytes(CRITICAL_BYTES).hex()[:CRITICAL_BYTES].encode()
            kind = "text/css" if path.endswith(".css") else "text/javascript"
            w.add(f"https://{HOST}{path}", body, content_type=kind)
        return w.commit(f"https://{HOST}/index.html")


def images() -> tuple[str, ...]:
    return tuple(f"/img/{i:02d}.jpg" for i in range(IMAGES))


@dataclass(frozen=True)
class Fetched:
    """One response: request and last byte in ms from the first request."""

    path: str
    late: bool
    requested_ms: float
    ended_ms: float
    bytes: int


@dataclass(frozen=True)
class Outcome:
    server: str
    protocol: str
    how: str
    fetched: tuple[Fetched, ...]

    @property
    def critical_end_ms(self) -> float:
        return max(f.ended_ms for f in self.fetched if f.late)

    @property
    def images_before_critical(self) -> int:
        """Images that ended before the last critical resource did."""
        end = self.critical_end_ms
        return sum(1 for f in self.fetched if not f.late and f.ended_ms < end)

    def check(self) -> None:
        for f in self.fetched:
            want = CRITICAL_BYTES if f.late else IMAGE_BYTES
            if f.bytes != want:
                raise H2LabError(f"{self.server} {self.protocol}: {f.path} {f.bytes} of {want} B")

    def line(self) -> str:
        return (
            f"{self.server} {self.protocol} {self.how}: critical done at "
            f"{self.critical_end_ms:.0f} ms, {self.images_before_critical} of {IMAGES} images "
            "before"
        )


def _h2(target: Target, how: str) -> list[Fetched]:
    plan = Plan(
        HOST, images(), CRITICAL[0], LATE_AFTER_BYTES, also_high=CRITICAL[1:],
        low_priority=IMAGE_PRIORITY,
        high_priority=CRITICAL_PRIORITY if how == "header" else IMAGE_PRIORITY,
        high_update=CRITICAL_PRIORITY if how == "update" else None, rfc7540=False,
    )  # fmt: skip
    streams = fetch(target, plan, TIMEOUT_S)
    return [
        Fetched(s.path, s.late, s.requested_ms, s.ended_ms or float("inf"), s.bytes)
        for s in streams
    ]


def h3_argv(binary: Path, ip: str, how: str = "header") -> list[str]:
    urls = [f"https://{HOST}{p}" for p in (*images(), *CRITICAL)]
    late = CRITICAL_PRIORITY if how == "header" else IMAGE_PRIORITY
    return [
        str(binary), "-resolve", f"{HOST}:{ip}", "-early-priority", IMAGE_PRIORITY,
        "-late-priority", late, "-late-after", str(LATE_AFTER_BYTES),
        "-late", str(len(CRITICAL)), "-timeout", f"{TIMEOUT_S:.0f}s", *urls,
    ]  # fmt: skip


def parse_h3(out: str) -> list[Fetched]:
    """h3prio's JSON lines -> what was fetched; a line with an error raises."""
    got = []
    for line in out.splitlines():
        r = json.loads(line)
        if r.get("error") or r["status"] != 200 or r["proto"] != "HTTP/3.0":
            raise H2LabError(f"h3prio: {r['url']}: {r.get('error') or r['status']} {r['proto']}")
        path = "/" + r["url"].split("/", 3)[3]
        got.append(Fetched(path, r["late"], r["requested_ms"], r["ended_ms"], r["bytes"]))
    return got


def _h3(client_ns: str, ip: str, how: str) -> list[Fetched]:
    argv = netns.exec_argv(client_ns, h3_argv(ensure_built(command="h3prio"), ip, how))
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S + 10)
    if proc.returncode != 0:
        raise H2LabError(f"h3prio failed: {proc.stderr[-500:]}{proc.stdout[-500:]}")
    return parse_h3(proc.stdout)


def run(server: str, protocol: str, pages_root: Path, how: str = "header") -> Outcome:
    """One run of the test against ``server`` over ``protocol`` (h2s or h3)."""
    if protocol not in (H2S, H3) or how not in HOW or (protocol == H3 and how == "update"):
        raise ValueError(f"no RFC 9218 test for {protocol} by {how}")
    p = page(pages_root)
    with Lab(p.origins) as lab:
        ctx = ServeContext(
            lab.servers_ns, lab.origin_ips, lab.state_dir / "srv", lab.state_dir / "tls"
        )
        ip = lab.origin_ips[HOST]
        with (
            get_server(server).serve(p, ctx),
            lab.link(parse_network(NETWORK), 1, TcpSettings()) as link,
        ):
            if protocol == H2S:
                target = Target(ip, PORTS[H2S], HOST, ctx.tls_dir / "ca.pem")
                fetched = netns.run_in_netns(link.client_ns, lambda: _h2(target, how))
            else:
                fetched = _h3(link.client_ns, ip, how)
    outcome = Outcome(server, protocol, how, tuple(fetched))
    outcome.check()
    return outcome
