"""A cell's factors as typed values: numbers where the page or network spec has them (object
count, object size, RTT, rates, loss), names for the rest. Pure: specs are parsed from the
strings stored with every trial, nothing is read (see :func:`network_features` for traces).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from h2lab.errors import H2LabError
from h2lab.pages import gen_images
from h2lab.pages.synthetic import SyntheticSpec
from h2lab.pages.synthetic import parse as parse_page
from h2lab.spec.factors import FACTORS, Cell
from h2lab.spec.network import NetworkProfile, parse_network

__all__ = ["Cell", "CellFactors", "cell_factors"]

FeatureValue = float | str | None
"""A feature for the tree: a number, a category name, or None when not known for a cell."""


@dataclass(frozen=True)
class PageFeatures:
    object_count: int | None
    """objects fetched after the index (None: a page kind without one object count)"""
    object_size_bytes: int | None
    """bytes of each object (None: objects of mixed sizes)"""
    origins: int | None


@dataclass(frozen=True)
class NetworkFeatures:
    rtt_ms: float | None
    down_rate_bps: float | None
    """``math.inf`` for an unlimited link; None when a trace or cellular profile drives it"""
    up_rate_bps: float | None
    loss_fraction: float | None
    """downlink random loss, 0..1 (the direction carrying the page)"""
    jitter_ms: float | None = None
    """downlink per-packet delay variation (the reordering knob)"""


@dataclass(frozen=True)
class CellFactors:
    """A cell with its numeric features; the input of the decision tree."""

    cell: Cell
    page: PageFeatures
    network: NetworkFeatures

    def features(self) -> dict[str, FeatureValue]:
        """Feature name -> value: numbers for the numeric factors, names for the categorical
        ones. The page and network names are included only where their numbers are unknown,
        so that the tree splits on numbers when it can."""
        out: dict[str, FeatureValue] = {
            "object_count": _num(self.page.object_count),
            "object_size_bytes": _num(self.page.object_size_bytes),
            "origins": _num(self.page.origins),
            "rtt_ms": self.network.rtt_ms,
            "down_rate_bps": self.network.down_rate_bps,
            "up_rate_bps": self.network.up_rate_bps,
            "loss_fraction": self.network.loss_fraction,
            "jitter_ms": self.network.jitter_ms,
        }
        for f in FACTORS:  # the other factors: numbers as numbers, names as categories
            if f.name not in ("page", "network"):
                value = self.cell[f.name]
                out[f.column] = float(value) if isinstance(value, int) else value
        if self.page.object_count is None:
            out["page"] = self.cell.page
        if self.network.rtt_ms is None or self.network.down_rate_bps is None:
            out["network"] = self.cell.network
        return out


def _num(v: int | None) -> float | None:
    return None if v is None else float(v)


UNKNOWN_PAGE = PageFeatures(None, None, None)
UNKNOWN_NETWORK = NetworkFeatures(None, None, None, None)


def page_features(spec: str) -> PageFeatures:
    """Numbers of a synthetic page spec: the objects page and the images page (a sprite is one
    object of N × size bytes). Other page kinds, and specs that do not parse, give None."""
    if not spec.startswith("synthetic:"):
        return UNKNOWN_PAGE
    try:
        parsed = parse_page(spec)
    except H2LabError:
        return UNKNOWN_PAGE
    if isinstance(parsed, SyntheticSpec):
        return PageFeatures(parsed.count, parsed.size_bytes, parsed.origins)
    if isinstance(parsed, gen_images.ImagesSpec):
        if parsed.variant == "sprite":
            return PageFeatures(1, parsed.count * parsed.size_bytes, parsed.origins)
        return PageFeatures(parsed.count, parsed.size_bytes, parsed.origins)
    return UNKNOWN_PAGE


def profile_features(profile: NetworkProfile) -> NetworkFeatures:
    """Numbers of a parsed profile. Cellular and trace-driven links have no fixed rate (None);
    a cellular profile has no fixed delay or loss either."""
    if profile.cellular:
        return UNKNOWN_NETWORK

    def rate(bps: int | None, trace: str | None) -> float | None:
        if trace:
            return None
        return math.inf if bps is None else float(bps)

    return NetworkFeatures(
        rtt_ms=profile.rtt_ms,
        down_rate_bps=rate(profile.down_rate_bps, profile.down_trace),
        up_rate_bps=rate(profile.up_rate_bps, profile.up_trace),
        loss_fraction=profile.down_loss_ratio,
        jitter_ms=profile.down_jitter_ms,
    )


def network_features(spec: str) -> NetworkFeatures:
    """Numbers of a network spec (preset or free form). A spec naming a trace is not parsed
    (parsing checks the trace file, which would be I/O) and gives None throughout, as does a
    spec that does not parse."""
    if "trace" in spec:
        return UNKNOWN_NETWORK
    try:
        profile = parse_network(spec)
    except H2LabError:
        return UNKNOWN_NETWORK
    return profile_features(profile)


def cell_factors(cell: Cell) -> CellFactors:
    return CellFactors(cell, page_features(cell.page), network_features(cell.network))
