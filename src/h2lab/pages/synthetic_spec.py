"""Synthetic page specs, parsed once into frozen types (docs/pages-synthetic.md): pure, no page
store, so that :func:`h2lab.pages.manifest.check_page_spec` can check a spec without the
generation and storage of :mod:`h2lab.pages.synthetic`.

A spec is ``synthetic:<key>=<value>,...`` (the objects page: N objects of one size over K
origins, plus an index.html) or ``synthetic:<generator>[:<key>=<value>,...]`` for the
generators of :data:`GENERATORS`. Unknown keys and values are :class:`SpecError` naming
``page.<key>``.
"""

from __future__ import annotations

from dataclasses import dataclass

from h2lab.errors import SpecError, UnitError
from h2lab.pages import gen_cssjs, gen_images, gen_mix, gen_shop
from h2lab.pages.gen_common import MAX_ORIGINS
from h2lab.units import format_size, parse_size_bytes

MAX_OBJECTS = 10_000
MAX_OBJECT_BYTES = 100 * 1000**2


@dataclass(frozen=True)
class SyntheticSpec:
    """The objects page: ``count`` objects of ``size_bytes`` over ``origins`` hosts, on
    ``sites`` registrable domains (the page's own and third parties':
    :func:`~h2lab.pages.gen_common.origin_names`). Its object counts and sizes cover the factor
    grid of seed 001 Table I."""

    count: int
    size_bytes: int
    origins: int
    seed: int
    sites: int = 1

    @property
    def name(self) -> str:
        sites = f",sites={self.sites}" if self.sites != 1 else ""
        seed = f",seed={self.seed}" if self.seed else ""
        size = format_size(self.size_bytes)
        return f"synthetic:n={self.count},size={size},origins={self.origins}{sites}{seed}"


PageSpec = (
    SyntheticSpec
    | gen_images.ImagesSpec
    | gen_cssjs.CssJsSpec
    | gen_mix.AwpSpec
    | gen_mix.HaSpec
    | gen_mix.CustomSpec
    | gen_shop.ShopSpec
)
"""Every parsed synthetic spec."""

GENERATORS = ("images", "cssjs", "awp", "httparchive2024", "mix", "shop")


def parse(spec: str, source: str = "page", field: str = "page") -> PageSpec:
    body = spec.removeprefix("synthetic:")
    head = body.split(",", 1)[0].split(":", 1)[0]
    if head and "=" not in head:
        rest = body[len(head) + 1 :]
        if head == gen_images.KIND:
            return gen_images.parse(rest, spec, source, field)
        if head == gen_cssjs.KIND:
            return gen_cssjs.parse(rest, spec, source, field)
        if head == gen_mix.AWP_KIND:
            return gen_mix.parse_awp(rest, spec, source, field)
        if head == gen_mix.HA_KIND:
            return gen_mix.parse_ha(rest, spec, source, field)
        if head == gen_mix.MIX_KIND:
            return gen_mix.parse_mix(rest, spec, source, field)
        if head == gen_shop.KIND:
            return gen_shop.parse(rest, spec, source, field)
        if ":" in body or "," in body:
            raise SpecError(
                source, f"{field}.generator", f"unknown {head!r} (known: {', '.join(GENERATORS)})"
            )
    return parse_objects(body, spec, source, field)


OBJECTS_KEYS = ("n", "size", "origins", "sites", "seed")


def parse_objects(body: str, spec: str, source: str, field: str) -> SyntheticSpec:
    fields: dict[str, str] = {}
    for part in filter(None, body.split(",")):
        key, sep, value = part.partition("=")
        if not sep:
            raise SpecError(source, field, f"expected key=value in {spec!r}, got {part!r}")
        if key not in OBJECTS_KEYS:
            known = ", ".join(OBJECTS_KEYS)
            raise SpecError(source, f"{field}.{key}", f"unknown key (known: {known})")
        fields[key] = value
    try:
        count = int(fields.get("n", "16"))
        size = parse_size_bytes(fields.get("size", "10KB"))
        origins = int(fields.get("origins", "1"))
        sites = int(fields.get("sites", "1"))
        seed = int(fields.get("seed", "0"))
    except (ValueError, UnitError) as exc:
        raise SpecError(source, field, f"{spec!r}: {exc}") from exc
    if not 1 <= count <= MAX_OBJECTS:
        raise SpecError(source, f"{field}.n", f"must be 1..{MAX_OBJECTS}, got {count}")
    if not 1 <= size <= MAX_OBJECT_BYTES:
        raise SpecError(source, f"{field}.size", f"must be 1 B..100 MB, got {size}")
    if not 1 <= origins <= MAX_ORIGINS:
        raise SpecError(source, f"{field}.origins", f"must be 1..{MAX_ORIGINS}, got {origins}")
    if not 1 <= sites <= origins:
        raise SpecError(source, f"{field}.sites", f"must be 1..origins ({origins}), got {sites}")
    return SyntheticSpec(count=count, size_bytes=size, origins=origins, seed=seed, sites=sites)
