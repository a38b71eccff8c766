"""RFC 9218 (h2lab.reprio.rfc9218, docs/servers.md "RFC 9218"): on 10 Mbit/s and 100 ms RTT,
30 images of 100 KB at ``u=5, i``, then, once 300 KB of them have arrived, two stylesheets and
two scripts of 150 KB at ``u=0`` (no RFC 7540 weights). The origin's ``rfc9218`` scheduler
(HTTP/2) and quic-go's (HTTP/3) end the four before at least 25 of the 30 images end; ``fcfs``
and round robin end them after every image, over both protocols. The bounds are on the order
of completion, not on times: the tests run beside others.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from h2lab.reprio import rfc9218

AT_MOST_BEFORE = 5
"""images that may end before the critical resources under a scheduler that follows RFC 9218"""


def _one(server: str, protocol: str, how: str, tmp_path: Path) -> rfc9218.Outcome:
    o = rfc9218.run(server, protocol, tmp_path / "pages", how)
    print(o.line())
    return o


@pytest.mark.parametrize(
    ("protocol", "how"), [("h2s", "header"), ("h2s", "update"), ("h3", "header")]
)
def test_rfc9218_scheduler_sends_late_critical_resources_before_the_images(
    protocol: str, how: str, tmp_path: Path
) -> None:
    o = _one("origin:scheduler=rfc9218", protocol, how, tmp_path)
    assert o.images_before_critical <= AT_MOST_BEFORE


@pytest.mark.parametrize("scheduler", ["fcfs", "rr"])
@pytest.mark.parametrize("protocol", ["h2s", "h3"])
def test_fcfs_and_rr_send_them_after_the_images(
    scheduler: str, protocol: str, tmp_path: Path
) -> None:
    o = _one(f"origin:scheduler={scheduler}", protocol, "header", tmp_path)
    assert o.images_before_critical > AT_MOST_BEFORE
