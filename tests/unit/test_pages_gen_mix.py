"""h2lab.pages.gen_mix: the Average Web Page (seed 002), HTTP Archive 2024, and inlining."""

from __future__ import annotations

import base64
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from h2lab.errors import SpecError
from h2lab.pages.gen_mix import AWP_DOMAINS, AwpSpec, HaSpec
from h2lab.pages.manifest import Page
from h2lab.pages.synthetic import materialize, parse

KINDS = {
    "text/html": "html",
    "text/css": "css",
    "text/javascript": "js",
    "font/woff2": "font",
    "image/png": "img",
    "application/x-shockwave-flash": "flash",
    "application/json": "other",
}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("H2LAB_CACHE", str(root))
    return root


def kind(ctype: str) -> str:
    return KINDS[ctype.split(";")[0]]


def refs(page: Page) -> set[str]:
    html = page.body_file(page.entry).read_text()
    return set(re.findall(r'(?:src|href)="(//[^"]+)"', html)) | set(
        re.findall(r"url\((//[^)]+)\)", html)
    )


def urls(page: Page) -> set[str]:
    return {f"//{r.origin}{r.path}" for r in page.resources[1:]}


def bytes_by_kind(page: Page) -> Counter[str]:
    out: Counter[str] = Counter()
    for r in page.resources:
        out[kind(r.content_type)] += r.size_bytes
    return out


def test_parse_and_names() -> None:
    assert parse("synthetic:awp") == AwpSpec(inline_bytes=0, seed=0)
    assert parse("synthetic:awp:inline=on").name == "synthetic:awp:inline=4096B"
    ha = parse("synthetic:httparchive2024,origins=4,seed=2")
    assert ha == HaSpec(inline_bytes=0, seed=2, origins=4)
    assert ha.name == "synthetic:httparchive2024:origins=4,seed=2"


@pytest.mark.parametrize(
    ("spec", "field", "reason"),
    [
        ("synthetic:awp:origins=2", "p.origins", "unknown key (known: inline, seed)"),
        ("synthetic:httparchive2024:origins=65", "p.origins", "must be 1..64, got 65"),
        ("synthetic:httparchive2024:origins=0", "p.origins", "must be 1..64, got 0"),
        ("synthetic:httparchive2024:inline=lots", "p.inline", "'lots': "),
        ("synthetic:httparchive2024:inline=1GB", "p.inline", "must be 0..10000000"),
        ("synthetic:mix:css=3", "p.css", "'3': expected COUNT/BYTES like 7/250KB"),
        ("synthetic:mix:img=-1/10KB", "p.img", "must be 0..1000, got -1"),
        ("synthetic:mix:js=2/10XB", "p.js", "'2/10XB': "),
        ("synthetic:mix:html=2/10KB", "p", "'synthetic:mix:html=2/10KB': name at least one"),
        ("synthetic:mix:css=1/1KB,svg=1/1KB", "p.svg", "unknown key"),
    ],
)
def test_parse_errors(spec: str, field: str, reason: str) -> None:
    with pytest.raises(SpecError) as exc:
        parse(spec, "e.toml", field="p")
    assert (exc.value.source, exc.value.field) == ("e.toml", field)
    assert exc.value.reason.startswith(reason)


def test_awp_follows_seed_002_tables_1_and_2(cache: Path) -> None:
    page = materialize(parse("synthetic:awp"))
    assert len(page.resources) == 100
    assert page.total_body_bytes == 2_000_000
    assert set(page.origins) == {f"o{i}.h2lab.test" for i in range(1, 17)}
    counts = Counter(kind(r.content_type) for r in page.resources)
    assert counts == {"html": 9, "css": 7, "js": 20, "img": 56, "flash": 1, "other": 7}
    assert bytes_by_kind(page) == {
        "html": 56_000,
        "css": 63_000,
        "js": 329_000,
        "img": 1_310_000,
        "flash": 90_000,
        "other": 152_000,
    }
    # Table 2, domain by domain
    for n, row in enumerate(AWP_DOMAINS, start=1):
        got = Counter(kind(r.content_type) for r in page.resources_of(f"o{n}.h2lab.test"))
        assert got == row, n
    assert page.entry.origin == "o1.h2lab.test"
    assert refs(page) == urls(page)


def test_mix_has_exactly_the_composition_asked(cache: Path) -> None:
    """Seed 000 Fig. 6's page like the EFF front page: 1 critical CSS + 2 CSS, 7 JS (10 CSS/JS),
    18 images, 1 font; each type's bytes exact, the entry document its own size."""
    spec = parse("synthetic:mix:css=3/90KB,js=7/250KB,img=18/700KB,font=1/40KB")
    assert spec.name == "synthetic:mix:css=3/90KB,js=7/250KB,font=1/40KB,img=18/700KB"
    page = materialize(spec)
    counts = Counter(kind(r.content_type) for r in page.resources)
    assert counts == {"html": 1, "css": 3, "js": 7, "font": 1, "img": 18}
    by_kind = bytes_by_kind(page)
    assert {k: by_kind[k] for k in ("css", "js", "img", "font")} == {
        "css": 90_000,
        "js": 250_000,
        "img": 700_000,
        "font": 40_000,
    }
    assert refs(page) == urls(page)
    # the first stylesheet in the head is /css/00.css: the origin's critical-css rule
    html = page.body_file(page.entry).read_text()
    assert re.findall(r'rel="stylesheet" href="//[^/]+(/css/\d+\.css)"', html)[0] == "/css/00.css"
    framed = materialize(parse("synthetic:mix:html=3/30KB,img=2/20KB,origins=2"))
    assert Counter(kind(r.content_type) for r in framed.resources) == {"html": 3, "img": 2}
    assert bytes_by_kind(framed)["html"] == 30_000
    assert len(framed.origins) == 2 and refs(framed) == urls(framed)


def test_httparchive2024_median_page(cache: Path) -> None:
    page = materialize(parse("synthetic:httparchive2024"))
    assert len(page.resources) == 71
    assert abs(page.total_body_bytes - 2_600_000) <= 26_000
    counts = Counter(kind(r.content_type) for r in page.resources)
    assert counts == {"html": 2, "css": 8, "js": 24, "font": 4, "img": 18, "other": 15}
    by_kind = bytes_by_kind(page)
    for k, kb in {"html": 18, "css": 78, "font": 131, "js": 613, "img": 1054}.items():
        assert abs(by_kind[k] - kb * 1000) <= kb * 10, k
    assert page.origins == ("o1.h2lab.test",)
    assert refs(page) == urls(page)
    sharded = materialize(parse("synthetic:httparchive2024:origins=5"))
    assert len(sharded.origins) == 5
    assert refs(sharded) == urls(sharded)


def test_bodies_are_valid_for_their_type(cache: Path) -> None:
    from PIL import Image

    page = materialize(parse("synthetic:httparchive2024:origins=3"))
    for r in page.resources:
        data = page.body_file(r).read_bytes()
        k = kind(r.content_type)
        if k == "img":
            Image.open(__import__("io").BytesIO(data)).load()
        elif k == "other":
            assert isinstance(json.loads(data), dict)
        elif k in {"css", "js"}:
            text = data.decode()
            code, _, pad = text.partition("/*")
            assert pad.endswith("*/") and "*/" not in pad[:-2]
            assert code.count("{") == code.count("}") and code.endswith(
                ";\n" if k == "js" else "}\n"
            )
        elif k == "html":
            assert data.startswith(b"<!doctype html>")
        if k in {"font", "other"} and r.origin != page.entry.origin:
            assert r.header("access-control-allow-origin") == "*"
    assert 'rel="icon" href="data:,"' in page.body_file(page.entry).read_text()


@pytest.mark.parametrize("base", ["synthetic:awp", "synthetic:httparchive2024"])
def test_inlining_moves_small_bodies_into_the_html(cache: Path, base: str) -> None:
    plain = materialize(parse(base))
    inlined = materialize(parse(f"{base}:inline=8KB"))
    html = inlined.body_file(inlined.entry).read_text()
    small = [
        r
        for r in plain.resources[1:]
        if kind(r.content_type) in {"css", "js", "img"} and r.size_bytes <= 8000
    ]
    assert small  # log-normal sizes: some bodies are small
    assert len(inlined.resources) == len(plain.resources) - len(small)
    assert urls(inlined) == urls(plain) - {f"//{r.origin}{r.path}" for r in small}
    assert refs(inlined) == urls(inlined)
    for r in small:  # the very bytes, now in the document
        data = plain.body_file(r).read_bytes()
        text = (
            "data:image/png;base64," + base64.b64encode(data).decode()
            if r.content_type == "image/png"
            else data.decode()
        )
        assert text in html
    # everything not inlined is the same bytes as before
    kept = {(r.origin, r.path): r.body_sha256 for r in plain.resources[1:]}
    for r in inlined.resources[1:]:
        assert kept[(r.origin, r.path)] == r.body_sha256


def test_same_spec_same_id_and_seed_changes_it(cache: Path) -> None:
    a = materialize(parse("synthetic:awp"))
    assert materialize(parse("synthetic:awp")).digest == a.digest
    assert materialize(parse("synthetic:awp:seed=1")).digest != a.digest
