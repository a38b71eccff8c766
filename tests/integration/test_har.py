"""HAR 1.2 from real trials: every HAR a Chromium, an nghttp and an h2load trial leave
validates against the HAR 1.2 schema (npm's har-schema, :mod:`tests.har_schema`) with sane
dates and timings; and the round trip: a Chromium trial's HAR with bodies
(``chromium:har_bodies=1``), imported with ``h2lab pages import``, is the page it loaded."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from h2lab.artifacts import ARTIFACTS_DIR, PAGE_HAR
from h2lab.pages import resolve_page
from h2lab.pages.manifest import load_page
from h2lab.spec.protocols import url_for
from tests.har_schema import assert_valid_har_file
from tests.integration.conftest import run_experiment

PAGE = "synthetic:n=6,size=10KB,origins=2"
NETWORK = "rtt=20ms,rate=20Mbps"
RTT_MS = 20
MIXED_PAGE = "synthetic:mix:css=2/12KB,js=2/12KB,img=4/40KB,origins=2"
"""html (the entry), CSS, JS and PNG images on two origins."""


def _epoch_s(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _trial_folder(out: Path, client: str) -> Path:
    (folder,) = [f for f in (out / ARTIFACTS_DIR).iterdir() if f"_{client}_" in f.name]
    return folder


def _check_dates(har: dict[str, Any], began_s: float, ended_s: float) -> None:
    """The page started during the test (a real date, not a clock's offset), and every entry
    started within the page, no earlier than it and before the test ended."""
    (page,) = har["log"]["pages"]
    page_s = _epoch_s(page["startedDateTime"])
    assert began_s - 1 <= page_s <= ended_s, (page["startedDateTime"], began_s, ended_s)
    for e in har["log"]["entries"]:
        assert page_s <= _epoch_s(e["startedDateTime"]) <= ended_s, e["startedDateTime"]
        parts = [v for k, v in e["timings"].items() if k != "ssl" and v >= 0]
        assert abs(sum(parts) - e["time"]) <= 0.01 * len(parts), e["timings"]


def _first_per_connection(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    first: dict[str, dict[str, Any]] = {}
    for e in sorted(entries, key=lambda e: _epoch_s(e["startedDateTime"])):
        first.setdefault(e["connection"], e)
    return first


def test_every_har_of_a_chromium_nghttp_and_h2load_trial_is_valid(tmp_path: Path) -> None:
    began_s = time.time()
    records = run_experiment(
        tmp_path,
        "har",
        {
            "protocol": ["h2s"],
            "network": [NETWORK],
            "page": [PAGE],
            "client": ["chromium", "nghttp", "h2load"],
        },
        seed=7,
        repetitions=1,
    )
    ended_s = time.time()
    assert [r.status for r in records] == ["ok"] * 3, [r.error for r in records]
    page = resolve_page(PAGE)
    urls = {url_for(r, "h2s") for r in page.resources}
    hars = {
        client: {p.name: assert_valid_har_file(p) for p in folder.glob("*.har")}
        for client in ("chromium", "nghttp", "h2load")
        if (folder := _trial_folder(tmp_path, client))
    }
    print({client: sorted(files) for client, files in hars.items()})
    assert set(hars["chromium"]) == set(hars["h2load"]) == {PAGE_HAR}
    assert set(hars["nghttp"]) == {"nghttp-0.har", "nghttp-1.har"}  # one per origin
    for files in hars.values():
        for har in files.values():
            _check_dates(har, began_s, ended_s)
    for client in ("chromium", "h2load"):
        entries = hars[client][PAGE_HAR]["log"]["entries"]
        assert {e["request"]["url"] for e in entries} == urls, client
        assert {e["response"]["status"] for e in entries} == {200}

    chromium = hars["chromium"][PAGE_HAR]["log"]
    (chromium_page,) = chromium["pages"]
    timings = chromium_page["pageTimings"]
    assert 0 < timings["onContentLoad"] <= timings["onLoad"], timings
    assert timings["_plt_ms"] == timings["onLoad"] and "_frames" in timings
    page_s = _epoch_s(chromium_page["startedDateTime"])
    for e in chromium["entries"]:
        # every request of the page was made before its load event
        assert _epoch_s(e["startedDateTime"]) - page_s <= timings["onLoad"] / 1000 + 0.001
    # h2s: one connection per origin; the request that opened it has its DNS, connect and TLS
    # (in connect); the others on it have -1 there
    first = _first_per_connection(chromium["entries"])
    assert len(first) == 2
    for e in chromium["entries"]:
        t = e["timings"]
        print(f"chromium {e['request']['url']} {e['connection']}: {t}")
        if e is first[e["connection"]]:
            # its set-up's round trips show as connect, or as blocked (Chromium's preconnect at
            # navigation start: connect 1.1 ms and blocked 40.8 ms at 20 ms, or -1 and 43.7 ms),
            # or lie before the request began (connect 0.97 ms, blocked 2.8 ms: its times clamped
            # to the request's start), so they are counted from the page's start
            preconnected = t["dns"] == t["connect"] == t["ssl"] == -1
            assert preconnected or (t["dns"] >= 0 and 0 < t["ssl"] <= t["connect"]), t
            began_ms = (_epoch_s(e["startedDateTime"]) - page_s) * 1000
            assert max(t["connect"], 0) + t["blocked"] + began_ms >= RTT_MS, (began_ms, t)
        else:
            assert t["dns"] == t["connect"] == t["ssl"] == -1, t
        # the request leaves no earlier than sendStart and its answer takes a round trip; not
        # wait alone: a busy network thread stamps sendEnd late (CI: send 30.8, wait 10.5 ms)
        assert t["blocked"] >= 0 and t["wait"] >= 0 and t["send"] + t["wait"] >= RTT_MS, t

    h2load = hars["h2load"][PAGE_HAR]["log"]
    first = _first_per_connection(h2load["entries"])
    assert len(first) == 2
    for e in h2load["entries"]:
        connect_ms = e["timings"]["connect"]
        assert connect_ms >= RTT_MS if e is first[e["connection"]] else connect_ms == -1, e
    # nghttp's own HAR (mended), one per connection: its first request has the connection's
    # set-up, the others -1 there
    for name, har in hars["nghttp"].items():
        entries = har["log"]["entries"]
        (opened,) = _first_per_connection(entries).values()
        print(f"{name}: {len(entries)} entries, first {opened['timings']}")
        for e in entries:
            t = e["timings"]
            assert (t["connect"] >= RTT_MS) if e is opened else t["connect"] == t["dns"] == -1


def test_firefox_hars_are_valid_with_network_events_and_from_resource_timing(
    tmp_path: Path,
) -> None:
    """Firefox's HAR from BiDi's network events (its phases, wall-clock dates) and, with
    ``network=0``, from the page's Resource Timing (no phases: -1) both validate."""
    began_s = time.time()
    records = run_experiment(
        tmp_path,
        "har-firefox",
        {
            "protocol": ["h2s"],
            "network": [NETWORK],
            "page": [PAGE],
            "client": ["firefox", "firefox:network=0"],
        },
        seed=7,
        repetitions=1,
    )
    ended_s = time.time()
    assert [r.status for r in records] == ["ok"] * 2, [r.error for r in records]
    urls = {url_for(r, "h2s") for r in resolve_page(PAGE).resources}
    folders = sorted((tmp_path / ARTIFACTS_DIR).iterdir())
    assert len(folders) == 2
    for folder in folders:
        har = assert_valid_har_file(folder / PAGE_HAR)
        _check_dates(har, began_s, ended_s)
        entries = har["log"]["entries"]
        assert {e["request"]["url"] for e in entries} == urls
        document = min(entries, key=lambda e: e["startedDateTime"])
        assert document["request"]["url"] == url_for(resolve_page(PAGE).entry, "h2s")
        if "network_0" in folder.name:
            assert {e["timings"]["connect"] for e in entries} == {-1}
        else:  # the document's request opened the first connection
            t = document["timings"]
            assert t["connect"] >= RTT_MS and 0 < t["ssl"] <= t["connect"], t


def test_a_chromium_har_with_bodies_imports_as_the_page_it_loaded(tmp_path: Path) -> None:
    """``chromium:har_bodies=1``: ``h2lab pages import`` of the trial's HAR gives a page whose
    every resource has the URL, status, content type and body bytes of the one loaded."""
    records = run_experiment(
        tmp_path / "run",
        "har-bodies",
        {
            "protocol": ["h2s"],
            "network": [NETWORK],
            "page": [MIXED_PAGE],
            "client": ["chromium:har_bodies=1"],
        },
        seed=7,
        repetitions=1,
    )
    assert [r.status for r in records] == ["ok"], [r.error for r in records]
    har_file = _trial_folder(tmp_path / "run", "chromium") / PAGE_HAR
    har = assert_valid_har_file(har_file)
    encodings = {e["response"]["content"].get("encoding") for e in har["log"]["entries"]}
    assert encodings == {None, "base64"}  # text as text, images in base64
    pages = tmp_path / "pages"
    env = {**os.environ, "H2LAB_PAGES": str(pages)}
    done = subprocess.run(
        [sys.executable, "-m", "h2lab", "pages", "import", str(har_file), "--name", "trip"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "note:" not in done.stderr, done.stderr  # nothing skipped, every body recorded
    (manifest,) = pages.glob("*/manifest.json")
    imported = load_page(manifest.parent)
    loaded = resolve_page(MIXED_PAGE)

    def described(page: Any) -> dict[str, tuple[int, str, bytes]]:
        return {
            url_for(r, "h2s"): (r.status, r.content_type, page.body_file(r).read_bytes())
            for r in page.resources
        }

    want, got = described(loaded), described(imported)
    kinds = sorted({ct.split(";")[0] for _, ct, _ in want.values()})
    print(f"{len(want)} resources ({', '.join(kinds)}), {sum(len(b) for *_, b in want.values())} B")
    assert set(got) == set(want)
    for url, (status, content_type, body) in want.items():
        assert got[url][:2] == (status, content_type), url
        assert got[url][2] == body, f"{url}: {len(got[url][2])} B imported, {len(body)} B served"
    assert url_for(imported.entry, "h2s") == url_for(loaded.entry, "h2s")
    assert {"text/html", "text/css", "image/png"} <= set(kinds)
