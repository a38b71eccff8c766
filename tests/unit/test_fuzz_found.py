"""What fuzzing found (fuzz/, docs/fuzzing.md), each kept as a regression test with the input
that found it, cut down."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from fuzz.targets import TARGETS
from h2lab.cluster.transfer import unpack
from h2lab.errors import H2LabError, SpecError, one_line
from h2lab.pages.importers.httphead import read_head
from h2lab.pages.manifest import load_page
from h2lab.spec.experiment import load_experiment
from h2lab.spec.network import parse_network


def test_control_characters_in_an_input_never_break_the_error_line() -> None:
    """network: ``los\\0\\0\\r\\0s`` was echoed raw into the error line."""
    with pytest.raises(SpecError) as info:
        parse_network("los\x00\x00\r\x00s", "fuzz")
    line = info.value.line()
    assert "\\x00\\x00\\r\\x00" in line and "\r" not in line and "\x00" not in line


def test_a_long_input_is_cut_in_the_middle_of_the_line() -> None:
    """page-spec: 3,000 NULs made a 12,000-character line."""
    line = one_line("start " + "x" * 5000 + " end")
    assert len(line) < 1100 and line.startswith("start ") and line.endswith(" end")
    assert "characters" in line
    TARGETS["page-spec"].run(b"\x00" * 3000)


def test_an_experiment_file_that_is_not_utf8_is_refused_by_line(tmp_path: Path) -> None:
    """experiment: a byte 0xbb raised UnicodeDecodeError past the CLI."""
    path = tmp_path / "e.toml"
    path.write_bytes(b'[factors]\nprotocol = ["h2s"]\n# \xbb\n')
    with pytest.raises(SpecError, match=r"e.toml: line 3: not UTF-8 text"):
        load_experiment(path)


def test_a_header_value_with_a_bare_cr_or_nul_is_dropped_with_a_note() -> None:
    """http-head: ``Transfer-Encoding: chunked\\r\\xff...`` was kept with its CR."""
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\xff\x00gzip\r\nX-A: b\r\n\r\nbody"
    head = read_head(io.BytesIO(raw))
    assert head.headers == (("X-A", "b"),)
    assert "control character in the value" in head.dropped_notes("head")[0]


@pytest.mark.parametrize("data", [b"", b"not gzip", b"\x1f\x8b\x08\x00garbage"])
def test_a_page_archive_that_is_not_one_is_one_error(tmp_path: Path, data: bytes) -> None:
    """page-archive: an empty archive raised tarfile.ReadError on the lab node."""
    with pytest.raises(H2LabError, match="archive does not unpack"):
        unpack(data, tmp_path / "page")


def test_a_page_archive_with_too_many_members_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("h2lab.cluster.transfer.MAX_MEMBERS", 3)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for i in range(5):
            info = tarfile.TarInfo(f"f{i}")
            tar.addfile(info, io.BytesIO(b""))
    with pytest.raises(H2LabError, match="more than 3 files"):
        unpack(buf.getvalue(), tmp_path / "page")


def test_browser_messages_that_do_not_parse_are_dropped_and_named() -> None:
    """cdp/bidi: a message without its fields ended the reader thread with a traceback."""
    from tests.unit.test_fuzz_browser import cdp_fault

    fault = cdp_fault(b'not json\0{"sessionId": "s", "method": "Network.requestWillBeSent"}\0')
    assert fault is not None and fault.startswith("a message: JSONDecodeError")


def test_a_hostile_manifest_is_refused_field_by_field(tmp_path: Path) -> None:
    """manifest: a body named by path and an unquoted header name reached server configs."""
    base = {
        "format": "h2lab-page/1",
        "origins": [{"host": "a.test", "scheme": "https"}],
        "entry": "https://a.test/",
        "resources": [
            {"url": "https://a.test/", "method": "GET", "status": 200,
             "content_type": "text/html", "size_bytes": 0, "body_sha256": None},
        ],
    }  # fmt: skip
    cases = [
        ({"size_bytes": 10}, "body_sha256: null, but size_bytes is not 0"),
        ({"headers": [["x always; include /etc/x", "v"]]}, "is not a kept header"),
        ({"headers": [["link", "a\nb"]]}, "control characters"),
        ({"content_type": "text/html;\n return 200"}, "content_type"),
        ({"method": "GET /x"}, "not an HTTP method"),
        ({"url": "https://a.test/a b"}, "path is not printable ASCII"),
        ({"delay_ms": float("nan")}, "delay_ms"),
    ]
    folder = tmp_path / "page"
    folder.mkdir()
    for change, message in cases:
        doc = json.loads(json.dumps(base))
        doc["resources"][0].update(change)
        (folder / "manifest.json").write_text(json.dumps(doc))
        with pytest.raises(SpecError, match=message):
            load_page(folder)
    for host in ("a.test;", "a.test\n", "..", "a/b"):
        doc = json.loads(json.dumps(base))
        doc["origins"][0]["host"] = host
        (folder / "manifest.json").write_text(json.dumps(doc))
        with pytest.raises(SpecError, match="not a host name"):
            load_page(folder)
    (folder / "manifest.json").write_text(json.dumps(base))
    page = load_page(folder)
    assert str(page.body_file(page.entry)) == "/dev/null"  # no body: nothing by path


def test_a_trace_file_past_its_bound_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from h2lab.spec.cellular import TraceError, read_mahimahi

    monkeypatch.setattr("h2lab.spec.cellular.MAX_TRACE_BYTES", 100)
    path = tmp_path / "big.down"
    path.write_text("1\n" * 100)
    with pytest.raises(TraceError, match="larger than 100 bytes"):
        read_mahimahi(path)


def test_deep_nesting_is_one_error_not_a_recursion_error(tmp_path: Path) -> None:
    """experiment: ``a = [[[[...`` 5,000 deep raised RecursionError out of tomllib."""
    path = tmp_path / "deep.toml"
    path.write_text("a = " + "[" * 5000)
    with pytest.raises(SpecError, match="nested too deep"):
        load_experiment(path)
    from tests.unit.test_fuzz_browser import cdp_fault

    fault = cdp_fault(b"[" * 100_000 + b"\0")
    assert fault is not None and "RecursionError" in fault


def test_a_manifest_past_its_bounds_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "page"
    folder.mkdir()
    res = {"url": "https://a.test/", "method": "GET", "status": 200,
           "content_type": "text/html", "size_bytes": 0, "body_sha256": None}  # fmt: skip
    doc = {"format": "h2lab-page/1", "origins": [{"host": "a.test", "scheme": "https"}],
           "entry": "https://a.test/", "resources": [res, res]}  # fmt: skip
    (folder / "manifest.json").write_text(json.dumps(doc))
    monkeypatch.setattr("h2lab.pages.manifest.MAX_MANIFEST_RESOURCES", 1)
    with pytest.raises(SpecError, match="resources: more than 1"):
        load_page(folder)
    monkeypatch.setattr("h2lab.pages.manifest.MAX_MANIFEST_BYTES", 100)
    with pytest.raises(SpecError, match="manifest: larger than 100 bytes"):
        load_page(folder)


@pytest.mark.parametrize("url", ["https://[::1", "https://a.test]/", "http://[x]/"])
def test_a_manifest_url_that_does_not_split_is_one_error(tmp_path: Path, url: str) -> None:
    """manifest: ``https://[::1`` raised ValueError (Invalid IPv6 URL) out of load_page."""
    folder = tmp_path / "page"
    folder.mkdir()
    res = {"url": url, "method": "GET", "status": 200, "content_type": "text/html",
           "size_bytes": 0, "body_sha256": None}  # fmt: skip
    doc = {"format": "h2lab-page/1", "origins": [{"host": "a.test", "scheme": "https"}],
           "entry": url, "resources": [res]}  # fmt: skip
    (folder / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(SpecError, match=r"resources\[0\]\.url: "):
        load_page(folder)


def test_urls_that_do_not_split_from_a_browser_or_the_command_line() -> None:
    """cdp: a request URL ``https://]a.test/x.png`` raised ValueError out of the log's rows;
    ``h2lab record 'https://[::1'`` did too."""
    from h2lab.clients.browser import log as browser_log
    from h2lab.record.log import check_record_url

    log = browser_log.NetworkLog()
    log.add(browser_log.RequestSent("1", "https://]a.test/x.png", 1.0, "High"))
    log.add(browser_log.RequestFinished("1", 2.0, 100))
    (row,) = log.resources(1.0)
    assert row.origin == ""
    (entry,) = log.har("https://a.test/", 0.0, {})["log"]["entries"]
    assert entry["request"]["queryString"] == []
    with pytest.raises(SpecError, match=r"command line: URL: https://\[::1: not a URL"):
        check_record_url("https://[::1")
