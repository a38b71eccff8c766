"""The ngtcp2 adapter's pure parts: which resources it can serve and where they lie, what it
reads back (the algorithm from the running server's command line, the first window from its
qlog), its options."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from h2lab.errors import SpecError
from h2lab.pages.manifest import Resource
from h2lab.servers import get as get_server
from h2lab.servers import ngtcp2


def res(path: str, **kw: object) -> Resource:
    return Resource("o1.h2lab.test", path, 10, "text/css", **kw)  # type: ignore[arg-type]


def test_only_a_plain_get_of_a_plain_path_is_laid_out() -> None:
    assert str(ngtcp2.file_path(res("/a/b.css"))) == "a/b.css"
    assert str(ngtcp2.file_path(res("/"))) == "index.html"
    assert str(ngtcp2.file_path(res("/shop/"))) == "shop/index.html"
    for bad in (
        res("/../etc/passwd"), res("/a/./b"), res("/a//b"), res("/a/.."), res("/x\0y"),
        res("/" + "a" * 256), res("/q", query="x=1"), res("/p", method="POST"),
        res("/r", status=301),
    ):  # fmt: skip
        assert ngtcp2.file_path(bad) is None, bad


def test_the_first_window_is_the_newest_qlogs_first_metrics(tmp_path: Path) -> None:
    assert ngtcp2.first_window(tmp_path) == 0
    old = tmp_path / "a.sqlog"
    old.write_text(json.dumps({"name": "recovery:metrics_updated",
                               "data": {"congestion_window": 9999}}) + "\n")  # fmt: skip
    os.utime(old, (1, 1))
    new = tmp_path / "b.sqlog"
    first, later = ({"name": "recovery:metrics_updated", "data": {"congestion_window": w}}
                    for w in (12000, 24000))  # fmt: skip
    lines = [{"qlog_format": "JSON-SEQ"}, {"name": "transport:packet_sent", "data": {}},
             "not json", first, later]  # fmt: skip
    new.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    assert ngtcp2.first_window(tmp_path) == 12000


def test_the_algorithm_is_the_running_servers_word() -> None:
    me = os.getpid()  # pytest's command line has no --cc=
    assert ngtcp2.ran_cc([me]) == ""
    assert ngtcp2.ran_cc([2**22 + 12345]) == ""  # gone


def test_options_name_ngtcp2s_algorithms() -> None:
    assert get_server("ngtcp2:cc=bbr").cc == "bbr"  # type: ignore[attr-defined]
    assert get_server("ngtcp2").cc == ""  # type: ignore[attr-defined]
    assert ngtcp2.CCS == {"cubic": "cubic", "newreno": "reno", "bbr": "bbr"}
    with pytest.raises(SpecError, match="cc: expected one of cubic, newreno, bbr, got 'vegas'"):
        get_server("ngtcp2:cc=vegas")
