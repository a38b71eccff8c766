"""A trial's factors, defined once.

:class:`TrialFactors` is the one definition: each of its fields is a factor, and the field's
:class:`Factor` (its metadata) says how experiment files spell it, how a level is parsed and
checked, its default, whether ``[compare]`` and ``--only`` may name it, its store column and how
it enters the trial key. Everything else derives from it: experiment validation
(:mod:`h2lab.spec.experiment`), matrix expansion and trial keys (:mod:`h2lab.runner.matrix`),
the store's columns and CSV/Parquet exports (:mod:`h2lab.store.sqlite`), the analysis cell
(:class:`Cell`) and the report's factor columns. The protocol is not among them: it is what a
block pairs (h2 against h1), listed per factor table.

Adding a factor is a field here with its :class:`Factor`, the parser of its levels, and the
adapters that act on it (see docs/architecture.md, "Where to add ...").

Pure: a level that only a registry can judge (a server or client name, and the protocols it
takes) is checked by a :data:`LevelCheck` the caller supplies (:mod:`h2lab.runner.levels` has the
registries'), so this layer imports none of them. The page parser imports its checker when
called, never at import time.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from h2lab.errors import SpecError
from h2lab.spec.network import NetworkProfile, parse_network
from h2lab.spec.options import base_dir, content_digest, portable, resolve_paths
from h2lab.spec.protocols import QUIC, TLS_VERSIONS
from h2lab.spec.tcp import CONGESTION_CONTROLS, TcpSettings

Stored = str | int
"""A level as the store keeps it (a network by its name, initcwnd as a number)."""

MAX_INITCWND_PACKETS = 1000
View = Literal["first", "repeat"]
"""WebPageTest's first and repeat views (the ``view`` factor)."""
VIEWS: tuple[View, ...] = ("first", "repeat")
REPEAT: View = "repeat"
Discovery = Literal["forced", "alt-svc", "https-rr", "udp-blocked"]
"""How a browser finds that an origin speaks HTTP/3 (the ``discovery`` factor)."""
DISCOVERIES: tuple[Discovery, ...] = ("forced", "alt-svc", "https-rr", "udp-blocked")
FORCED: Discovery = "forced"
ALT_SVC: Discovery = "alt-svc"
UDP_BLOCKED: Discovery = "udp-blocked"
"""The discovery on a link that drops UDP to the h3 port."""
HTTPS_RR: Discovery = "https-rr"
"""The discovery where the lab's resolver publishes an HTTPS record (RFC 9460) for each h3
origin, and the browser resolves the lab's names through it, as shipped."""
BY_ALT_SVC: frozenset[str] = frozenset({ALT_SVC, HTTPS_RR, UDP_BLOCKED})
"""The discoveries where the servers send ``Alt-Svc`` and the browser is told nothing: it
learns h3 as shipped (``udp-blocked``: then fails to reach it, and falls back to TCP;
``https-rr``: from DNS before its first connection, the header as deployed sites send it)."""
BY_DNS: frozenset[str] = frozenset({HTTPS_RR})
"""The discoveries where every trial of the cell (its h2s pair too) resolves the lab's names
through the lab's resolver (A and HTTPS records, one lookup each, across the link) instead of
the namespace's ``/etc/hosts``."""

ALL_ORIGINS = "all"
"""The ``h3_origins`` default: every origin of the page speaks h3."""
H3_ORIGINS_NAMED: tuple[str, ...] = (ALL_ORIGINS, "first-party")
"""The ``h3_origins`` levels with a name; any other is a list of hosts joined by ``+``."""
MAX_H3_HOSTS = 64
_LABEL = r"[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?"
_HOST = re.compile(rf"^(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*$")

LevelCheck = Callable[[Any, tuple[str, ...], str, str], None]
"""``check(level, protocols, source, key)``: raises :class:`SpecError` naming ``source`` and
``key`` when ``level`` cannot go with a factor table's ``protocols``."""
LevelChecks = Mapping[str, LevelCheck]
"""Checks by factor name that need more than this layer knows (a registry of servers or
clients), supplied by the caller of :func:`h2lab.spec.experiment.validate_factors`."""
NO_CHECKS: LevelChecks = {}


@dataclass(frozen=True)
class Factor:
    """How one factor is written, parsed, stored and keyed."""

    name: str
    """its key in ``[factors]``, ``[compare] factor`` and ``--only``"""
    column: str
    """its :class:`Cell` field name and store column (``initcwnd`` -> ``initcwnd_packets``)"""
    kind: type
    """the TOML type of one level: ``str`` or ``int``"""
    doc: str
    parse: Callable[[Any, str, str], Any]
    """``parse(value, source, key)``: one level as written -> the trial's typed level, or
    :class:`SpecError` naming ``source`` and ``key``"""
    default: Any = None
    """the level when an experiment does not list the factor; None: it must be listed"""
    stored: Callable[[Any], Stored] = lambda level: level
    """the typed level -> its store value (the level itself, but a network's name)"""
    token: Callable[[Stored], str] = str
    """a stored level -> its part of the trial key (:attr:`TrialSpec.block`)"""
    keyed_at_default: bool = True
    """False for a factor added after trial keys were first written: its default level adds
    nothing to the key, so stored trials keep their keys (and resume) when it is added"""
    comparable: bool = True
    """``[compare] factor`` and ``--only`` may name it"""
    label: str = ""
    """the report's column for it; factors with one label share a column (default: its name)"""
    flag: str = ""
    """its spelling on ``h2lab load``'s command line: an option (default ``--name``, ``_`` as
    ``-``) or, in capitals, its argument (``PAGE``)"""
    usage: str = ""
    """the command line's help for it, how a level is written (default: :attr:`doc`); the
    command line puts a registry's names before it (servers, clients:
    :data:`h2lab.runner.levels.LISTED`), which this layer cannot import"""
    check: LevelCheck | None = None
    """a level that cannot go with a factor table's protocols raises :class:`SpecError` (a
    check this layer can make: the rest come from the caller's :data:`LevelChecks`)"""

    @property
    def sql(self) -> str:
        return "INTEGER" if self.kind is int else "TEXT"

    @property
    def heading(self) -> str:
        return self.label or self.name

    @property
    def option(self) -> str:
        """:attr:`flag`, or the default ``--name``."""
        return self.flag or "--" + self.name.replace("_", "-")

    def key_part(self, value: Stored) -> str | None:
        """This level's part of a trial key (None: none, see :attr:`keyed_at_default`)."""
        if not self.keyed_at_default and value == self.stored(self.default):
            return None
        return self.token(value)


# ----------------------------------------------------------------------- level parsers

JOURNEY = "journey"
"""A page level ``journey:FILE``: the steps of a journey file on the page it names
(:mod:`h2lab.spec.journey`)."""

IMPORT_KINDS = ("warc", "har", "dir")
"""Page specs that import on the fly: ``warc:FILE``, ``har:FILE``, ``dir:FOLDER#ENTRY`` (a path
relative to the experiment file that names it)."""


def portable_page(spec: str) -> str:
    """A page level as a trial's key and the store carry it: one that names a file or folder
    by its absolute path (``warc:``, ``har:``, ``dir:``, ``journey:``) written by its name and
    content, ``warc:wikipedia.warc.gz@sha256:0123456789ab`` (``dir:site@sha256:...#/a.html``),
    so a results folder moved to another machine, or the experiment run from another
    checkout, resumes (as a server's ``conf=``: :func:`h2lab.spec.options.portable`). A
    journey is its file's content (the page it names, by that file's text). Any other level,
    a relative path (an experiment file named relatively: the committed reproductions' keys),
    or a path that names nothing readable (validation says so), is left as written."""
    kind, sep, rest = spec.partition(":")
    if not sep or kind not in (*IMPORT_KINDS, JOURNEY) or not rest.startswith("/"):
        return spec
    where, hash_, entry = rest.partition("#") if kind == "dir" else (rest, "", "")
    path = Path(where)
    try:
        return f"{kind}:{path.name}@sha256:{content_digest(path)}{hash_}{entry}"
    except OSError:
        return spec


def _network(value: str, source: str, key: str) -> NetworkProfile:
    return parse_network(value, source, field=key)


def _as_written(value: str, source: str, key: str) -> str:
    """A name a registry checks (the page store, a server's or client's registry: with the
    table's protocols, by the caller's :data:`LevelChecks`)."""
    return value


def _server(value: str, source: str, key: str) -> str:
    """A server spec as written, but a relative ``conf=FILE`` made absolute (relative to the
    experiment file), so that the trial records the file it ran with."""
    return resolve_paths(value, base_dir(source), source, key)


def _one_of(allowed: tuple[str, ...]) -> Callable[[str, str, str], str]:
    def parse(value: str, source: str, key: str) -> str:
        if value not in allowed:
            raise SpecError(source, key, f"unknown value {value!r} (allowed: {', '.join(allowed)})")
        return value

    return parse


def _initcwnd(value: int, source: str, key: str) -> int:
    if not 1 <= value <= MAX_INITCWND_PACKETS:
        raise SpecError(source, key, f"must be 1..{MAX_INITCWND_PACKETS} packets, got {value}")
    return value


def _check_tls(level: str, protocols: tuple[str, ...], source: str, key: str) -> None:
    quic = [p for p in protocols if p in QUIC]
    if level != "1.3" and quic:
        raise SpecError(
            source, key, f"TLS {level} cannot carry {quic[0]}: QUIC is TLS 1.3 only (RFC 9001)"
        )


def _needs_h3(name: str, default: str, does: str) -> LevelCheck:
    """The check of a factor that only an h3 trial has: a level other than ``default`` in a
    table without h3 is refused (``does``: what the factor is, for the line)."""

    def check(level: str, protocols: tuple[str, ...], source: str, key: str) -> None:
        if level != default and not any(p in QUIC for p in protocols):
            raise SpecError(
                source, key, f"{name} {level} {does}, and this table has no h3 "
                f"(protocols: {', '.join(protocols)})",
            )  # fmt: skip

    return check


_check_discovery = _needs_h3("discovery", FORCED, "is how a browser finds h3")


def _h3_origins(value: str, source: str, key: str) -> str:
    """``all``, ``first-party``, or hosts joined by ``+`` (lower case, sorted: one spelling
    per set, so one trial key)."""
    if value in H3_ORIGINS_NAMED:
        return value
    hosts = sorted({h.lower() for h in value.split("+")})
    bad = next((h for h in hosts if not _HOST.match(h)), None)
    if bad is not None or not 1 <= len(hosts) <= MAX_H3_HOSTS:
        raise SpecError(
            source, key, f"{value[:80]!r} is neither {' nor '.join(H3_ORIGINS_NAMED)} nor a list "
            f"of at most {MAX_H3_HOSTS} host names joined by + (o1.h2lab.test+o2.h2lab.test)"
            + (f": {bad[:80]!r} is no host name" if bad is not None else ""),
        )  # fmt: skip
    return "+".join(hosts)


_check_h3_origins = _needs_h3("h3_origins", ALL_ORIGINS, "names the origins that speak h3")


def _is(spec: Factor) -> dict[str, Factor]:
    """A :class:`TrialFactors` field's metadata: its definition."""
    return {"factor": spec}


# ----------------------------------------------------------------------- the definition


@dataclass(frozen=True)
class TrialFactors:
    """One trial's levels of every factor (typed: a network is its parsed profile)."""

    page: str = field(
        metadata=_is(Factor(
            "page", "page", str, "page spec: synthetic, imported or id", _as_written, flag="PAGE",
            stored=portable_page,
            usage="synthetic:n=64,size=10KB,origins=1, warc:FILE, har:FILE, dir:FOLDER#ENTRY, "
            "a page id",
        ))
    )  # fmt: skip
    network: NetworkProfile = field(
        metadata=_is(Factor(
            "network", "network", str, "network profile (preset or spec)", _network,
            stored=lambda n: n.name, usage="profile name or rtt=..,down=..,up=..,loss=..",
        ))
    )  # fmt: skip
    server: str = field(
        metadata=_is(Factor(
            "server", "server", str, "server adapter spec", _server, default="nginx",
            stored=portable,
            usage="options after the name, NAME:key=value,... (docs/reference.md); conf=FILE "
            "adds your config fragment to a server that takes it",
        ))
    )  # fmt: skip
    client: str = field(
        metadata=_is(Factor(
            "client", "client", str, "client adapter spec", _as_written, default="h2load",
            usage="options after the name, NAME:key=value,... (docs/reference.md)",
        ))
    )  # fmt: skip
    congestion_control: str = field(
        metadata=_is(Factor(
            "congestion_control", "congestion_control", str,
            "TCP congestion control of both namespaces", _one_of(CONGESTION_CONTROLS),
            default="cubic", label="tcp", flag="--cc", usage="TCP congestion control",
        ))
    )  # fmt: skip
    initcwnd: int = field(
        metadata=_is(Factor(
            "initcwnd", "initcwnd_packets", int, "initial congestion window, packets (RFC 6928)",
            _initcwnd, default=10, token=lambda v: f"iw{v}", label="tcp",
            usage="initial congestion window, packets",
        ))
    )  # fmt: skip
    tls: str = field(
        metadata=_is(Factor(
            "tls", "tls", str, "the one TLS version servers offer for h1s/h2s (h3: 1.3)",
            _one_of(TLS_VERSIONS), default="1.3", token=lambda v: f"tls{v}",
            keyed_at_default=False, check=_check_tls,
            usage="TLS version servers offer for h1s/h2s",
        ))
    )  # fmt: skip

    view: View = field(
        metadata=_is(Factor(
            "view", "view", str,
            "first view (a cold browser), or the repeat view (the page again in the same "
            "browser profile: connections closed and HTTP cache emptied, TLS session tickets "
            "kept, so 0-RTT where the server accepts early data)",
            _one_of(VIEWS), default="first", keyed_at_default=False,
            usage="first, or repeat (the second visit: TLS session tickets kept, 0-RTT)",
        ))
    )  # fmt: skip

    discovery: Discovery = field(
        metadata=_is(Factor(
            "discovery", "discovery", str,
            "how the browser finds h3: forced (every origin known to speak it from the first "
            "request, no TCP), alt-svc (learnt from the server's Alt-Svc header, as a "
            "browser as shipped does: the page starts over TCP), https-rr (learnt from an "
            "HTTPS DNS record the lab's resolver publishes, before the first connection; the "
            "cell's names are looked up across the link), or udp-blocked (alt-svc on a link "
            "that drops UDP to port 443: the browser's fallback to TCP)",
            _one_of(DISCOVERIES), default=FORCED, keyed_at_default=False,
            check=_check_discovery,
            usage="forced, alt-svc (h3 learnt from the Alt-Svc header: first views start over "
            "h2), https-rr (from an HTTPS DNS record) or udp-blocked (alt-svc where the link "
            "drops UDP to 443)",
        ))
    )  # fmt: skip

    h3_origins: str = field(
        metadata=_is(Factor(
            "h3_origins", "h3_origins", str,
            "which origins of the page speak h3 in an h3 trial: all, first-party (the hosts "
            "under the registrable domain of the entry document, as deployed sites serve h3 "
            "while their third parties may not), or hosts joined by +; the others speak h2",
            _h3_origins, default=ALL_ORIGINS, keyed_at_default=False, token=lambda v: f"h3o={v}",
            check=_check_h3_origins,
            usage="all, first-party (h3 on the page's own site, h2 elsewhere) or HOST+HOST",
        ))
    )  # fmt: skip

    @property
    def tcp(self) -> TcpSettings:
        return TcpSettings(self.congestion_control, self.initcwnd)

    def cell(self) -> Cell:
        return Cell(tuple(f.stored(getattr(self, f.name)) for f in FACTORS))


FACTORS: tuple[Factor, ...] = tuple(f.metadata["factor"] for f in dataclasses.fields(TrialFactors))
"""Every factor, in key order."""
BY_NAME: Mapping[str, Factor] = {f.name: f for f in FACTORS}
BY_COLUMN: Mapping[str, Factor] = {f.column: f for f in FACTORS}
REQUIRED = tuple(f.name for f in FACTORS if f.default is None)
COMPARABLE = tuple(f.name for f in FACTORS if f.comparable)
"""Factors ``[compare]`` and ``--only`` may name (never the protocol)."""


def _spec(name: str) -> Factor:
    """The factor named ``name``, or whose store column is ``name``."""
    return BY_NAME.get(name) or BY_COLUMN[name]


def trial_factors(levels: Mapping[str, Any]) -> TrialFactors:
    """Typed levels by factor name, defaults filled in for those not given."""
    unknown = set(levels) - set(BY_NAME)
    if unknown:
        raise ValueError(f"unknown factor {sorted(unknown)[0]!r}")
    return TrialFactors(**{f.name: levels.get(f.name, f.default) for f in FACTORS})


# ------------------------------------------------------------------------- the stored form


@dataclass(frozen=True, order=True)
class Cell:
    """A trial's levels as stored, in :data:`FACTORS` order: everything a trial shares with
    the other trials of its cell but the protocol and the repetition."""

    levels: tuple[Stored, ...]

    @classmethod
    def of(cls, **columns: Stored) -> Cell:
        """A cell from store columns; a factor not given takes its default level."""
        unknown = set(columns) - set(BY_COLUMN)
        if unknown:
            raise ValueError(f"unknown column {sorted(unknown)[0]!r}")
        missing = [f.column for f in FACTORS if f.default is None and f.column not in columns]
        if missing:
            raise ValueError(f"missing column {missing[0]!r}")
        return cls(
            tuple(
                columns[f.column] if f.column in columns else f.stored(f.default) for f in FACTORS
            )
        )

    def __getitem__(self, name: str) -> Stored:
        """The level of factor ``name`` (or of store column ``name``)."""
        return self.levels[FACTORS.index(_spec(name))]

    def columns(self) -> dict[str, Stored]:
        return {f.column: v for f, v in zip(FACTORS, self.levels, strict=True)}

    def text(self, name: str) -> str:
        """A level as the report shows it (initcwnd as ``iw10``)."""
        spec = _spec(name)
        value = self[name]
        return spec.token(value) if spec.kind is int else str(value)

    def replace(self, name: str, level: Stored) -> Cell:
        spec = _spec(name)
        i = FACTORS.index(spec)
        value = int(level) if spec.kind is int else str(level)
        return Cell((*self.levels[:i], value, *self.levels[i + 1 :]))

    def key_parts(self, replaced: str | None = None) -> list[str]:
        """The cell's parts of a trial key; ``replaced`` (a factor name) is written ``*``."""
        parts = []
        for f, v in zip(FACTORS, self.levels, strict=True):
            part = "*" if f.name == replaced else f.key_part(v)
            if part is not None:
                parts.append(part)
        return parts

    def describe(self) -> str:
        return " | ".join(self.text(f.name) for f in FACTORS)

    @property
    def page(self) -> str:
        return str(self["page"])

    @property
    def network(self) -> str:
        return str(self["network"])

    @property
    def server(self) -> str:
        return str(self["server"])

    @property
    def client(self) -> str:
        return str(self["client"])


def report_columns() -> dict[str, tuple[str, ...]]:
    """The report's factor columns: heading -> the factors shown in it, in key order."""
    out: dict[str, tuple[str, ...]] = {}
    for f in FACTORS:
        out[f.heading] = (*out.get(f.heading, ()), f.name)
    return out
