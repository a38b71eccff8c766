"""The reprioritization test (docs/servers.md, "Reprioritization"): does a server send a
late-discovered high-priority response ahead of large low-priority ones already in flight?

On a slow link (:data:`NETWORK`: 10 Mbit/s, 100 ms RTT) the scripted client
(:mod:`h2lab.reprio.client`) asks one server for :data:`IMAGES` images of
:data:`IMAGE_BYTES` each at weight 16, and, once :data:`LATE_AFTER_BYTES` of them have arrived,
for a :data:`CSS_BYTES` stylesheet exclusive on the root at weight 256. What is measured is the
stylesheet's request -> last byte, against the images', and the image bytes that arrived while
the stylesheet was outstanding: what the server had already committed (its own write buffers
and the kernel's send buffer) before it knew of the stylesheet.

Ideal: the stylesheet ends about one round trip plus its own transfer (16 ms at 10 Mbit/s)
after its request, plus the time to drain what was already committed. First come, first
served: after every image (the 5 MB take 4 s at 10 Mbit/s).
"""

from __future__ import annotations

import io
import random
import statistics
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from h2lab.errors import H2LabError
from h2lab.net import netns
from h2lab.net.lab import Lab
from h2lab.pages import Page
from h2lab.pages.manifest import PageWriter
from h2lab.report.svg import TimelineRow, timeline
from h2lab.reprio.client import STREAM_WINDOW_BYTES, Plan, StreamLog, Target, fetch
from h2lab.servers import ServeContext
from h2lab.servers import get as get_server
from h2lab.spec.network import parse_network
from h2lab.spec.protocols import H2S, PORTS
from h2lab.spec.tcp import TcpSettings

HOST = "o1.h2lab.test"
NETWORK = "rtt=100ms,rate=10Mbps"
IMAGES = 10
IMAGE_BYTES = 500_000
CSS_BYTES = 20_000
LATE_AFTER_BYTES = 1_000_000
"""Image bytes the client has before it asks for the stylesheet: 0.8 s of the link, so the
connection is past slow start and the server's buffers are as full as they get."""
TIMEOUT_S = 30.0

SERVERS = (
    "nginx",
    "h2o",
    "apache",
    "origin:scheduler=client",
    "origin:scheduler=rr",
    "origin:scheduler=fcfs",
    "haproxy:backend=h2o,buffer=1MB",
)
"""Every server as deployed by default, the origin's three schedulers, and H2O (the best at
this here) behind HAProxy's 1 MB buffer (seed 003)."""


def page(root: Path, seed: int = 0) -> Page:
    """Index, :data:`IMAGES` images, one stylesheet: bytes drawn from ``seed`` (random, so
    nothing compresses; the same for every server)."""
    rng = random.Random(seed)
    with PageWriter("reprio", root=root) as w:
        w.add(f"https://{HOST}/index.html", b"<html>reprio</html>", content_type="text/html")
        for i in range(IMAGES):
            body = rng.randbytes(IMAGE_BYTES)
            w.add(f"https://{HOST}/img/{i:02d}.jpg", body, content_type="image/jpeg")
        css = b"/*" + rng.randbytes(CSS_BYTES).hex()[: CSS_BYTES - 4].encode() + b"*/"
        w.add(f"https://{HOST}/late.css", css, content_type="text/css")
        return w.commit(f"https://{HOST}/index.html")


BROWSER_LATE_MS = 1500
"""When the browser page's script adds the stylesheet, after it ran (the HTML has arrived)."""
PNG_SIDE_PX = 408
"""An RGB PNG of random pixels, stored (no compression): 408 x 408 x 3 = 499,392 B of pixels,
about :data:`IMAGE_BYTES` with the PNG's framing; a browser decodes it (random bytes labelled
as JPEG it cancels on the decoding error)."""


def browser_page(root: Path, seed: int = 0) -> Page:
    """The same test for a browser: :data:`IMAGES` ``<img>`` of random-pixel PNGs, and a
    script that adds ``<link rel=stylesheet href=/late.css>`` :data:`BROWSER_LATE_MS` later
    (Chromium asks for the images at Low priority and the stylesheet at VeryHigh)."""
    rng = random.Random(seed)
    imgs = "".join(f'<img src="/img/{i:02d}.png" width="10" height="10">' for i in range(IMAGES))
    script = (
        "setTimeout(function () { var l = document.createElement('link'); l.rel = 'stylesheet';"
        f" l.href = '/late.css'; document.head.appendChild(l); }}, {BROWSER_LATE_MS});"
    )
    html = f"<html><head><title>reprio</title></head><body>{imgs}<script>{script}</script>"
    html += "</body></html>"
    with PageWriter("reprio-browser", root=root) as w:
        w.add(
            f"https://{HOST}/index.html", f"{html}</body></html>".encode(), content_type="text/html"
        )
        for i in range(IMAGES):
            pixels = rng.randbytes(PNG_SIDE_PX * PNG_SIDE_PX * 3)
            im = Image.frombytes("RGB", (PNG_SIDE_PX, PNG_SIDE_PX), pixels)
            buf = io.BytesIO()
            im.save(buf, "PNG", compress_level=0)
            w.add(f"https://{HOST}/img/{i:02d}.png", buf.getvalue(), content_type="image/png")
        css = b"/*" + rng.randbytes(CSS_BYTES).hex()[: CSS_BYTES - 4].encode() + b"*/"
        w.add(f"https://{HOST}/late.css", css, content_type="text/css")
        return w.commit(f"https://{HOST}/index.html")


def plan(stream_window_bytes: int = STREAM_WINDOW_BYTES) -> Plan:
    images = tuple(f"/img/{i:02d}.jpg" for i in range(IMAGES))
    return Plan(HOST, images, "/late.css", LATE_AFTER_BYTES, stream_window_bytes)


@dataclass(frozen=True)
class Outcome:
    """One run against one server."""

    server: str
    streams: tuple[StreamLog, ...]

    @property
    def high(self) -> StreamLog:
        return next(s for s in self.streams if s.exclusive)

    @property
    def low(self) -> list[StreamLog]:
        return [s for s in self.streams if not s.exclusive]

    @property
    def high_ms(self) -> float:
        """The stylesheet: request -> last byte."""
        return self.high.duration_ms

    @property
    def low_median_ms(self) -> float:
        """The images: median request -> last byte."""
        return statistics.median(s.duration_ms for s in self.low)

    @property
    def low_after_high(self) -> int:
        """Images that ended after the stylesheet."""
        end = self.high.ended_ms or 0.0
        return sum(1 for s in self.low if (s.ended_ms or 0.0) > end)

    @property
    def bytes_ahead(self) -> int:
        """Image bytes that arrived while the stylesheet was outstanding."""
        h = self.high
        end = h.ended_ms or 0.0
        return sum(n for s in self.low for t, n in s.arrivals if h.requested_ms < t <= end)

    def check(self) -> None:
        """Every stream ended with a 200 and all its bytes."""
        for s in self.streams:
            want = CSS_BYTES if s.exclusive else IMAGE_BYTES
            if not s.status_200 or s.bytes != want or s.ended_ms is None or s.reset is not None:
                raise H2LabError(
                    f"{self.server}: {s.path} incomplete (status 200: {s.status_200}, "
                    f"{s.bytes} of {want} B, reset {s.reset})"
                )


def run(
    server: str,
    pages_root: Path,
    repetitions: int = 1,
    stream_window_bytes: int = STREAM_WINDOW_BYTES,
) -> list[Outcome]:
    """``repetitions`` runs against ``server``, each on a fresh connection (the server is
    started once, the link once); the client's stream window as Chromium's unless given."""
    p = page(pages_root)
    profile = parse_network(NETWORK)
    out = []
    with Lab(p.origins) as lab:
        ctx = ServeContext(
            lab.servers_ns, lab.origin_ips, lab.state_dir / "srv", lab.state_dir / "tls"
        )
        target = Target(lab.origin_ips[HOST], PORTS[H2S], HOST, ctx.tls_dir / "ca.pem")
        with get_server(server).serve(p, ctx), lab.link(profile, 1, TcpSettings()) as link:
            for _ in range(repetitions):
                lab.reset_client_connections()
                streams = netns.run_in_netns(
                    link.client_ns, lambda: fetch(target, plan(stream_window_bytes), TIMEOUT_S)
                )
                outcome = Outcome(server, tuple(streams))
                outcome.check()
                out.append(outcome)
    return out


SPAN_GAP_MS = 20.0
"""DATA frames closer than this are drawn as one span (a 16 KB frame is 13 ms at 10 Mbit/s)."""


def spans(
    arrivals: list[tuple[float, int]], gap_ms: float = SPAN_GAP_MS
) -> list[tuple[float, float, int]]:
    """Arrival times of a stream's DATA frames -> (from_ms, to_ms, bytes) spans."""
    out: list[tuple[float, float, int]] = []
    for t, n in arrivals:
        if out and t - out[-1][1] <= gap_ms:
            a, _, b = out[-1]
            out[-1] = (a, t, b + n)
        else:
            out.append((t, t, n))
    return out


def timeline_svg(outcome: Outcome) -> str:
    """One lane per stream in request order, a mark wherever its bytes arrived; the
    high-priority stream in its own colour, its request time in its label."""
    rows = [
        TimelineRow(
            f"{s.path.rsplit('/', 1)[1]} @{s.requested_ms:.0f}ms"
            if s.exclusive
            else s.path.rsplit("/", 1)[1],
            "high" if s.exclusive else "low",
            tuple(spans(s.arrivals)),
        )
        for s in outcome.streams
    ]
    end = max(s.ended_ms or 0.0 for s in outcome.streams)
    title = (
        f"{outcome.server}: late.css request -> last byte {outcome.high_ms:.0f} ms, "
        f"images {outcome.low_median_ms:.0f} ms (median)"
    )
    return timeline(rows, t_max_ms=end, title=title, width=640)
