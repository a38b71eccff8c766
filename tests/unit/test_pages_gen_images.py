"""h2lab.pages.gen_images: the images HOL pages of seed 000 §4.2 (files, sprite, sharded)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from PIL import Image

from h2lab.errors import SpecError
from h2lab.pages.gen_common import tile_colour
from h2lab.pages.gen_images import PRESETS, ImagesSpec, sprite_columns
from h2lab.pages.manifest import Page
from h2lab.pages.synthetic import materialize, parse


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("H2LAB_CACHE", str(root))
    return root


def decode(data: bytes) -> Image.Image:
    img = Image.open(io.BytesIO(data))
    img.load()
    return img.convert("RGB")


def refs(page: Page) -> set[str]:
    html = page.body_file(page.entry).read_text()
    return set(re.findall(r'(?:src|href)="(//[^"]+)"', html)) | set(
        re.findall(r"url\((//[^)]+)\)", html)
    )


def urls(page: Page) -> set[str]:
    return {f"//{r.origin}{r.path}" for r in page.resources[1:]}


def test_presets_follow_seed_000() -> None:
    # Table 2: (a) 10 large 2,177,600 B; (b) 42 medium 1,075,000 B; (c) 400 small 610,000 B.
    for key, total, count in (
        ("table2a", 2_177_600, 10),
        ("table2b", 1_075_000, 42),
        ("table2c", 610_000, 400),
    ):
        n, size = PRESETS[key]
        assert n == count
        assert abs(n * size - total) <= total / 100
    # Fig. 1: (a) 380 small, (b) 42 medium, (c) 30 large.
    assert [PRESETS[k][0] for k in ("fig1a", "fig1b", "fig1c")] == [380, 42, 30]


def test_parse_preset_and_name() -> None:
    spec = parse("synthetic:images:preset=fig1a")
    assert spec == ImagesSpec(380, 1525, 32, "files", 1, 0, "fig1a")
    assert spec.name == "synthetic:images:preset=fig1a"
    sharded = parse("synthetic:images:variant=sharded,n=7,size=2KB,seed=4")
    assert isinstance(sharded, ImagesSpec)
    assert (sharded.origins, sharded.px) == (4, 32)
    assert sharded.name == "synthetic:images:n=7,size=2KB,variant=sharded,seed=4"


@pytest.mark.parametrize(
    ("spec", "field", "reason"),
    [
        ("synthetic:images:preset=fig9", "p.preset", "unknown preset 'fig9' (known: fig1a, "),
        ("synthetic:images:n=4", "p.size", "missing (give preset= or n= and size=)"),
        ("synthetic:images:preset=fig1a,variant=zip", "p.variant", "unknown value 'zip'"),
        ("synthetic:images:preset=fig1a,origins=2", "p.origins", "only with variant=sharded"),
        ("synthetic:images:preset=fig1a,variant=sharded,origins=65", "p.origins", "must be 2..64"),
        ("synthetic:images:preset=fig1a,n=0", "p.n", "must be 1..2000, got 0"),
        ("synthetic:images:preset=fig1a,px=30", "p.px", "must be a multiple of 4, got 30"),
        ("synthetic:images:preset=fig1a,px=4", "p.px", "must be 8..256, got 4"),
        ("synthetic:images:preset=fig1a,size=50B", "p.size", "must be "),
        ("synthetic:images:preset=fig1a,size=1XB", "p.size", "'1XB': unknown size unit"),
        ("synthetic:images:preset=fig1a,colour=red", "p.colour", "unknown key (known: preset, "),
    ],
)
def test_parse_errors(spec: str, field: str, reason: str) -> None:
    with pytest.raises(SpecError) as exc:
        parse(spec, "e.toml", field="p")
    assert (exc.value.source, exc.value.field) == ("e.toml", field)
    assert exc.value.reason.startswith(reason)


@pytest.mark.parametrize("preset", ["fig1a", "fig1b", "table2b", "table2c"])
def test_files_variant_matches_the_preset(cache: Path, preset: str) -> None:
    page = materialize(parse(f"synthetic:images:preset={preset}"))
    count, size = PRESETS[preset]
    images = page.resources[1:]
    assert len(images) == count
    assert {r.size_bytes for r in images} == {size}
    assert {r.content_type for r in images} == {"image/png"}
    assert page.origins == ("o1.h2lab.test",)
    assert refs(page) == urls(page)
    assert 'rel="icon" href="data:,"' in page.body_file(page.entry).read_text()


def test_sharded_variant_uses_four_origins(cache: Path) -> None:
    page = materialize(parse("synthetic:images:preset=table2a,variant=sharded"))
    assert page.origins == tuple(f"o{i}.h2lab.test" for i in (1, 2, 3, 4))
    images = page.resources[1:]
    assert len(images) == 10
    assert [r.origin for r in images[:5]] == [f"o{i}.h2lab.test" for i in (1, 2, 3, 4, 1)]
    total = sum(r.size_bytes for r in images)
    assert abs(total - 2_177_600) <= 2_177_600 / 100
    assert refs(page) == urls(page)


def test_sprite_holds_the_same_bytes_in_one_file(cache: Path) -> None:
    page = materialize(parse("synthetic:images:preset=fig1c,variant=sprite"))
    assert [r.path for r in page.resources] == ["/index.html", "/img/sprite.png"]
    assert page.resources[1].size_bytes == 30 * PRESETS["fig1c"][1]
    assert refs(page) == urls(page)


@pytest.mark.parametrize("spec", ["n=13,size=3KB", "n=42,size=30KB,px=24"])
def test_sprite_and_separate_images_render_the_same_pixels(cache: Path, spec: str) -> None:
    files = materialize(parse(f"synthetic:images:{spec}"))
    sprite_page = materialize(parse(f"synthetic:images:{spec},variant=sprite"))
    sprite = decode(sprite_page.body_file(sprite_page.resources[1]).read_bytes())
    html = sprite_page.body_file(sprite_page.entry).read_text()
    offsets = [
        (int(x), int(y)) for x, y in re.findall(r"background-position:-(\d+)px -(\d+)px", html)
    ]
    images = files.resources[1:]
    assert len(offsets) == len(images)
    px = int(re.findall(r"width:(\d+)px", html)[0])
    cols = sprite_columns(len(images))
    assert sprite.size == (cols * px, -(-len(images) // cols) * px)
    for i, (res, (x, y)) in enumerate(zip(images, offsets, strict=True)):
        tile = decode(files.body_file(res).read_bytes())
        assert tile.size == (px, px)
        # the element shows the sprite's px x px window at (x, y): the tile's exact pixels
        assert sprite.crop((x, y, x + px, y + px)).tobytes() == tile.tobytes()
        # its own colour, bit 0 of its number drawn lighter in the top-left cell
        base = tile_colour(i)
        light = tuple(c + (255 - c) // 2 for c in base)
        assert tile.getpixel((0, 0)) == (light if i & 1 else base)
        assert tile.getpixel((px - 1, px - 1)) == (light if i >> 15 & 1 else base)
    # tiles differ from one another: their number is drawn into them
    first, second = (decode(files.body_file(r).read_bytes()) for r in images[:2])
    assert first.tobytes() != second.tobytes()


def test_images_are_deterministic_and_seeded(cache: Path) -> None:
    a = materialize(parse("synthetic:images:n=5,size=2KB"))
    again = materialize(parse("synthetic:images:n=5,size=2KB"))
    other = materialize(parse("synthetic:images:n=5,size=2KB,seed=1"))
    assert again.digest == a.digest
    assert other.digest != a.digest
    sprite = materialize(parse("synthetic:images:n=5,size=2KB,variant=sprite"))
    assert sprite.digest != a.digest
