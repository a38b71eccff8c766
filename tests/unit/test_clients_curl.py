"""curl as the lab's h3 page download: its transfers as resource rows, pdt from the earliest
request to the latest response end, a failed transfer a failed trial."""

from __future__ import annotations

from pathlib import Path

import pytest

from h2lab import debian13
from h2lab.clients import curl
from h2lab.errors import TrialFailed
from h2lab.pages import Page
from h2lab.pages.manifest import PageWriter
from h2lab.spec.protocols import url_for


@pytest.fixture
def page(tmp_path: Path) -> Page:
    with PageWriter("curl-test", root=tmp_path / "pages") as w:
        w.add("https://a.test/", b"<html></html>", content_type="text/html")
        w.add('https://a.test/q"x.css', b"a{}", content_type="text/css")
        w.add("https://b.test/i.png", b"\x89PNG" * 100, content_type="image/png")
        return w.commit("https://a.test/")


def _line(url: str, pre: float, first: float, total: float, **kw: str) -> str:
    values = {
        "http_version": "3", "response_code": "200", "size_download": "400",
        "time_connect": "0", "time_appconnect": "0.030", "time_pretransfer": f"{pre}",
        "time_starttransfer": f"{first}", "time_total": f"{total}", "exitcode": "0",
        "url_effective": url, "errormsg": "",
    }  # fmt: skip
    values.update(kw)
    return "h2lab\t" + "\t".join(values[f] for f in curl.FIELDS)


def test_transfers_become_rows_from_the_first_request(page: Page) -> None:
    urls = [url_for(r, "h3") for r in page.resources]
    said = "\n".join(
        [
            _line(urls[0], 0.031, 0.052, 0.053, size_download="13"),
            "curl: (56) a line that is not a transfer",
            _line(urls[1], 0.032, 0.060, 0.061, size_download="3"),
            _line(urls[2], 0.041, 0.070, 0.090, errormsg="tab\tin it"),
        ]
    )
    done = curl.transfers(said)
    assert len(done) == 3 and done[2]["errormsg"] == "tab\tin it"
    result = curl.result_of(page, "h3", done)
    assert result.pdt_ms == pytest.approx(59.0)  # 0.090 - 0.031 s
    assert result.connect_ms == pytest.approx(30.0) and result.ttfb_ms == pytest.approx(52.0)
    assert result.body_bytes == 13 + 3 + 400
    assert (
        result.resources[0].url,
        result.resources[0].protocol,
        result.resources[0].start_ms,
    ) == (
        urls[0],
        "h3",
        0.0,
    )
    assert {r.connection for r in result.resources} == {"a.test#0", "b.test#0"}


def test_a_failed_or_missing_transfer_fails_the_trial(page: Page) -> None:
    urls = [url_for(r, "h2s") for r in page.resources]
    ok = [_line(u, 0.01, 0.02, 0.03) for u in urls]
    with pytest.raises(TrialFailed, match="curl reported 2 of 3 transfers"):
        curl.result_of(page, "h2s", curl.transfers("\n".join(ok[:2])))
    bad = [*ok[:2], _line(urls[2], 0.01, 0.0, 0.5, exitcode="28", errormsg="timed out")]
    with pytest.raises(TrialFailed, match=r"i\.png: timed out"):
        curl.result_of(page, "h2s", curl.transfers("\n".join(bad)))
    gone = [*ok[:2], _line(urls[2], 0.01, 0.02, 0.03, response_code="404")]
    with pytest.raises(TrialFailed, match="status 404"):
        curl.result_of(page, "h2s", curl.transfers("\n".join(gone)))


def test_the_config_quotes_every_url_and_discards_bodies(page: Page) -> None:
    text = curl.config_text(page, "h3")
    assert text.count('output = "/dev/null"') == len(page.resources)
    assert 'url = "https://a.test/q\\"x.css"' in text


def test_h3_is_quic_only_and_every_transfer_starts_at_once(
    page: Page, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("H2LAB_CACHE", str(tmp_path))
    debian13.root().mkdir()
    (debian13.root() / debian13.READY).write_text("curl 8.14.1\n")
    argv = curl.argv_for(page, "h3", "c.cfg", "/ca.pem")
    assert argv[:4] == debian13.argv("curl")
    assert "--http3-only" in argv and "--parallel" in argv
    assert argv[argv.index("--parallel-max") + 1] == str(len(page.resources))
    assert argv[argv.index("--cacert") + 1] == "/ca.pem" and "--insecure" not in argv
    assert argv[argv.index("--write-out") + 1] == curl.WRITE_OUT and "%{json}" not in argv
    h2c = curl.argv_for(page, "h2c", "c.cfg", None)
    assert "--http2-prior-knowledge" in h2c and "--insecure" in h2c  # no CA given: no check
