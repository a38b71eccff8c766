"""h2lab.pages.synthetic: spec parsing, pure layout, and materializing under the cache."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from h2lab.errors import SpecError
from h2lab.pages import resolve_page
from h2lab.pages.manifest import content_digest
from h2lab.pages.synthetic import (
    MIN_PNG_BYTES,
    SyntheticSpec,
    layout,
    materialize,
    origin_names,
    parse,
    tile_colour,
)


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
        ("synthetic:count=3", "f.count", "unknown key (known: n, size, origins, seed)"),
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
    assert page.docroot == cache / "pages" / "v2-synthetic-n-5-size-300b-origins-2"
    assert page.name == spec.name
    assert page.origins == ("o1.h2lab.test", "o2.h2lab.test")
    _, resources, html = layout(spec)
    assert page.resources == resources
    assert page.entry.path == "/index.html"
    assert page.total_body_bytes == 5 * 300 + len(html.encode())
    for r in page.resources:
        body = (page.docroot / r.origin / r.path.lstrip("/")).read_bytes()
        assert len(body) == r.size_bytes
    assert (page.docroot / "o1.h2lab.test" / "index.html").read_text() == html
    assert [r.path for r in page.resources_of("o2.h2lab.test")] == [
        "/obj/00001.png",
        "/obj/00003.png",
    ]
    assert (page.docroot / ".complete").read_text() == page.digest + "\n"
    assert page.digest == content_digest(page.docroot, page.resources)
    assert len(page.digest) == 16


def test_materialize_twice_gives_identical_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = parse("synthetic:n=4,size=2KB,origins=2,seed=9")
    monkeypatch.setenv("H2LAB_CACHE", str(tmp_path / "a"))
    a = materialize(spec)
    assert materialize(spec).digest == a.digest
    # a fresh cache regenerates the very same bytes
    monkeypatch.setenv("H2LAB_CACHE", str(tmp_path / "b"))
    b = materialize(spec)
    assert b.docroot != a.docroot
    assert b.digest == a.digest
    for r in a.resources:
        rel = Path(r.origin) / r.path.lstrip("/")
        assert (a.docroot / rel).read_bytes() == (b.docroot / rel).read_bytes()


def test_seed_changes_bytes_and_digest(cache: Path) -> None:
    a = materialize(parse("synthetic:n=2,size=1KB"))
    b = materialize(parse("synthetic:n=2,size=1KB,seed=1"))
    assert a.docroot != b.docroot
    assert a.digest != b.digest
    rel = Path("o1.h2lab.test") / "obj" / "00000.png"
    assert (a.docroot / rel).read_bytes() != (b.docroot / rel).read_bytes()


def test_resolve_page_and_manifest_json(cache: Path) -> None:
    page = resolve_page("synthetic:n=2,size=100B,origins=1")
    doc = json.loads(page.manifest_json())
    assert doc["name"] == "synthetic:n=2,size=100B,origins=1"
    assert doc["digest"] == page.digest
    assert doc["entry"] == "https://o1.h2lab.test/index.html"
    assert doc["origins"] == ["o1.h2lab.test"]
    assert [r["path"] for r in doc["resources"]] == [
        "/index.html",
        "/obj/00000.png",
        "/obj/00001.png",
    ]
    assert page.resources[1].url("http", 8080) == "http://o1.h2lab.test:8080/obj/00000.png"


def test_resolve_page_unknown(cache: Path) -> None:
    with pytest.raises(SpecError) as exc:
        resolve_page("alexa:google", "e.toml")
    assert (exc.value.source, exc.value.field) == ("e.toml", "page")
    assert not cache.exists()


def test_objects_are_valid_pngs_of_the_exact_size(cache: Path) -> None:
    from PIL import Image

    page = materialize(parse("synthetic:n=3,size=5KB,origins=1"))
    for i, res in enumerate(page.resources[1:]):
        body = (page.docroot / res.origin / res.path.lstrip("/")).read_bytes()
        assert len(body) == 5000
        img = Image.open(io.BytesIO(body))
        img.load()
        assert img.size == (1, 1)
        assert img.getpixel((0, 0)) == tile_colour(i)
    html = (page.docroot / "o1.h2lab.test" / "index.html").read_text()
    assert html.count("<img ") == 3


def test_objects_below_the_png_minimum_stay_raw_bytes() -> None:
    _, objects, html = layout(parse(f"synthetic:n=2,size={MIN_PNG_BYTES - 1}B,origins=1"))
    assert all(o.path.endswith(".bin") for o in objects[1:])
    assert "<img" not in html
