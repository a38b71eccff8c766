"""``h2lab record`` (issue #31): a page the lab serves, recorded by Chromium from the client
namespace (host map and lab CA pinned, so nothing leaves the lab), is stored byte for byte and
replays with every request answered; a URL that does not load is refused in one line, with
nothing stored."""

from __future__ import annotations

import hashlib
import os
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from h2lab import procs
from h2lab.analysis.coverage import coverage
from h2lab.errors import SpecError
from h2lab.net import netns
from h2lab.net.lab import Lab, Link
from h2lab.pages import Page
from h2lab.pages.importers import import_warc
from h2lab.pages.manifest import PageWriter
from h2lab.record import RecordResult, record_page
from h2lab.servers import ServeContext
from h2lab.servers import get as get_server
from h2lab.spec.network import parse_network
from h2lab.spec.tcp import TcpSettings
from h2lab.store import Store
from h2lab.tls import LocalCA
from tests.integration.conftest import run_experiment

HERE = Path(__file__).parent
MAIN, CDN, ADS = "www.rec.test", "static.rec-cdn.test", "ads.rec-ads.test"
INDEX = f"""<!doctype html><html><head><meta charset=utf-8><link rel=icon href="data:,">
<link rel=stylesheet href="https://{CDN}/style.css"><script src="/app.js"></script></head>
<body><p class=f>caf\u00e9 \u2615 recorded</p><img src="https://{CDN}/logo.png" alt="">
<iframe src="https://{ADS}/frame.html" width=300 height=250></iframe></body></html>"""
STYLE = '@font-face{font-family:Rec;src:url(/font.woff2) format("woff2")}\n.f{font-family:Rec}'
APP = "const w = new Worker('/worker.js'); w.onmessage = (e) => { document.title = e.data; };"
WORKER = "fetch('/data.json').then((r) => r.text()).then((t) => postMessage(t));"
FRAME = "<!doctype html><script src='/ad.js'></script><img src='/ad-old.gif' alt=''>"


def png_holding(data: bytes) -> bytes:
    """A 1x1 PNG that Chromium decodes (it keeps no bytes of an image it cannot decode for
    DevTools), carrying ``data`` in a private ancillary chunk (PNG 1.2 §4.4: skipped)."""

    def chunk(kind: bytes, payload: bytes) -> bytes:
        crc = zlib.crc32(kind + payload)
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", crc)

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
        + chunk(b"prVt", data)
        + chunk(b"IDAT", zlib.compress(b"\x00\xcc\x00\x00"))
        + chunk(b"IEND", b"")
    )


def gif_holding(data: bytes) -> bytes:
    """A 1x1 GIF that Chromium decodes, carrying ``data`` in a comment extension (GIF89a §24)."""
    blocks = b"".join(bytes([len(data[i : i + 255])]) + data[i : i + 255]
                      for i in range(0, len(data), 255))  # fmt: skip
    return (
        b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff"
        + b"!\xfe"
        + blocks
        + b"\x00"
        + b",\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
    )


def served_page(root: Path) -> Page:
    """Three origins: a document reached by a 301, its script starting a dedicated worker
    that fetches JSON, a stylesheet whose @font-face loads a woff2 (CORS), an image, and a
    cross-site iframe whose image is reached by a 302."""
    binary = bytes(range(256))
    cors = [("Access-Control-Allow-Origin", "*")]
    with PageWriter("record-source", root=root) as w:
        w.add(f"https://{MAIN}/start", None, content_type="text/html", status=301,
              headers=[("Location", f"https://{MAIN}/")])  # fmt: skip
        w.add(f"https://{MAIN}/", INDEX.encode(), content_type="text/html; charset=utf-8")
        w.add(f"https://{MAIN}/app.js", APP.encode(), content_type="text/javascript")
        w.add(f"https://{MAIN}/worker.js", WORKER.encode(), content_type="text/javascript")
        w.add(f"https://{MAIN}/data.json", b'{"n": 1}', content_type="application/json")
        w.add(f"https://{CDN}/style.css", STYLE.encode(), content_type="text/css", headers=cors)
        w.add(f"https://{CDN}/font.woff2", b"wOF2" + binary * 8, content_type="font/woff2",
              headers=cors)  # fmt: skip
        w.add(f"https://{CDN}/logo.png", png_holding(binary * 20), content_type="image/png",
              headers=[("Cache-Control", "max-age=600")])  # fmt: skip
        w.add(f"https://{ADS}/frame.html", FRAME.encode(), content_type="text/html")
        w.add(f"https://{ADS}/ad.js", b"/* ad */\n" * 500, content_type="text/javascript")
        w.add(f"https://{ADS}/ad-old.gif", None, content_type="text/html", status=302,
              headers=[("Location", "/ad.gif")])  # fmt: skip
        w.add(f"https://{ADS}/ad.gif", gif_holding(binary * 10), content_type="image/gif")
        return w.commit(f"https://{MAIN}/")


def _key(r: object) -> tuple[str, str, str, str]:
    return (r.method, r.origin, r.path, r.query)  # type: ignore[attr-defined]


def _sha(page: Page, r: object) -> str:
    return hashlib.sha256(page.body_file(r).read_bytes()).hexdigest()  # type: ignore[arg-type]


def _leftover_profiles() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("h2lab-record-*")}


def record_served(served: Page, url: str, tmp_path: Path, warc: Path | None = None) -> RecordResult:
    """``served`` served by nginx in a lab, recorded at ``url`` from the client namespace (only
    the lab's names resolve; the lab CA pinned)."""
    with Lab(served.origins) as lab:
        ctx = ServeContext(
            lab.servers_ns, lab.origin_ips, lab.state_dir / "srv", lab.state_dir / "tls"
        )
        with (
            get_server("nginx").serve(served, ctx),
            lab.link(parse_network("rtt=2ms"), 1, TcpSettings()) as link,
        ):
            return record_page(
                url,
                name="recorded",
                warc=warc,
                timeout_s=30,
                netns=link.client_ns,
                hosts=dict(lab.origin_ips),
                spki=LocalCA(ctx.tls_dir).spki_sha256(),
                root=tmp_path / "pages",
            )


def test_a_multi_origin_page_is_recorded_byte_for_byte_and_replays(tmp_path: Path) -> None:
    served = served_page(tmp_path / "served")
    profiles_before = _leftover_profiles()
    warc = tmp_path / "recorded.warc.gz"
    result = record_served(served, f"https://{MAIN}/start", tmp_path, warc)
    page, rec = result.page, result.recording
    print(
        f"recorded {len(page.resources)} resources, {len(page.origins)} origins, "
        f"{page.total_body_bytes:,} B in {result.elapsed_s:.1f} s; notes: {list(rec.notes)}"
    )
    assert _leftover_profiles() == profiles_before  # the browser's profile is gone
    recorded = {_key(r): r for r in page.resources}
    missing = [k for k in map(_key, served.resources) if k not in recorded]
    assert missing == [], f"not recorded: {missing}"
    for want in served.resources:
        got = recorded[_key(want)]
        where = want.url()
        assert got.status == want.status, where
        assert got.content_type == want.content_type, where
        assert got.header("location") == want.header("location"), where
        if want.body_sha256 is None:
            assert got.size_bytes == 0, where  # a redirect: Chromium keeps no body
        else:
            assert _sha(page, got) == want.body_sha256, where
    assert page.entry.url() == f"https://{MAIN}/"
    assert set(page.origins) == {MAIN, CDN, ADS}
    assert import_warc(warc, root=tmp_path / "imported").digest == page.digest

    out = tmp_path / "out"
    (trial,) = run_experiment(
        out, "recorded", {"protocol": ["h2s"], "network": ["rtt=20ms"],
                          "page": [str(page.docroot)], "client": ["chromium:idle=2s"]},
        seed=1, repetitions=1,
    )  # fmt: skip
    assert trial.status == "ok", trial.error
    store = Store(out)
    rows = [r for r in store.resources(trial.id or 0) if "favicon" not in str(r["url"])]
    store.close()
    cov = coverage(page, rows)
    print(f"replay: {cov}; urls {sorted(str(r['url']) for r in rows)}")
    assert cov.requests >= len(served.resources) - 1  # all but the 301 of the start URL
    assert cov.answered == cov.requests


def test_text_bodies_in_other_charsets_are_stored_byte_for_byte(tmp_path: Path) -> None:
    """Chromium returns text as it decoded it: in the charset the response names, else in one it
    chose (windows-1252 for a page naming none, the page's own for its scripts), a UTF-8
    byte-order mark taken off. Each is encoded back to the bytes the server sent."""
    host = "www.enc.test"
    index = (
        "<!doctype html><link rel=icon href='data:,'><link rel=stylesheet href=/bom.css>"
        "<link rel=stylesheet href=/latin.css><script src=/latin.js></script>"
        "<iframe src=/named.html></iframe><iframe src=/meta.html></iframe>"
    )
    with PageWriter("enc", root=tmp_path / "served") as w:
        w.add(f"https://{host}/", index.encode(), content_type="text/html")
        w.add(f"https://{host}/named.html", b"<p>caf\xe9 \x80</p>",
              content_type="text/html; charset=windows-1252")  # fmt: skip
        w.add(f"https://{host}/meta.html", b"<meta charset=windows-1252><p>caf\xe9</p>",
              content_type="text/html")  # fmt: skip
        w.add(f"https://{host}/bom.css", b"\xef\xbb\xbfbody{color:red}", content_type="text/css")
        w.add(f"https://{host}/latin.css", b"/* caf\xe9 */ p{}", content_type="text/css")
        w.add(f"https://{host}/latin.js", b"var a = '\xff\xfe';", content_type="text/javascript")
        served = w.commit(f"https://{host}/")
    result = record_served(served, f"https://{host}/", tmp_path)
    assert result.recording.notes == ()
    recorded = {_key(r): r for r in result.page.resources}
    shas = {r.path: (_sha(result.page, recorded[_key(r)]), r.body_sha256) for r in served.resources}
    assert all(got == want for got, want in shas.values()), shas


# ------------------------------------------------------------------------------- refused

HANG, CLOSED = "hang.rec.test", "closed.rec.test"
NEVER = """<!doctype html><html><head><link rel=icon href="data:,"></head><body>
<img src="/x.png?hold=30000" alt=""></body></html>"""


@pytest.fixture
def refusing_lab(tmp_path: Path) -> Iterator[tuple[Lab, Link]]:
    """A slow origin (tests/integration/slow_origin.py) on HANG:80, and CLOSED's address with
    nothing listening."""
    docroot = tmp_path / "www"
    docroot.mkdir()
    (docroot / "never.html").write_text(NEVER)
    with Lab((HANG, CLOSED)) as lab:
        ip = lab.origin_ips[HANG]
        argv = [sys.executable, str(HERE / "slow_origin.py"), ip, "80", str(docroot)]
        server = procs.spawn(netns.exec_argv(lab.servers_ns, argv))
        try:
            procs.wait_until(
                "slow origin listening", lambda: netns.is_listening(lab.servers_ns, ip, 80),
                timeout_s=10,
            )  # fmt: skip
            with lab.link(parse_network("rtt=2ms"), seed=1, tcp=TcpSettings()) as link:
                yield lab, link
        finally:
            procs.stop(server)


def _record_cli(url: str, lab: Lab, link: Link, tmp_path: Path, *extra: str) -> tuple[int, str]:
    """``h2lab record URL`` in the client namespace, resolving the lab's names only."""
    hosts = [f"--host={h}={ip}" for h, ip in lab.origin_ips.items()]
    argv = [sys.executable, "-m", "h2lab", "record", url, "--netns", link.client_ns, *hosts,
            "--warc", str(tmp_path / "x.warc.gz"), *extra]  # fmt: skip
    env = {**os.environ, "H2LAB_PAGES": str(tmp_path / "pages")}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    return done.returncode, done.stderr


@pytest.mark.parametrize(
    ("url", "extra", "why"),
    [
        ("http://nowhere.rec.test/", (), "its host name does not resolve"),
        (f"http://{CLOSED}/", (), "the server refused the connection"),
        (f"http://{HANG}/never.html", ("--timeout", "3"), "no load event within 3 s"),
        (f"http://{HANG}/x.png?hold=30000", ("--timeout", "2"), "no load event within 2 s"),
        ("ftp://x/", (), "only http:// and https:// URLs can be recorded"),
        ("file:///etc/passwd", (), "only http:// and https:// URLs can be recorded"),
    ],
)
def test_a_url_that_does_not_load_is_refused_and_nothing_is_stored(
    refusing_lab: tuple[Lab, Link], tmp_path: Path, url: str, extra: tuple[str, ...], why: str
) -> None:
    lab, link = refusing_lab
    started = time.monotonic()
    rc, stderr = _record_cli(url, lab, link, tmp_path, *extra)
    print(f"{url}: rc={rc} in {time.monotonic() - started:.1f} s: {stderr.strip()}")
    assert rc == 2, stderr
    assert stderr.count("\n") == 1 and stderr.startswith(f"h2lab: command line: URL: {url}")
    assert why in stderr
    pages = tmp_path / "pages"
    assert not pages.exists() or not any(pages.iterdir()), list(pages.iterdir())
    assert list(tmp_path.glob("*warc*")) == []


def test_an_error_document_is_recorded_not_refused(
    refusing_lab: tuple[Lab, Link], tmp_path: Path
) -> None:
    lab, link = refusing_lab
    result = record_page(
        f"http://{HANG}/missing.html", timeout_s=10, idle_s=0.5, netns=link.client_ns,
        hosts=dict(lab.origin_ips), root=tmp_path / "pages",
    )  # fmt: skip
    # the document, and the favicon Chromium asks for itself (the error page names none)
    got = [(r.path, r.status) for r in result.page.resources]
    assert got[0] == ("/missing.html", 404) and set(got[1:]) <= {("/favicon.ico", 404)}
    assert result.page.entry.path == "/missing.html"
    assert result.page.name == HANG
    assert any("answered 404: recorded as it is" in n for n in result.recording.notes)
    with pytest.raises(SpecError, match="only http:// and https://"):
        record_page("ftp://x/", root=tmp_path / "pages")
