"""Experiment files (TOML) -> a frozen, validated :class:`Experiment`.

Every error names the file, the key and what would be accepted; nothing is created on disk
or in the kernel while validating.
"""

from __future__ import annotations

import fnmatch
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from h2lab.errors import SpecError
from h2lab.spec.factors import (
    BY_NAME,
    COMPARABLE,
    FACTORS,
    IMPORT_KINDS,
    JOURNEY,
    NO_CHECKS,
    REQUIRED,
    Factor,
    LevelChecks,
    portable_page,
)
from h2lab.spec.limits import DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S
from h2lab.spec.network import parse_network
from h2lab.spec.options import base_dir
from h2lab.spec.protocols import PROTOCOLS, ProtocolName
from h2lab.spec.vocab import member

KEY_DOCS: dict[str, tuple[str, str]] = {
    "name": ("string (required)", "the experiment's name, stored with every trial"),
    "description": ("string", "free text"),
    "seed": ("integer (default 0)", "the trial order and every trial's loss and jitter seeds "
             "derive from it"),
    "repetitions": ("integer (default 1)", "blocks per cell: each runs every protocol (and "
                    "every level of the [compare] factor) back to back with one seed"),
    "timeout_s": (f"seconds (default {DEFAULT_TIMEOUT_S:g}, at most {MAX_TIMEOUT_S:g})",
                  "per trial attempt"),
    "retries": ("integer (default 0, at most 10)", "a failed trial is attempted again at once "
                "this many more times; every failed attempt stays stored with its reason"),
    "warmup": ("integer (default 0, at most 100)", "trials run first on the first cell, stored "
               "with warmup = 1 and never analysed"),
    "outlier_rule": ('"none" | "2sd" (default "none")', "the report leaves out values more "
                     "than 2 standard deviations from their cell's mean, and counts them"),
    "fail_on": ('"document" | "any" (default "document")', "a browser trial fails when its "
                "document fails (a failed subresource is a resources row with its error), or "
                "when any request fails"),
    "capture": ('["pcap", "qlog"]', "record every trial's packets on the client's side of the "
                "link (at most 64 MiB) with its TLS keys; qlog: every h3 trial's qlog files, "
                "the server's and the client's where they write one; not a factor"),
    "compare": ("table", "a factor besides the protocol, compared level by level: [compare] "
                "below"),
    "factors": ("table, or array of tables", "the factor matrix: every list crossed with every "
                "other; several [[factors]] tables (arms) make one experiment together"),
    "quick": ("table", "the variant `h2lab run --quick` runs: [quick] below"),
}  # fmt: skip
"""Every top-level key of an experiment file with its type and what it does, for
docs/reference.md (:mod:`h2lab.reference`): the keys validation accepts."""
TOP_KEYS = set(KEY_DOCS)
Capture = Literal["pcap", "qlog"]
CAPTURES: tuple[Capture, ...] = ("pcap", "qlog")
"""What a run may record of every trial besides its measurements: ``pcap``, the packets on
the client's side of the link (:mod:`h2lab.net.capture`), with the TLS keys beside them;
``qlog``, each h3 trial's QUIC connections as the server and the client log them (those of
them that write qlog: :func:`h2lab.runner.levels.check_capture`)."""
OUTLIER_RULES = ("none", "2sd")
FailOn = Literal["document", "any"]
"""When a browser's trial fails: its document failed (a failed subresource is recorded, not
fatal), or any request for the page's resources failed."""
FAIL_ON: tuple[FailOn, ...] = ("document", "any")
QUICK_DOCS: dict[str, str] = {
    "repetitions": "replaces the file's repetitions",
    "warmup": "replaces the file's warmup",
    "timeout_s": "replaces the file's timeout_s",
    "factors": "replaces levels of the file's factors in every table ([quick.factors]), or "
    "every table ([[quick.factors]])",
}
"""The keys of ``[quick]``, for docs/reference.md."""
QUICK_KEYS = set(QUICK_DOCS)
COMPARE_DOCS: dict[str, str] = {
    "factor": "the factor compared level by level besides the protocol: a block spans every "
    "level of it",
    "baseline": "one of that factor's levels (or a list of them) that every other level is "
    "set against",
}
"""The keys of ``[compare]``, for docs/reference.md."""
MAX_RETRIES = 10
MAX_WARMUP = 100
FACTOR_KEYS = {"protocol", *BY_NAME}


@dataclass(frozen=True)
class Factors:
    """One factor table: the protocols a block pairs, and the levels of every factor of
    :class:`~h2lab.spec.factors.TrialFactors` (typed), in :data:`FACTORS` order."""

    protocol: tuple[ProtocolName, ...]
    levels: tuple[tuple[Any, ...], ...]

    @classmethod
    def of(cls, protocol: tuple[ProtocolName, ...], **levels: tuple[Any, ...]) -> Factors:
        """A table from levels by factor name; a factor not given has its default level."""
        unknown = set(levels) - set(BY_NAME)
        if unknown:
            raise ValueError(f"unknown factor {sorted(unknown)[0]!r}")
        missing = [name for name in REQUIRED if name not in levels]
        if missing:
            raise ValueError(f"missing factor {missing[0]!r}")
        return cls(protocol, tuple(levels.get(f.name, (f.default,)) for f in FACTORS))

    def __getitem__(self, name: str) -> tuple[Any, ...]:
        return self.levels[FACTORS.index(BY_NAME[name])]

    def replace(self, **levels: tuple[Any, ...]) -> Factors:
        """This table with the levels of some factors replaced (by factor name)."""
        return Factors.of(
            self.protocol, **{f.name: levels.get(f.name, self[f.name]) for f in FACTORS}
        )


@dataclass(frozen=True)
class Compare:
    """``[compare]``: every other level of ``factor`` against a baseline level, paired per
    repetition. Several baselines serve factor tables with different reference levels (push
    measured with nghttp against ``push=none``, early hints with Chromium against
    ``early_hints=none``); a level is compared with the baseline most like it among those
    whose cell exists (``analysis.compare.nearest_baselines``)."""

    factor: str
    baselines: tuple[str, ...]
    """levels as stored with the trials (a network's name; initcwnd as digits)"""


def factor_levels(f: Factors, factor: str) -> tuple[str, ...]:
    """The levels of ``factor`` in one factor table, as stored with the trials (as text)."""
    stored = BY_NAME[factor].stored
    return tuple(str(stored(v)) for v in f[factor])


@dataclass(frozen=True)
class Experiment:
    name: str
    factors: Factors
    seed: int = 0
    repetitions: int = 1
    timeout_s: float = DEFAULT_TIMEOUT_S
    description: str = ""
    source: str = field(default="<cli>", compare=False)
    retries: int = 0
    """extra attempts of a failed trial, run at once; every failed attempt stays stored"""
    warmup: int = 0
    """trials run first and stored with ``warmup = 1``, never analysed (the first cell's)"""
    outlier_rule: str | None = None
    """``"2sd"``: the report drops, per cell and protocol, values more than 2 standard
    deviations from their mean before comparing (seed 002 §3.4); None keeps every value"""
    fail_on: FailOn = "document"
    """a browser trial fails when its document fails (``document``; a failed subresource is
    a resources row with its error, counted in ``failed_requests``) or when any request for
    the page's resources fails (``any``)"""
    compare: Compare | None = None
    """a factor besides the protocol whose levels run back to back with one loss seed and
    are compared with its baseline in the report"""
    capture: tuple[Capture, ...] = ()
    """what is recorded of every trial besides its measurements (:data:`CAPTURES`): not a
    factor, so a trial's key, cell and results are the same with it or without"""
    also: tuple[Factors, ...] = ()
    """further factor tables (``[[factors]]``), each crossed on its own; their trials are
    added to those of ``factors`` (explicit combinations)"""
    has_quick: bool = False
    """the file has a ``[quick]`` table (a quick variant of its own, not just the ``-quick``
    name)"""

    @property
    def matrices(self) -> tuple[Factors, ...]:
        return (self.factors, *self.also)


def _list(source: str, key: str, value: Any, kind: type) -> tuple[Any, ...]:
    values = value if isinstance(value, list) else [value]
    if not values:
        raise SpecError(source, key, "must list at least one value")
    for i, v in enumerate(values):
        if kind is int and (isinstance(v, bool) or not isinstance(v, int)):
            raise SpecError(source, f"{key}[{i}]", f"must be an integer, got {v!r}")
        if kind is str and not isinstance(v, str):
            raise SpecError(source, f"{key}[{i}]", f"must be a string, got {v!r}")
    if len(set(values)) != len(values):
        raise SpecError(source, key, "lists a value twice")
    return tuple(values)


def _levels(source: str, raw: dict[str, Any], prefix: str, spec: Factor) -> tuple[Any, ...]:
    key = f"{prefix}.{spec.name}"
    written = _list(source, key, raw[spec.name], spec.kind) if spec.name in raw else None
    if written is None:
        return (spec.default,)
    return tuple(spec.parse(v, source, f"{key}[{i}]") for i, v in enumerate(written))


def validate_factors(
    source: str, raw: dict[str, Any], prefix: str = "factors", checks: LevelChecks = NO_CHECKS
) -> Factors:
    """One factor table, parsed and checked: the factors' own checks and ``checks`` (by factor
    name: those a registry makes, :data:`h2lab.runner.levels.REGISTRY_CHECKS`)."""
    unknown = sorted(set(raw) - FACTOR_KEYS)
    if unknown:
        allowed = ", ".join(sorted(FACTOR_KEYS))
        raise SpecError(source, f"{prefix}.{unknown[0]}", f"unknown factor (known: {allowed})")
    for required in ("protocol", *REQUIRED):
        if required not in raw:
            raise SpecError(source, f"{prefix}.{required}", "missing (required)")
    protocol: list[ProtocolName] = []
    for i, p in enumerate(_list(source, f"{prefix}.protocol", raw["protocol"], str)):
        known = member(PROTOCOLS, p)
        if known is None:
            allowed = ", ".join(PROTOCOLS)
            raise SpecError(
                source, f"{prefix}.protocol[{i}]", f"unknown value {p!r} (allowed: {allowed})"
            )
        protocol.append(known)
    levels = tuple(_levels(source, raw, prefix, spec) for spec in FACTORS)
    for spec, values in zip(FACTORS, levels, strict=True):
        for check in (spec.check, checks.get(spec.name)):
            if check is None:
                continue
            for i, v in enumerate(values):
                check(v, tuple(protocol), source, f"{prefix}.{spec.name}[{i}]")
    return Factors(tuple(protocol), levels)


def apply_quick(raw: dict[str, Any], source: str) -> dict[str, Any]:
    """The experiment's quick variant (``h2lab run --quick``): ``[quick]`` overrides
    ``repetitions``, ``warmup``, ``timeout_s``, and ``[quick.factors]`` replaces factor lists
    (in every factor table), typically with a subset of the levels; ``[[quick.factors]]``
    tables replace the factor tables themselves (an experiment of several arms)."""
    quick = raw.get("quick", {})
    if not isinstance(quick, dict):
        raise SpecError(source, "quick", "must be a table [quick]")
    unknown = sorted(set(quick) - QUICK_KEYS)
    if unknown:
        known = ", ".join(sorted(QUICK_KEYS))
        raise SpecError(source, f"quick.{unknown[0]}", f"unknown key (known: {known})")
    out = {k: v for k, v in raw.items() if k != "quick"}
    out.update({k: v for k, v in quick.items() if k != "factors"})
    over = quick.get("factors", {})
    if isinstance(over, list):
        # [[quick.factors]]: the quick variant's own factor tables, in place of every table
        out["factors"] = over
        return out
    if not isinstance(over, dict):
        raise SpecError(source, "quick.factors", "must be a table [quick.factors]")
    tables = raw.get("factors")
    if isinstance(tables, dict):
        out["factors"] = {**tables, **over}
    elif isinstance(tables, list):
        out["factors"] = [{**t, **over} if isinstance(t, dict) else t for t in tables]
    return out


def parse_experiment(
    raw: dict[str, Any], source: str, *, quick: bool = False, checks: LevelChecks = NO_CHECKS
) -> Experiment:
    """The experiment ``raw`` says (its quick variant with ``quick``); ``checks`` as
    :func:`validate_factors` takes them."""
    has_quick = "quick" in raw
    quick_raw = apply_quick(raw, source)  # its keys are checked either way
    if quick:
        raw = quick_raw
        if isinstance(raw.get("name"), str):
            raw["name"] += "-quick"
    unknown = sorted(set(raw) - TOP_KEYS)
    if unknown:
        raise SpecError(source, unknown[0], f"unknown key (known: {', '.join(sorted(TOP_KEYS))})")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise SpecError(source, "name", "missing or not a string")
    seed = raw.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SpecError(source, "seed", f"must be a non-negative integer, got {seed!r}")
    reps = raw.get("repetitions", 1)
    if isinstance(reps, bool) or not isinstance(reps, int) or not 1 <= reps <= 10_000:
        raise SpecError(source, "repetitions", f"must be an integer 1..10000, got {reps!r}")
    timeout = raw.get("timeout_s", DEFAULT_TIMEOUT_S)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0 < timeout <= MAX_TIMEOUT_S
    ):
        raise SpecError(
            source,
            "timeout_s",
            f"must be seconds in (0, {MAX_TIMEOUT_S:g}], got {timeout!r}",
        )
    retries = _bounded_int(source, "retries", raw.get("retries", 0), MAX_RETRIES)
    warmup = _bounded_int(source, "warmup", raw.get("warmup", 0), MAX_WARMUP)
    outlier_rule = raw.get("outlier_rule", "none")
    if outlier_rule not in OUTLIER_RULES:
        raise SpecError(
            source,
            "outlier_rule",
            f"must be one of {', '.join(OUTLIER_RULES)}, got {outlier_rule!r}",
        )
    written = raw.get("fail_on", "document")
    fail_on = member(FAIL_ON, written)
    if fail_on is None:
        raise SpecError(source, "fail_on", f"must be one of {', '.join(FAIL_ON)}, got {written!r}")
    factors = raw.get("factors")
    tables = factors if isinstance(factors, list) else [factors]
    if not tables or not all(isinstance(t, dict) for t in tables):
        raise SpecError(source, "factors", "missing table [factors] (or tables [[factors]])")
    matrices = tuple(
        validate_factors(
            source, t, prefix="factors" if len(tables) == 1 else f"factors[{i}]", checks=checks
        )
        for i, t in enumerate(tables)
    )
    compare = _compare(source, raw.get("compare"), matrices)
    capture = parse_capture(raw.get("capture", []), source, "capture")
    return Experiment(
        name=name,
        factors=matrices[0],
        seed=seed,
        repetitions=reps,
        timeout_s=float(timeout),
        description=str(raw.get("description", "")),
        source=source,
        retries=retries,
        warmup=warmup,
        outlier_rule=None if outlier_rule == "none" else outlier_rule,
        fail_on=fail_on,
        compare=compare,
        capture=capture,
        also=matrices[1:],
        has_quick=has_quick,
    )


def parse_capture(raw: object, source: str, key: str) -> tuple[Capture, ...]:
    """``capture``: a name of :data:`CAPTURES` or a list of them (``"pcap"``, ``["pcap"]``)."""
    values: list[Capture] = []
    for i, v in enumerate(raw if isinstance(raw, list) else [raw]):
        known = member(CAPTURES, v)
        if known is None:
            where = f"{key}[{i}]" if isinstance(raw, list) else key
            raise SpecError(source, where, f"unknown capture {v!r} (known: {', '.join(CAPTURES)})")
        values.append(known)
    if len(set(values)) != len(values):
        raise SpecError(source, key, "lists a value twice")
    return tuple(values)


def _as_stored(factor: str, level: str, source: str, key: str) -> str:
    """A level named in ``[compare]`` or ``--only`` as the trials store it: a network by its
    name, a server's ``conf=`` and a page's file by their content (relative to the experiment
    file)."""
    if factor == "network":
        return parse_network(level, source, field=key).name
    if factor == "server" and "conf=" in level:
        return str(BY_NAME["server"].stored(BY_NAME["server"].parse(level, source, key)))
    if factor == "page":
        return portable_page(str(_relative_to(base_dir(source), level)))
    return level


def _compare(source: str, raw: object, matrices: tuple[Factors, ...]) -> Compare | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise SpecError(source, "compare", "must be a table [compare] with factor and baseline")
    unknown = sorted(set(raw) - set(COMPARE_DOCS))
    if unknown:
        raise SpecError(source, f"compare.{unknown[0]}", "unknown key (known: baseline, factor)")
    factor = raw.get("factor")
    if factor not in COMPARABLE:
        raise SpecError(
            source, "compare.factor", f"must be one of {', '.join(COMPARABLE)}, got {factor!r}"
        )
    given = raw.get("baseline")
    listed = given if isinstance(given, list) else [given]
    levels = [factor_levels(f, factor) for f in matrices]
    known = ", ".join(dict.fromkeys(v for lv in levels for v in lv))
    baselines: list[str] = []
    for i, b in enumerate(listed):
        key = f"compare.baseline[{i}]" if isinstance(given, list) else "compare.baseline"
        if isinstance(b, bool) or not isinstance(b, str | int):
            raise SpecError(source, key, f"must be a level of {factor}, got {b!r}")
        level = _as_stored(factor, str(b), source, key)
        if not any(level in lv for lv in levels):
            raise SpecError(source, key, f"{level!r} is not a level of {factor} (levels: {known})")
        if not any(level in lv and len(lv) > 1 for lv in levels):
            raise SpecError(
                source,
                key,
                f"no factor table lists {level!r} beside another level of {factor}: "
                "nothing to compare",
            )
        baselines.append(level)
    if not baselines or len(set(baselines)) != len(baselines):
        raise SpecError(
            source, "compare.baseline", "must name one level, or a list of distinct ones"
        )
    return Compare(factor, tuple(baselines))


def _bounded_int(source: str, key: str, value: object, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= most:
        raise SpecError(source, key, f"must be an integer 0..{most}, got {value!r}")
    return value


MAX_EXPERIMENT_BYTES = 16 << 20
"""Largest experiment file read (the shipped ones are a few KB)."""


def load_experiment(
    path: Path, *, quick: bool = False, checks: LevelChecks = NO_CHECKS
) -> Experiment:
    """The experiment file at ``path``; ``checks`` as :func:`validate_factors` takes them."""
    source = str(path)
    try:
        if path.stat().st_size > MAX_EXPERIMENT_BYTES:
            raise SpecError(source, "file", f"larger than {MAX_EXPERIMENT_BYTES} bytes")
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(source, "file", f"cannot read: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise SpecError(source, f"line {line}", "not UTF-8 text (TOML is UTF-8)") from exc
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(source, "toml", f"malformed TOML: {exc}") from exc
    except RecursionError as exc:  # tomllib recurses into nested arrays and tables
        raise SpecError(source, "toml", "arrays or tables nested too deep") from exc
    quick_table = raw.get("quick")
    quick_factors = quick_table.get("factors") if isinstance(quick_table, dict) else None
    for table in [*_tables(raw.get("factors")), *_tables(quick_factors)]:
        if isinstance(table.get("page"), list):
            table["page"] = [_relative_to(path.parent, p) for p in table["page"]]
    return parse_experiment(raw, source, quick=quick, checks=checks)


def _tables(factors: object) -> list[dict[str, Any]]:
    tables = factors if isinstance(factors, list) else [factors]
    return [t for t in tables if isinstance(t, dict)]


def _relative_to(folder: Path, page: object) -> object:
    """``warc:corpus/x.warc.gz`` (``journey:shop.toml``) in an experiment file means relative
    to that file."""
    if not isinstance(page, str):
        return page
    kind, sep, rest = page.partition(":")
    if not sep or kind not in (*IMPORT_KINDS, JOURNEY) or rest.startswith("/"):
        return page
    return f"{kind}:{os.path.normpath(folder / rest)}"


def parse_only(exp: Experiment, texts: list[str]) -> dict[str, frozenset[str]]:
    """``--only FACTOR=LEVEL`` options: the levels kept per factor (levels of one factor are
    alternatives, factors are all required); a LEVEL with ``*``, ``?`` or ``[`` is a
    shell-style pattern that keeps every level it matches, and must match one. The compared
    factor (``[compare]``) and the protocol cannot be selected: a block runs back to back with
    one seed, so a selection never splits one. A LEVEL that is a level's exact name is that
    level, even with pattern characters in it (a page ``corpus/a[1].har``)."""
    compared = exp.compare.factor if exp.compare else None
    only: dict[str, set[str]] = {}
    for text in texts:
        factor, sep, level = text.partition("=")
        if not (sep and level):
            raise SpecError("--only", text, "must be FACTOR=LEVEL, e.g. network=cell-poor")
        if factor not in COMPARABLE or factor == compared:
            allowed = [f for f in COMPARABLE if f != compared]
            why = " ([compare] pairs its levels)" if factor == compared else ""
            raise SpecError(
                "--only", text, f"cannot select on {factor!r}{why}; factors: {', '.join(allowed)}"
            )
        levels = dict.fromkeys(v for f in exp.matrices for v in factor_levels(f, factor))
        known = ", ".join(levels)
        if level in levels:
            picked = [level]
        elif any(c in level for c in "*?["):  # a pattern over the names: network=s002-250ms-*
            picked = [v for v in levels if fnmatch.fnmatchcase(v, level)]
            if not picked:
                why = f"{level!r} matches no level of {factor} (levels: {known})"
                raise SpecError("--only", text, why)
        else:
            level = _as_stored(factor, level, "--only", text)
            if level not in levels:
                why = f"{level!r} is not a level of {factor} (levels: {known})"
                raise SpecError("--only", text, why)
            picked = [level]
        only.setdefault(factor, set()).update(picked)
    return {f: frozenset(v) for f, v in only.items()}
