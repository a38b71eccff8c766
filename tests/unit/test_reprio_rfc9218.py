"""h2lab.reprio.rfc9218's pure parts: h3prio's command line and output, what an outcome says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from h2lab.errors import H2LabError
from h2lab.reprio import rfc9218


def _line(path: str, late: bool, ended: float, **kw: object) -> str:
    r = {"url": f"https://{rfc9218.HOST}{path}", "late": late, "requested_ms": 0.0,
         "ended_ms": ended, "status": 200, "bytes": 10, "proto": "HTTP/3.0", **kw}  # fmt: skip
    return json.dumps(r)


def test_h3prio_asks_for_images_then_the_critical_ones_late() -> None:
    argv = rfc9218.h3_argv(Path("/bin/h3prio"), "10.0.0.1")
    assert argv[argv.index("-late") + 1] == "4"
    assert argv[argv.index("-early-priority") + 1] == "u=5, i"
    assert argv[argv.index("-late-after") + 1] == str(rfc9218.LATE_AFTER_BYTES)
    urls = [a for a in argv if a.startswith("https://")]
    assert len(urls) == rfc9218.IMAGES + 4 and urls[-1].endswith("/b.js")


def test_outcome_counts_images_that_ended_before_the_last_critical_one() -> None:
    out = "\n".join(
        [_line("/img/00.jpg", False, 100.0), _line("/img/01.jpg", False, 900.0),
         _line("/a.css", True, 300.0), _line("/b.js", True, 500.0)]
    )  # fmt: skip
    fetched = rfc9218.parse_h3(out)
    assert fetched[2].path == "/a.css" and fetched[2].late
    o = rfc9218.Outcome("origin", "h3", "header", tuple(fetched))
    assert (o.critical_end_ms, o.images_before_critical) == (500.0, 1)
    with pytest.raises(H2LabError, match="10 of 100000"):
        o.check()


def test_an_error_or_a_response_not_over_h3_fails_the_run() -> None:
    with pytest.raises(H2LabError, match="timeout"):
        rfc9218.parse_h3(_line("/a.css", True, 1.0, error="timeout"))
    with pytest.raises(H2LabError, match=r"HTTP/2\.0"):
        rfc9218.parse_h3(_line("/a.css", True, 1.0, proto="HTTP/2.0"))
    with pytest.raises(ValueError, match="h3 by update"):
        rfc9218.run("origin", "h3", Path("/nonexistent"), "update")
