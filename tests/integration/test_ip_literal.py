"""Issue #31: an origin named by an IPv4 literal (a beacon at ``https://192.0.2.10/``) is served
at its own address: the servers namespace owns it, its certificate has an IP SAN, and the
client reaches it by routing, with no resolver rule, from Chromium and h2load alike."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from h2lab.pages.manifest import PageWriter
from tests.integration.conftest import run_experiment

MAIN, LITERAL = "www.h2lab.test", "192.0.2.10"


def test_an_ip_literal_origin_is_served_at_its_own_address(tmp_path: Path) -> None:
    with PageWriter("literal", root=tmp_path / "pages") as w:
        w.add(
            f"https://{MAIN}/",
            f"<!doctype html><link rel=icon href='data:,'><p>page</p>"
            f"<img src='https://{LITERAL}/b.gif?t=1'>"
            f"<script src='https://{LITERAL}/s.js'></script>".encode(),
            content_type="text/html",
        )
        w.add(f"https://{LITERAL}/b.gif?t=1", b"GIF89a" + bytes(1_000), content_type="image/gif")
        w.add(f"https://{LITERAL}/s.js", b"/* s */" * 500, content_type="text/javascript")
        page = w.commit(f"https://{MAIN}/")
    assert page.origins == (MAIN, LITERAL)
    out = tmp_path / "out"
    records = run_experiment(
        out, "literal", {"protocol": ["h1s", "h2s"], "network": ["rtt=20ms"],
                         "page": [str(page.docroot)], "server": ["nginx", "origin"],
                         "client": ["chromium", "h2load"]},
        seed=1, repetitions=1,
    )  # fmt: skip
    assert len(records) == 8 and all(r.status == "ok" for r in records), [
        (r.cell.describe(), r.protocol, r.error) for r in records if r.status != "ok"
    ]
    db = sqlite3.connect(out / "results.sqlite")
    for r in records:
        rows = dict(
            db.execute(
                "SELECT url, bytes FROM resources WHERE trial_id = ? AND status = 200", (r.id,)
            ).fetchall()
        )
        print(f"{r.cell['server']} {r.cell['client']} {r.protocol}: {sorted(rows.items())}")
        assert rows[f"https://{LITERAL}/b.gif?t=1"] == 1_006, (r.cell.describe(), rows)
        assert rows[f"https://{LITERAL}/s.js"] == 3_500, (r.cell.describe(), rows)
