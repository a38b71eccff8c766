"""The lab's resolver's configuration: an A record per origin name, NXDOMAIN for every other
name (it never recurses), nothing of the host's, and the client's resolv.conf naming it."""

from __future__ import annotations

import struct
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from h2lab.net.dns import (
    DNS_IP,
    DNS_LOG,
    SERIAL_NAME,
    TXT,
    Answer,
    Lookups,
    answers,
    resolv_conf,
    txt_strings,
    unbound_conf,
)
from h2lab.net.lab import MAX_ORIGINS, ORIGIN_NET, PROBE_IP


def test_every_origin_has_its_record_and_every_other_name_none(tmp_path: Path) -> None:
    conf = unbound_conf(tmp_path, {"b.example": "10.2.0.2", "a.example": "10.2.0.1"})
    lines = [ln.strip() for ln in conf.splitlines()]
    assert lines[0] == "server:"
    records = [ln for ln in lines if ln.startswith("local-data:")]
    assert records == [
        'local-data: "a.example. 3600 IN A 10.2.0.1"',
        'local-data: "b.example. 3600 IN A 10.2.0.2"',
        f'local-data: "{SERIAL_NAME} 0 IN TXT 0"',
    ]
    assert 'local-zone: "." static' in lines  # NXDOMAIN for the rest, no recursion
    assert f"interface: {DNS_IP}" in lines and "port: 53" in lines
    assert 'username: ""' in lines and 'chroot: ""' in lines  # runs as whoever started it
    assert f'logfile: "{tmp_path / DNS_LOG}"' in lines
    assert "log-queries: yes" in lines and "log-replies: yes" in lines
    assert "control-enable: no" in lines
    assert "include" not in conf and "trust-anchor" not in conf  # nothing of the host's


def test_https_records_for_the_h3_origins_with_an_address_only(tmp_path: Path) -> None:
    records = {"b.example": "10.2.0.2", "a.example": "10.2.0.1"}
    conf = unbound_conf(tmp_path, records, https={"b.example", "no-address.example"}, serial=7)
    lines = [ln.strip() for ln in conf.splitlines() if "local-data:" in ln]
    assert 'local-data: "b.example. 3600 IN HTTPS 1 . alpn=h3,h2"' in lines
    assert not any("HTTPS" in ln and ("a.example" in ln or "no-address" in ln) for ln in lines)
    assert lines[-1] == f'local-data: "{SERIAL_NAME} 0 IN TXT 7"'


def _txt_answer(qname: bytes, strings: list[bytes]) -> bytes:
    rdata = b"".join(bytes([len(x)]) + x for x in strings)
    head = struct.pack("!HHHHHH", 1, 0x8180, 1, 1, 0, 0)
    question = qname + struct.pack("!HH", TXT, 1)
    answer = b"\xc0\x0c" + struct.pack("!HHIH", TXT, 1, 0, len(rdata)) + rdata
    return head + question + answer


def test_the_serial_is_read_from_a_txt_answer_and_nothing_else() -> None:
    qname = b"\x06serial\x09h2lab-dns\x00"
    assert txt_strings(_txt_answer(qname, [b"12"])) == [b"12"]
    assert txt_strings(_txt_answer(qname, [b"1", b"2"])) == [b"1", b"2"]
    assert txt_strings(_txt_answer(qname, [b"12"])[:-5]) in ([], [b"1"])  # cut short
    assert txt_strings(b"") == [] and txt_strings(b"\0" * 12) == []


@given(st.binary(max_size=600))
def test_a_hostile_answer_never_raises(message: bytes) -> None:
    assert isinstance(txt_strings(message), list)


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
        f"[1795911531] unbound[20939:0] info: 10.2.0.253 {SERIAL_NAME} TXT IN NOERROR 0.0 1 60\n"
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
