"""haproxy@3.0: TLS and QUIC terminated per origin, every request to the backend over h2c."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from h2lab.errors import SpecError
from h2lab.servers import get as get_server
from h2lab.servers import haproxy3
from h2lab.servers.quic import QuicTotals
from h2lab.spec.protocols import H3, TCP_PROTOCOLS

IPS = {"a.test": "10.2.0.1", "b.test": "10.2.0.2"}
BACKENDS = {"a.test": "127.100.0.1", "b.test": "127.100.0.2"}


def test_each_origin_gets_its_four_listeners_and_certificate() -> None:
    certs = {h: Path(f"/srv/{h}.pem") for h in IPS}
    conf = haproxy3.render_config(IPS, BACKENDS, certs, "1.2", "/srv/haproxy.pid")
    assert "limited-quic" in conf and "mode http" in conf  # QUIC over OpenSSL's compat layer
    for k, (host, ip) in enumerate(IPS.items(), start=1):
        front = conf[conf.index(f"frontend f{k}") :].split("backend b", 1)[0]
        assert f"bind {ip}:80\n" in front and f"bind {ip}:8080 proto h2" in front
        assert f"bind quic4@{ip}:443 ssl crt /srv/{host}.pem alpn h3" in front
        tcp = f"bind {ip}:443 ssl crt /srv/{host}.pem ssl-min-ver TLSv1.2 ssl-max-ver TLSv1.2"
        assert f"{tcp} alpn h2,http/1.1" in front
        assert f"server backend {BACKENDS[host]}:8080 proto h2" in conf
    assert conf.count("frontend ") == len(IPS)


def test_cc_sets_quic_cc_algo_on_every_quic_listener() -> None:
    certs = {h: Path(f"/srv/{h}.pem") for h in IPS}
    conf = haproxy3.render_config(IPS, BACKENDS, certs, "1.3", "/p", quic_cc="newreno")
    assert conf.count("alpn h3 quic-cc-algo newreno\n") == len(IPS)
    assert "quic-cc-algo" not in haproxy3.render_config(IPS, BACKENDS, certs, "1.3", "/p")
    server = get_server("haproxy@3.0:backend=nginx,cc=cubic")
    assert isinstance(server, haproxy3.Haproxy3) and server.quic_cc == "cubic"


def test_the_level_serves_h3_and_forwards_over_h2c() -> None:
    server = get_server("haproxy@3.0:backend=nginx")
    assert server.name == "haproxy@3.0" and server.protocols == TCP_PROTOCOLS | {H3}


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ("haproxy@3.0", "haproxy@3.0 needs backend="),
        ("haproxy@3.0:backend=nginx,buffer=1MB", r"no option 'buffer' \(haproxy@3.0 takes"),
        ("haproxy@3.0:backend=haproxy@3.0", "cannot have HAProxy as its backend"),
        ("haproxy@3.0:backend=nosuch", "unknown server 'nosuch'"),
        ("haproxy@3.0:backend=nginx,cc=bbr", "cc: expected one of cubic, newreno, got 'bbr'"),
    ],
)
def test_bad_specs_name_the_reason(spec: str, reason: str) -> None:
    with pytest.raises(SpecError, match=reason):
        get_server(spec)


def _block(pointer: str, scid: str, sent: int, lost: int, cubic: bool, thread: int = 0) -> str:
    """One connection as HAProxy 3.0's ``show quic full`` prints it (its format strings)."""
    lines = [
        f"* {pointer}[{thread:02}]: scid={scid}{'..' * (20 - len(scid) // 2)} dcid=0102..",
        "  loc. TPs: odcid=c0ffee iscid=ab",
        "  rem. TPs: iscid=cd",
        "  st=opened           mux=ready                                     expire=29s ",
        "  fd=-1               local_addr=10.2.0.1:443 foreign_addr=10.1.0.2:40000",
        "  [01rtt]             rx.ackrng=1      tx.inflight=0     ",
        f"  srtt=20   rttvar=5    rttmin=20   ptoc=0    cwnd=38400  mcwnd=40000  "
        f"sentpkts={sent:<6} lostpkts={lost:<6} reorderedpkts=0     ",
    ]
    if cubic:
        lines.append("  cc: state=ca ssthresh=4294967295 K=0 last_w_max=0 wdiff=0")
    return "\n".join(lines) + "\n  | stream=0        off=12       ack=12      \n\n"


def test_show_quic_gives_each_connections_counts_and_whether_it_ran_cubic() -> None:
    text = _block("0x7f01", "aa01", 120, 3, True) + _block("0x7f02", "aa02", 7, 0, False)
    found = haproxy3.parse_show_quic(text)
    assert found == {
        "aa01": haproxy3.Connection(120, 3, cubic=True),
        "aa02": haproxy3.Connection(7, 0, cubic=False),
    }
    assert haproxy3.parse_show_quic("") == {}
    # a block cut before its counts (the answer's bound) is left out, not guessed
    assert haproxy3.parse_show_quic(text[: text.index("sentpkts=7")]).keys() == {"aa01"}


def test_the_ledger_sums_every_connection_seen_and_names_the_algorithm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = iter([
        "",  # before the load: no connection
        _block("0x1", "01", 50, 1, False),
        _block("0x1", "01", 90, 2, False) + _block("0x2", "02", 10, 0, False),
        _block("0x2", "02", 30, 1, False),  # the first freed: its last counts kept
        None,  # the socket gone
    ])  # fmt: skip
    ledger = haproxy3.HaproxyLedger(tmp_path)
    monkeypatch.setattr(ledger, "_ask", lambda: next(answers))
    totals = [ledger.totals() for _ in range(5)]
    assert [(t.connections, t.sent_packets, t.lost_packets, t.cc) if t else None
            for t in totals] == [
        (0, 0, 0, ""), (1, 50, 1, "newreno"), (2, 100, 2, "newreno"), (2, 120, 3, "newreno"),
        None,
    ]  # fmt: skip
    certs = {h: Path(f"/srv/{h}.pem") for h in IPS}
    conf = haproxy3.render_config(IPS, BACKENDS, certs, "1.3", "/p", stats_socket="/s/c.sock")
    assert "\n    stats socket /s/c.sock mode 600 level admin\n" in conf


def _watch_until(
    ledger: haproxy3.HaproxyLedger, read: Callable[[dict[str, haproxy3.Connection]], bool]
) -> None:
    """A load: the ledger watches until ``read(ledger.seen)`` (its polls have seen what the test
    needs)."""
    ledger.watch()
    deadline = time.monotonic() + 5
    while not read(ledger.seen):
        assert time.monotonic() < deadline, "the watch never read"
        time.sleep(0.01)
    ledger.unwatch()


def test_a_watch_during_the_load_sees_a_connection_freed_before_the_reading_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = iter(["", _block("0x9", "09", 40, 2, True)])  # then freed: listed no more
    ledger = haproxy3.HaproxyLedger(tmp_path)
    monkeypatch.setattr(ledger, "_ask", lambda: next(answers, ""))
    assert ledger.totals() == QuicTotals(0, 0, 0, cc="")
    _watch_until(ledger, bool)
    # its algorithm is known; its counts are not whole (its last packets unread): None
    assert ledger.totals() == QuicTotals(1, None, None, cc="cubic")
    assert ledger._stop is None


def test_a_connection_moved_to_another_thread_is_one_connection_still_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HAProxy lists a connection under the thread it runs on, and moves it after its handshake
    (seen in a Chromium load on a saturated host: ``[00]``, then ``[01]``, the same pointer and
    source connection id): its counts are whole and counted once."""
    answers = iter(["", _block("0x9", "09", 5, 0, False, thread=0)])
    ledger = haproxy3.HaproxyLedger(tmp_path)
    moved = _block("0x9", "09", 400, 0, False, thread=1)
    monkeypatch.setattr(ledger, "_ask", lambda: next(answers, moved))
    assert ledger.totals() == QuicTotals(0, 0, 0, cc="")
    _watch_until(ledger, bool)
    assert ledger.totals() == QuicTotals(1, 400, 0, cc="newreno")


def test_an_earlier_trials_connection_freed_during_the_load_leaves_the_counts_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """h3-field stored no counts in 6 of 16 HAProxy loads, mostly the first load of one browser
    after another's: the earlier browser's connection, idle, freed during the load. One that
    moved nothing while watched takes nothing from the trial's counts; one that moved does."""
    old = _block("0x1", "01", 50, 1, False)
    for last_of_old, whole in ((50, True), (53, False)):
        last = _block("0x1", "01", last_of_old, 1, False) + _block("0x2", "02", 90, 0, False)
        answers = iter([old, old + _block("0x2", "02", 20, 0, False), last])
        ledger = haproxy3.HaproxyLedger(tmp_path)
        end = _block("0x2", "02", 120, 0, False)
        monkeypatch.setattr(ledger, "_ask", lambda a=answers, e=end: next(a, e))
        assert ledger.totals() == QuicTotals(1, 50, 1, cc="newreno")
        _watch_until(ledger, lambda seen: "02" in seen and seen["02"].sent_packets == 120)
        after = ledger.totals()
        assert after is not None and after.connections == 2
        assert (after.sent_packets, after.lost_packets) == (
            ((50 + 120), 1) if whole else (None, None)
        )
