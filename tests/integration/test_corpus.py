"""Issue #5: the four WARC pages of the corpus load in Chromium through the lab over h1s and
h2s, served from the replay, and their final screenshot is not blank."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from PIL import Image

from h2lab.metrics.visual import histogram
from h2lab.pages import resolve_page
from tests.integration.conftest import ROOT, run_experiment

WARCS = ("wikipedia", "baidu", "reddit", "yahoo")


def _network_requests(db: sqlite3.Connection, trial_id: int) -> list[tuple[str, int]]:
    """The page's requests over the network: data: URLs are not requests, and the favicon
    is fetched by the browser for its tab, not by the page (and the recording browser,
    Servo, fetched none)."""
    rows = db.execute("SELECT url, status FROM resources WHERE trial_id = ?", (trial_id,))
    return [(u, s) for u, s in rows if u.startswith("http") and "favicon" not in u]


def test_corpus_warcs_load_in_chromium_from_the_replay(tmp_path: Path) -> None:
    pages = [f"warc:{ROOT / 'corpus' / 'warc' / f'{w}.warc.gz'}" for w in WARCS]
    out = tmp_path / "out"
    records = run_experiment(
        out, "corpus", {"protocol": ["h1s", "h2s"], "network": ["cable"], "page": pages,
                        "client": ["chromium:idle=2s,filmstrip=1"]},
        seed=1, repetitions=1,
    )  # fmt: skip
    assert len(records) == 8 and all(r.status == "ok" for r in records), [
        (r.page, r.protocol, r.error) for r in records if r.status != "ok"
    ]
    db = sqlite3.connect(out / "results.sqlite")
    lines = []
    for r in records:
        page = resolve_page(r.page)
        requests = _network_requests(db, r.id or 0)
        answered = [u for u, s in requests if (m := page.match("GET", u)) and s == m.status]
        used = {page.match("GET", u) for u in answered}
        share = len(answered) / len(requests)
        lines.append(
            f"{page.name:9s} {r.protocol}: {len(answered)}/{len(requests)} requests answered "
            f"from the recording ({100 * share:.1f}%); recorded responses used "
            f"{len(used)}/{len(page.resources)}; plt {r.plt_ms:.0f} ms, "
            f"SpeedIndex {r.speed_index_ms:.0f} ms"
        )
        assert share >= 0.9, lines[-1]
        assert r.speed_index_ms is not None and r.speed_index_ms > 0  # something was painted
        strip = sorted((out / "artifacts").glob(f"*{page.name}*_{r.protocol}.1/filmstrip/*.jpg"))
        assert strip, f"no filmstrip for {page.name} {r.protocol}"
        # non-white pixels of the last frame (histograms leave white out; JPEGs are decoded at
        # 1/16 of their pixels): at least 1% of the frame, baidu's sparse page has 5.6%
        with Image.open(strip[-1]) as img:
            pixels = img.width * img.height / 16
        painted = sum(histogram(strip[-1].read_bytes())[0])
        assert painted >= 0.01 * pixels, f"{page.name} {r.protocol}: final screenshot is blank"
        lines[-1] += f"; final frame {100 * painted / pixels:.1f}% painted"
    print("\n".join(lines))
