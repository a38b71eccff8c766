"""The lab's resolver's configuration: an A record per origin name, NXDOMAIN for every other
name (it never recurses), nothing of the host's, and the client's resolv.conf naming it."""

from __future__ import annotations

from pathlib import Path

from h2lab.net.dns import DNS_IP, DNS_LOG, Answer, Lookups, answers, resolv_conf, unbound_conf
from h2lab.net.lab import MAX_ORIGINS, ORIGIN_NET, PROBE_IP


def test_every_origin_has_its_record_and_every_other_name_none(tmp_path: Path) -> None:
    conf = unbound_conf(tmp_path, {"b.example": "10.2.0.2", "a.example": "10.2.0.1"})
    lines = [ln.strip() for ln in conf.splitlines()]
    assert lines[0] == "server:"
    records = [ln for ln in lines if ln.startswith("local-data:")]
    assert records == [
        'local-data: "a.example. 3600 IN A 10.2.0.1"',
        'local-data: "b.example. 3600 IN A 10.2.0.2"',
    ]
    assert 'local-zone: "." static' in lines  # NXDOMAIN for the rest, no recursion
    assert f"interface: {DNS_IP}" in lines and "port: 53" in lines
    assert 'username: ""' in lines and 'chroot: ""' in lines  # runs as whoever started it
    assert f'logfile: "{tmp_path / DNS_LOG}"' in lines
    assert "log-queries: yes" in lines and "log-replies: yes" in lines
    assert "control-enable: no" in lines
    assert "include" not in conf and "trust-anchor" not in conf  # nothing of the host's


def test_the_resolver_is_no_origin_and_no_probe() -> None:
    last = int(DNS_IP.removeprefix(ORIGIN_NET))
    assert DNS_IP.startswith(ORIGIN_NET) and last > MAX_ORIGINS and DNS_IP != PROBE_IP


def test_the_client_asks_the_lab_resolver_only() -> None:
    assert resolv_conf() == f"nameserver {DNS_IP}\n"


def test_answers_are_read_from_the_log_and_nothing_else() -> None:
    log = (
        "[1795911530] unbound[20939:0] info: start of service (unbound 1.17.1).\n"
        "[1795911530] unbound[20939:0] info: 10.1.1.1 o1.h2lab.test. A IN\n"
        "[1795911530] unbound[20939:0] info: 10.1.1.1 o1.h2lab.test. A IN NOERROR 0.000000 1 47\n"
        "[1795911531] unbound[20939:0] info: 10.1.1.1 x.example. HTTPS IN NXDOMAIN 0.000000 1 40\n"
        "garbage \x00 line\n"
    )
    assert answers(log) == [
        Answer(1795911530, "10.1.1.1", "o1.h2lab.test.", "A", "NOERROR"),
        Answer(1795911531, "10.1.1.1", "x.example.", "HTTPS", "NXDOMAIN"),
    ]


def test_lookups_are_read_from_the_mark_on_and_from_the_start_of_a_new_log(tmp_path: Path) -> None:
    line = "[1795911530] unbound[1:0] info: 10.1.1.1 {}. A IN NXDOMAIN 0.000000 1 40\n"
    lookups = Lookups(tmp_path)
    assert lookups.mark() is None and lookups.since(None) is None  # no resolver
    lookups.log.write_text(line.format("before"))
    mark = lookups.mark()
    assert lookups.since(mark) == []
    with lookups.log.open("a") as f:
        f.write(line.format("during"))
    assert [a.name for a in lookups.since(mark) or []] == ["during."]
    lookups.log.write_text("")  # the resolver started again: its log is new and shorter
    assert lookups.since(mark) == []
    lookups.log.write_text(line.format("after"))
    assert [a.name for a in lookups.since(mark) or []] == ["after."]
