"""h2lab.clients.nghttp: the pure parts (process plan, argv, options) and collecting results
from files a run leaves (HAR + frame log), with a stand-in for the finished processes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import cast

import pytest

from h2lab.clients import LoadContext, LoadResult
from h2lab.clients import get as get_client
from h2lab.clients.nghttp import Invocation, Nghttp, argv_for, plan
from h2lab.errors import SpecError, TrialFailed
from h2lab.pages import Page
from h2lab.pages.synthetic import layout, parse


def page(spec: str) -> tuple[Page, str]:
    origins, resources, html = layout(parse(spec))
    p = Page(name=spec, origins=origins, resources=resources, docroot=Path("/nowhere"), digest="d")
    return p, html


def test_plan_h2s_entry_with_assets_other_origins_listed() -> None:
    p, html = page("synthetic:n=4,size=1KB,origins=2")
    first, second = plan(p, "h2s", html)
    # every o1 object is linked from the HTML: -a finds them, only the entry is listed
    o1 = tuple(p.resources_of("o1.h2lab.test"))
    assert first == Invocation("o1.h2lab.test", ("https://o1.h2lab.test/index.html",), True, o1)
    assert second.urls == (
        "https://o2.h2lab.test/obj/00001.png",
        "https://o2.h2lab.test/obj/00003.png",
    )
    assert not second.get_assets and second.id == "o2.h2lab.test#0"


def test_plan_h2c_lists_every_resource_since_links_point_at_port_80() -> None:
    p, html = page("synthetic:n=4,size=1KB,origins=2")
    first, second = plan(p, "h2c", html)
    assert first.urls == (
        "http://o1.h2lab.test:8080/index.html",
        "http://o1.h2lab.test:8080/obj/00000.png",
        "http://o1.h2lab.test:8080/obj/00002.png",
    )
    assert first.get_assets and second.urls[0] == "http://o2.h2lab.test:8080/obj/00001.png"


def test_plan_lists_what_the_html_does_not_link() -> None:
    p, _ = page("synthetic:n=2,size=1KB,origins=1")
    (inv,) = plan(p, "h2s", "<html><img src=/obj/00001.png></html>")
    assert inv.urls == ("https://o1.h2lab.test/index.html", "https://o1.h2lab.test/obj/00000.png")


def test_plan_rejects_h1() -> None:
    p, html = page("synthetic:n=1,size=1KB,origins=1")
    with pytest.raises(ValueError, match="h2s and h2c"):
        plan(p, "h1s", html)


def test_argv() -> None:
    inv = Invocation("o1.h2lab.test", ("https://o1.h2lab.test/",), True, ())
    assert argv_for(inv, "/t/a.har") == [
        "nghttp", "-n", "-v", "-y", "-w30", "-W30", "-a", "--har=/t/a.har", "https://o1.h2lab.test/"
    ]  # fmt: skip
    assert "-a" not in argv_for(Invocation("o", ("u",), False, ()), "h")


def test_registry_and_options() -> None:
    client = get_client("nghttp")
    assert client.name == "nghttp" and client.protocols == {"h2s", "h2c"}
    with pytest.raises(SpecError, match=r"no option 'push' \(nghttp takes: none\)"):
        get_client("nghttp:push=1")


class _Done:
    def __init__(self, returncode: int) -> None:
        self.returncode = returncode


def _har(*entries: tuple[str, int, int, float, int]) -> str:
    """entries: (url, stream id, size, start offset ms, status)."""
    return json.dumps({"log": {"entries": [
        {"startedDateTime": f"2026-01-01T00:00:00.{int(off):03d}Z", "time": 10.0,
         "request": {"url": url}, "connection": str(sid),
         "response": {"status": status, "httpVersion": "HTTP/2.0", "content": {"size": size}},
         "timings": {"send": 0.0, "wait": 8.0, "receive": 2.0}}
        for url, sid, size, off, status in entries
    ]}})  # fmt: skip


FRAMES = """\
[  0.101] send HEADERS frame <length=37, flags=0x25, stream_id=13>
          ; END_STREAM | END_HEADERS | PRIORITY
          (padlen=0, dep_stream_id=11, weight=16, exclusive=0)
[  0.122] recv HEADERS frame <length=85, flags=0x04, stream_id=13>
          ; END_HEADERS
          (padlen=0)
"""


def _collect(tmp_path: Path, hars: list[str], codes: list[int] | None = None) -> LoadResult:
    p, html = page("synthetic:n=2,size=1KB,origins=2")
    invs = plan(p, "h2s", html)
    for i, text in enumerate(hars):
        (tmp_path / f"nghttp-{i}.har").write_text(text)
        (tmp_path / f"nghttp-{i}.out").write_text(FRAMES)
    running = [
        (inv, cast(subprocess.Popen[bytes], _Done(c)))
        for inv, c in zip(invs, codes or [0] * len(invs), strict=True)
    ]
    return Nghttp()._collect(running, "h2s", LoadContext("ns", tmp_path, 10))


def test_collect_marks_pushes_and_times_from_first_request(tmp_path: Path) -> None:
    o1 = _har(("https://o1.h2lab.test/index.html", 13, 300, 5, 200),
              ("https://o1.h2lab.test/obj/00000.png", 2, 1000, 9, 200))  # fmt: skip
    o2 = _har(("https://o2.h2lab.test/obj/00001.png", 13, 1000, 3, 200))
    result = _collect(tmp_path, [o1, o2])
    by_url = {r.url.rsplit("/", 1)[1]: r for r in result.resources}
    assert by_url["00000.png"].pushed and not by_url["index.html"].pushed
    assert by_url["index.html"].priority == "weight=16,dep=11"
    assert by_url["00000.png"].priority is None  # a push has no request of ours
    assert [r.connection for r in result.resources] == [
        "o2.h2lab.test#0", "o1.h2lab.test#0", "o1.h2lab.test#0"
    ]  # fmt: skip
    assert result.resources[0].start_ms == 0.0  # o2's request went first (3 ms)
    assert by_url["index.html"].start_ms == pytest.approx(2.0, abs=1e-3)
    assert by_url["index.html"].ttfb_ms == pytest.approx(10.0, abs=1e-3)
    assert result.pdt_ms == pytest.approx(9 + 10 - 3, abs=1e-3)
    assert result.body_bytes == 2300
    assert result.request_header_bytes == 2 * 32 and result.response_header_bytes == 2 * 85
    # the HAR kept is the mended one: h2lab's connection id, the stream id aside
    kept = json.loads((tmp_path / "nghttp-0.har").read_text())["log"]["entries"]
    assert [(e["connection"], e["_stream_id"]) for e in kept] == [
        ("o1.h2lab.test#0", 13), ("o1.h2lab.test#0", 2)
    ]  # fmt: skip


def test_collect_fails_on_missing_resource_bad_status_or_exit(tmp_path: Path) -> None:
    o2 = _har(("https://o2.h2lab.test/obj/00001.png", 13, 1000, 3, 200))
    only_entry = _har(("https://o1.h2lab.test/index.html", 13, 300, 5, 200))
    with pytest.raises(TrialFailed, match=r"not fetched \['/obj/00000.png'\]"):
        _collect(tmp_path, [only_entry, o2])
    bad = _har(("https://o1.h2lab.test/index.html", 13, 300, 5, 200),
               ("https://o1.h2lab.test/obj/00000.png", 15, 0, 9, 404))  # fmt: skip
    with pytest.raises(TrialFailed, match="404"):
        _collect(tmp_path, [bad, o2])
    with pytest.raises(TrialFailed, match="nghttp exited 1"):
        _collect(tmp_path, [only_entry, o2], [1, 0])
