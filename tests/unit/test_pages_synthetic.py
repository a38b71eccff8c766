"""h2lab.pages.synthetic: spec parsing, the objects page, and materializing into the page store."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from h2lab.errors import SpecError
from h2lab.pages import resolve_page, synthetic
from h2lab.pages.manifest import PageWriter, check_bodies, find_page, load_page
from h2lab.pages.synthetic import (
    MIN_PNG_BYTES,
    SyntheticSpec,
    layout,
    materialize,
    origin_names,
    parse,
    png_object,
    tile_colour,
)
from h2lab.units import parse_size_bytes


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("H2LAB_CACHE", str(root))
    return root


def test_parse_full_spec() -> None:
    spec = parse("synthetic:n=32,size=10KB,origins=2,seed=3")
    assert spec == SyntheticSpec(count=32, size_bytes=10_000, origins=2, seed=3)
    assert spec.name == "synthetic:n=32,size=10KB,origins=2,seed=3"


def test_parse_defaults_and_canonical_name() -> None:
    spec = parse("synthetic:")
    assert spec == SyntheticSpec(count=16, size_bytes=10_000, origins=1, seed=0)
    assert spec.name == "synthetic:n=16,size=10KB,origins=1"
    assert parse("synthetic:size=10000").name == parse("synthetic:size=10KB").name


@pytest.mark.parametrize(
    ("spec", "field", "reason"),
    [
        ("synthetic:n=0", "f.n", "must be 1..10000, got 0"),
        ("synthetic:n=10001", "f.n", "must be 1..10000, got 10001"),
        ("synthetic:origins=65", "f.origins", "must be 1..64, got 65"),
        ("synthetic:size=0B", "f.size", "must be 1 B..100 MB, got 0"),
        ("synthetic:count=3", "f.count", "unknown key (known: n, size, origins, sites, seed)"),
        ("synthetic:n", "f", "expected key=value in 'synthetic:n', got 'n'"),
    ],
)
def test_parse_errors(spec: str, field: str, reason: str) -> None:
    with pytest.raises(SpecError) as exc:
        parse(spec, "p.toml", field="f")
    assert (exc.value.source, exc.value.field, exc.value.reason) == ("p.toml", field, reason)


@pytest.mark.parametrize("spec", ["synthetic:n=x", "synthetic:size=10XB"])
def test_parse_bad_numbers(spec: str) -> None:
    with pytest.raises(SpecError) as exc:
        parse(spec, "p.toml", field="f")
    assert exc.value.field == "f"
    assert exc.value.reason.startswith(repr(spec))


def test_origin_names() -> None:
    assert origin_names(3) == ("o1.h2lab.test", "o2.h2lab.test", "o3.h2lab.test")


def test_layout_is_deterministic_and_spreads_objects() -> None:
    spec = parse("synthetic:n=7,size=1KB,origins=3")
    first = layout(spec)
    assert layout(spec) == first
    origins, resources, html = first
    assert origins == ("o1.h2lab.test", "o2.h2lab.test", "o3.h2lab.test")
    index, *objects = resources
    assert (index.origin, index.path, index.content_type) == (
        "o1.h2lab.test",
        "/index.html",
        "text/html",
    )
    assert index.size_bytes == len(html.encode())
    assert len(objects) == 7
    for i, obj in enumerate(objects):
        assert obj.origin == origins[i % 3]
        assert obj.path == f"/obj/{i:05d}.png"
        assert obj.size_bytes == 1000
        assert obj.content_type == "image/png"
        assert f'src="//{origins[i % 3]}/obj/{i:05d}.png"' in html
    assert "<title>synthetic:n=7,size=1KB,origins=3</title>" in html


def test_materialize_writes_page(cache: Path) -> None:
    spec = parse("synthetic:n=5,size=300B,origins=2")
    page = materialize(spec)
    assert page.docroot == cache / "pages" / page.digest
    assert len(page.digest) == 16
    assert page.name == spec.name
    assert page.source == f"{spec.name} (h2lab synthetic v4)"
    assert page.origins == ("o1.h2lab.test", "o2.h2lab.test")
    _, resources, html = layout(spec)
    assert [(r.origin, r.path, r.size_bytes) for r in page.resources] == [
        (r.origin, r.path, r.size_bytes) for r in resources
    ]
    assert page.entry.path == "/index.html"
    assert page.total_body_bytes == 5 * 300 + len(html.encode())
    assert check_bodies(page) == []
    assert page.body_file(page.entry).read_text() == html
    assert [r.path for r in page.resources_of("o2.h2lab.test")] == [
        "/obj/00001.png",
        "/obj/00003.png",
    ]
    assert find_page(spec.name) == page.docroot


def test_materialize_twice_gives_identical_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = parse("synthetic:n=4,size=2KB,origins=2,seed=9")
    monkeypatch.setenv("H2LAB_CACHE", str(tmp_path / "a"))
    a = materialize(spec)
    assert materialize(spec) == a
    # a fresh cache regenerates the very same bytes
    monkeypatch.setenv("H2LAB_CACHE", str(tmp_path / "b"))
    b = materialize(spec)
    assert b.docroot != a.docroot
    assert b.digest == a.digest
    for ra, rb in zip(a.resources, b.resources, strict=True):
        assert a.body_file(ra).read_bytes() == b.body_file(rb).read_bytes()


def test_second_resolve_reuses_the_stored_page(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = parse("synthetic:n=3,size=1KB")
    first = materialize(spec)

    def no_generation(_: object) -> None:
        raise AssertionError("generated again")

    monkeypatch.setattr(synthetic, "bodies", no_generation)
    assert materialize(spec) == first
    assert resolve_page(spec.name).digest == first.digest


def test_damaged_stored_page_is_generated_again(cache: Path) -> None:
    spec = parse("synthetic:n=3,size=1KB")
    first = materialize(spec)
    victim = first.body_file(first.resources[2])
    victim.write_bytes(b"short")
    again = materialize(spec)
    assert again.digest == first.digest
    assert check_bodies(again) == []


def test_page_of_another_generator_version_is_not_reused(cache: Path) -> None:
    spec = parse("synthetic:n=2,size=1KB")
    with PageWriter(spec.name, "synthetic:n=2,size=1KB (h2lab synthetic v3)") as w:
        w.add("https://o1.h2lab.test/index.html", b"old", content_type="text/html")
        w.commit()
    page = materialize(spec)
    assert len(page.resources) == 3
    assert page.source.endswith("v4)")


def test_seed_changes_bytes_and_digest(cache: Path) -> None:
    a = materialize(parse("synthetic:n=2,size=1KB"))
    b = materialize(parse("synthetic:n=2,size=1KB,seed=1"))
    assert a.docroot != b.docroot
    assert a.digest != b.digest
    assert a.body_file(a.resources[1]).read_bytes() != b.body_file(b.resources[1]).read_bytes()


def test_resolve_page_and_manifest_json(cache: Path) -> None:
    page = resolve_page("synthetic:n=2,size=100B,origins=1")
    doc = json.loads(page.manifest_json())
    assert doc["format"] == "h2lab-page/1"
    assert doc["name"] == "synthetic:n=2,size=100B,origins=1"
    assert doc["id"] == page.digest
    assert doc["entry"] == "https://o1.h2lab.test/index.html"
    assert doc["origins"] == [{"host": "o1.h2lab.test", "scheme": "https"}]
    assert [r["url"] for r in doc["resources"]] == [
        "https://o1.h2lab.test/index.html",
        "https://o1.h2lab.test/obj/00000.png",
        "https://o1.h2lab.test/obj/00001.png",
    ]
    assert [r["size_bytes"] for r in doc["resources"][1:]] == [100, 100]
    assert page.resources[1].url("http", 8080) == "http://o1.h2lab.test:8080/obj/00000.png"
    assert load_page(page.docroot) == page


def test_resolve_page_unknown(cache: Path) -> None:
    with pytest.raises(SpecError) as exc:
        resolve_page("alexa:google", "e.toml")
    assert (exc.value.source, exc.value.field) == ("e.toml", "page")
    assert not cache.exists()


def test_objects_are_valid_pngs_of_the_exact_size(cache: Path) -> None:
    from PIL import Image

    page = materialize(parse("synthetic:n=3,size=5KB,origins=1"))
    for i, res in enumerate(page.resources[1:]):
        body = page.body_file(res).read_bytes()
        assert len(body) == 5000
        img = Image.open(io.BytesIO(body))
        img.load()
        assert img.size == (1, 1)
        assert img.getpixel((0, 0)) == tile_colour(i)
    assert page.body_file(page.entry).read_text().count("<img ") == 3


def test_objects_below_the_png_minimum_stay_raw_bytes() -> None:
    _, objects, html = layout(parse(f"synthetic:n=2,size={MIN_PNG_BYTES - 1}B,origins=1"))
    assert all(o.path.endswith(".bin") for o in objects[1:])
    assert "<img" not in html


@pytest.mark.parametrize(
    ("spec", "field", "reason"),
    [
        ("synthetic:movies:n=3", "f.generator", "unknown 'movies' (known: images, cssjs, "),
        ("synthetic:awp:n=3", "f.n", "unknown key (known: inline, seed)"),
        ("synthetic:awp,seed=x", "f.seed", "'x': invalid literal for int() with base 10: 'x'"),
        ("synthetic:cssjs:seed=1,seed=2", "f.seed", "given twice"),
    ],
)
def test_parse_dispatch_errors(spec: str, field: str, reason: str) -> None:
    with pytest.raises(SpecError) as exc:
        parse(spec, "p.toml", field="f")
    assert (exc.value.source, exc.value.field) == ("p.toml", field)
    assert exc.value.reason.startswith(reason)


@pytest.mark.parametrize(
    "spec",
    [
        "synthetic:n=8,size=100B,origins=2",
        "synthetic:images:preset=fig1a,variant=sprite",
        "synthetic:cssjs:kind=js,files=50",
        "synthetic:awp:inline=4KB,seed=2",
        "synthetic:httparchive2024:origins=3,inline=1KB",
    ],
)
def test_canonical_names_parse_back_to_the_same_spec(spec: str) -> None:
    parsed = parse(spec)
    assert parsed.name == spec
    assert parse(parsed.name) == parsed


# Seed 001 Table I: object size {100 B, 1 KB, 10 KB, 100 KB, 1 MB} x count {2 .. 512}.
TABLE_I_SIZES = (100, 1_000, 10_000, 100_000, 1_000_000)
TABLE_I_COUNTS = (2, 8, 16, 32, 64, 128, 512)


@pytest.mark.parametrize("size", TABLE_I_SIZES)
def test_factor_grid_sizes_are_exact_pngs(size: int) -> None:
    import random

    from PIL import Image

    body = png_object(3, size, random.Random(0))
    assert len(body) == size
    img = Image.open(io.BytesIO(body))
    img.load()
    assert img.getpixel((0, 0)) == tile_colour(3)


def test_factor_grid_layouts() -> None:
    for count in TABLE_I_COUNTS:
        for size in ("100B", "1KB", "10KB", "100KB", "1MB"):
            _, resources, _ = layout(parse(f"synthetic:n={count},size={size}"))
            assert len(resources) == count + 1
            assert {r.size_bytes for r in resources[1:]} == {parse_size_bytes(size)}
            assert {r.content_type for r in resources[1:]} == {"image/png"}


def test_layout_of_a_generator_matches_its_materialized_page(cache: Path) -> None:
    spec = parse("synthetic:cssjs:kind=css,files=3,divs=9")
    origins, resources, html = layout(spec)
    page = materialize(spec)
    assert page.origins == origins
    assert [(r.path, r.size_bytes, r.content_type) for r in page.resources] == [
        (r.path, r.size_bytes, r.content_type) for r in resources
    ]
    assert page.body_file(page.entry).read_text() == html


@pytest.mark.parametrize(
    "spec",
    [
        "synthetic:n=3,size=300B",
        "synthetic:n=3,size=1KB",
        "synthetic:images:preset=fig1a,variant=sprite",
        "synthetic:cssjs:kind=js,files=2",
        "synthetic:mix:css=1/10KB,img=2/20KB,font=1/5KB",
    ],
)
def test_every_subresource_is_cacheable_and_the_entry_is_not(cache: Path, spec: str) -> None:
    """A static site's assets: reusable from the HTTP cache within a load (Chromium serves
    103 Early Hints preloads only that way); the entry document keeps no caching header."""
    page = materialize(parse(spec))
    _, resources, _ = layout(parse(spec))
    for res in (page.resources, resources):
        entry, *subresources = res
        assert "cache-control" not in dict(entry.headers)
        assert subresources
        assert all(dict(r.headers)["cache-control"] == "max-age=31536000" for r in subresources)
