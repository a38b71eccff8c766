"""The lab's resolver (issue #54): Unbound in the servers namespace, across the link. It answers
every lab origin's name and NXDOMAIN for any other name in one round trip of the link, where
the machine's resolver, unreachable from the client namespace, made Firefox wait 10-20 s for
each host a capture lacks."""

from __future__ import annotations

import socket
import sqlite3
import statistics
import struct
import subprocess
import time
from pathlib import Path

import pytest

from h2lab.artifacts import DNS_LOOKUPS
from h2lab.net import netns
from h2lab.net.dns import DNS_IP, DNS_LOG, answers
from h2lab.net.lab import Lab
from h2lab.pages.manifest import PageWriter
from h2lab.results import TrialRecord
from h2lab.spec.network import parse_network
from h2lab.spec.tcp import TcpSettings
from h2lab.store.sqlite import Store
from tests.integration.conftest import run_experiment

ORIGIN = "o1.h2lab.test"
RTT_MS = 100.0
MAX_FAILURE_MS = 1000.0
"""Far below what a lost query costs (glibc asks again after 5 s) and Firefox's 10-20 s DNS
timeout, far above a second round trip: what every single failure must stay under."""
NXDOMAIN = 3
LOOKUPS = 5


BELOW_RTT_MS = 2.0
"""How far under the link's round trip a measured one may be: Rattan's delays have its own
latency taken off (net/calibration.py), an estimate; one lookup took 99.93 ms at 100 ms beside
three lanes (fresh clone bf2cb97). ``net check`` holds round trips to 2 ms as well."""


def _assert_one_round_trip(ms: list[float]) -> None:
    assert all(m >= RTT_MS - BELOW_RTT_MS for m in ms) and min(ms) < RTT_MS + 50, ms


def _query(name: str, qtype: int = 1) -> bytes:
    """A DNS query for ``name`` (A by default), recursion desired, id 0x4242."""
    labels = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    return (
        struct.pack("!HHHHHH", 0x4242, 0x0100, 1, 0, 0, 0) + labels + struct.pack("!HH", qtype, 1)
    )


def _ask(client_ns: str, name: str) -> tuple[int, bytes, float]:
    """(rcode, the answer's last 4 bytes, ms) of an A query from ``client_ns`` to the lab's
    resolver."""

    def ask() -> tuple[int, bytes, float]:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(5)
            t0 = time.perf_counter()
            s.sendto(_query(name), (DNS_IP, 53))
            reply = s.recv(512)
            ms = (time.perf_counter() - t0) * 1000
        return struct.unpack_from("!H", reply, 2)[0] & 0xF, reply[-4:], ms

    return netns.run_in_netns(client_ns, ask)


@pytest.mark.timing  # a lookup within 50 ms of the link's round trip
def test_origins_are_answered_and_other_names_refused_in_one_round_trip() -> None:
    profile = parse_network(f"rtt={RTT_MS:g}ms")
    with Lab((ORIGIN,)) as lab, lab.link(profile, 1, TcpSettings()) as link:
        # each lookup at least a round trip, and the quickest of five within 50 ms of one: a
        # second round trip would be 100 ms more, where a busy machine adds a few tens to one
        # lookup in several (154.9 ms once beside three lanes)
        asked = [_ask(link.client_ns, ORIGIN) for _ in range(LOOKUPS)]
        for rcode, address, _ in asked:
            assert rcode == 0 and socket.inet_ntoa(address) == lab.origin_ips[ORIGIN], asked
        _assert_one_round_trip([ms for *_, ms in asked])
        missing = [f"cdn{k}.not-in-the-capture.example" for k in range(LOOKUPS)]
        asked = [_ask(link.client_ns, name) for name in missing]
        assert all(rcode == NXDOMAIN for rcode, *_ in asked), asked
        _assert_one_round_trip([ms for *_, ms in asked])
        # a program of the client namespace asks it through the namespace's resolv.conf: a name
        # the lab lacks fails in a round trip, not after the machine resolver's timeouts
        t0 = time.perf_counter()
        looked = subprocess.run(
            netns.exec_argv(link.client_ns, ["getent", "ahostsv4", "beacon.missing.example"]),
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        took_ms = (time.perf_counter() - t0) * 1000
        assert looked.returncode == 2 and took_ms < 1000, (looked, took_ms)
        # the lab's names come from its hosts file, without a lookup over the link
        found = subprocess.run(
            netns.exec_argv(link.client_ns, ["getent", "ahostsv4", ORIGIN]),
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert found.stdout.split()[0] == lab.origin_ips[ORIGIN], found
        log = (lab.dns.folder / DNS_LOG).read_text()
    print(log)
    said = [(a.name, a.qtype, a.rcode) for a in answers(log)]
    assert said == [
        *[(f"{ORIGIN}.", "A", "NOERROR")] * LOOKUPS,  # the queries sent to it directly
        *[(f"{name}.", "A", "NXDOMAIN") for name in missing],
        ("beacon.missing.example.", "A", "NXDOMAIN"),  # once: no search domain after it
    ]


MAIN = "www.h2lab.test"
MISSING = tuple(f"t{k}.not-captured.example" for k in range(10))


def _pages(root: Path) -> tuple[Path, Path]:
    """The same page without and with 10 references to hosts no capture holds, one of them a
    script in <head> that blocks the parser."""
    docroots = []
    for name, missing in (("plain", ()), ("missing", MISSING)):
        head = f"<script src='https://{missing[0]}/tag.js'></script>" if missing else ""
        images = "".join(f"<img src='https://{host}/p.gif'>" for host in missing[1:])
        html = (
            f"<!doctype html><html><head><link rel=icon href='data:,'>{head}</head><body>"
            f"<p>page</p><img src='/a.png'>{images}<script src='/app.js'></script></body></html>"
        )
        with PageWriter(name, root=root / name) as w:
            w.add(f"https://{MAIN}/", html.encode(), content_type="text/html")
            w.add(f"https://{MAIN}/a.png", b"\x89PNG" + bytes(20_000), content_type="image/png")
            w.add(f"https://{MAIN}/app.js", b"/* app */" * 2_000, content_type="text/javascript")
            docroots.append(w.commit(f"https://{MAIN}/").docroot)
    return docroots[0], docroots[1]


def _page_of(r: TrialRecord) -> str:
    return "missing" if "/missing/" in str(r.cell["page"]) else "plain"


# page times within a round trip, failures within 50 ms of round trips: beside four lanes the
# browsers asked late (a script 171 ms, an image 308 ms at 100 ms), so it runs alone
def _looked_up(out: Path, r: TrialRecord) -> list[str]:
    """The names the lab's resolver answered during trial ``r`` (its artifacts' lookups)."""
    kept = Store(out).artifacts_dir(r.trial_key, r.attempt) / DNS_LOOKUPS
    if not kept.exists():
        return []
    return [line.split("\t")[1].rstrip(".") for line in kept.read_text().splitlines()[1:]]


@pytest.mark.alone
def test_hosts_a_capture_lacks_fail_in_a_round_trip_in_both_browsers(tmp_path: Path) -> None:
    plain, missing = _pages(tmp_path / "pages")
    out = tmp_path / "out"
    records = run_experiment(
        out, "missing-hosts",
        {"protocol": ["h2s"], "network": [f"rtt={RTT_MS:g}ms,rate=20Mbps"],
         "page": [str(plain), str(missing)], "server": ["nginx"],
         "client": ["chromium", "firefox"]},
        seed=3, repetitions=3,
    )  # fmt: skip
    assert all(r.status == "ok" for r in records), [r.error for r in records if r.error]
    db = sqlite3.connect(out / "results.sqlite")
    for client in ("chromium", "firefox"):
        took: dict[str, list[float]] = {"script": [], "image": []}
        plts = {
            page: sorted(
                r.plt_ms or 0.0
                for r in records
                if r.cell["client"] == client and _page_of(r) == page
            )
            for page in ("plain", "missing")
        }
        # told from each page's fastest trial: a busy host only adds time (CI, the alone lane
        # sharing the cores with the unit tests: medians of 3, 607 and 781 ms, once)
        plt = {page: times[0] for page, times in plts.items()}
        print(f"{client}: plt without {plts['plain']} ms, with 10 missing hosts "
              f"{plts['missing']} ms")  # fmt: skip
        assert plt["missing"] <= max(1.1 * plt["plain"], plt["plain"] + RTT_MS), plts
        for r in records:
            if r.cell["client"] != client:
                continue
            # Firefox asks each missing name once over the link, the lab's own names never;
            # Chromium answers every name itself
            looked = _looked_up(out, r)
            print(client, _page_of(r), r.dns_lookups, r.dns_nxdomain, looked)
            assert r.dns_lookups == len(looked) and r.dns_nxdomain == len(looked)
            asked = set(MISSING) if client == "firefox" and _page_of(r) == "missing" else set()
            assert sorted(looked) == sorted(asked), (client, looked)
            if _page_of(r) != "missing":
                continue
            rows = db.execute(
                "SELECT url, start_ms, end_ms, error FROM resources WHERE trial_id = ?", (r.id,)
            ).fetchall()
            failed = [row for row in rows if "not-captured" in row[0]]
            print(client, [(u.split("/")[2], round(e - s, 1), err) for u, s, e, err in failed])
            assert {u.split("/")[2] for u, *_ in failed} == set(MISSING), rows
            for url, start, end, error in failed:
                assert error and end - start <= MAX_FAILURE_MS, (client, url, start, end)
                took["image" if url.endswith(".gif") else "script"].append(end - start)
        # Firefox: the blocking script in <head> in one round trip, the images in two (each
        # name is asked once, its lookup answered in one: 202-258 ms at 100 ms, idle; the
        # images' lookups wait a round trip in Firefox before they are sent). Medians over the
        # trials: one failure of 30 was held up 80 ms once, alone (a fresh clone's suite)
        for kind, times in took.items():
            rtts, slack_ms = (2, 100) if client == "firefox" and kind == "image" else (1, 50)
            median = statistics.median(times)
            print(f"{client} {kind}: failed after {median:.0f} ms (median of {len(times)}), "
                  f"at most {max(times):.0f}")  # fmt: skip
            assert median <= rtts * RTT_MS + slack_ms, (client, kind, sorted(times))
