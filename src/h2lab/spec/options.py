"""Options of servers and clients (``name:key=value,...``), each declared once.

An adapter's options are one frozen dataclass whose every field is made by :func:`option`: the
field's type, and in its metadata the option's key, value :class:`Parser`, default, one-line
doc and example. From that declaration alone :func:`parse` turns the ``key=value`` pairs of a
spec into the typed options object, refusing an unknown key, a malformed value or a missing
required option with an :class:`OptionError` naming the key, the same way for every adapter;
docs/reference.md lists the same declarations (:mod:`h2lab.reference`). A cross-option rule
(``per_host`` at most ``max``) is the dataclass's ``__post_init__`` raising ValueError.

Also here: ``name:key=value,...`` split once (:func:`parse_named`), and a server spec's
``conf=FILE`` made absolute against its experiment file's folder (:func:`resolve_paths`), and
written by its content for a trial's key (:func:`portable`).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from h2lab.errors import SpecError
from h2lab.units import parse_duration_ms, parse_size_bytes

ValueT = TypeVar("ValueT")
OptionsT = TypeVar("OptionsT")

CONF_OPTION = "conf"
"""The server option naming the user's configuration fragment (:mod:`h2lab.servers.fragment`)."""

REQUIRED: Any = dataclasses.MISSING
"""The default of an option that has none: a spec must give it."""

_METADATA_KEY = "h2lab.option"


class OptionError(ValueError):
    """An option refused, in one line naming its key; the registry adds the spec as written
    and the file and field it came from (:meth:`h2lab.spec.registry.Registry.get`)."""


@dataclass(frozen=True)
class Parser(Generic[ValueT]):
    """How one option's value is read: ``parse(text)`` returns the typed value, or raises
    ValueError saying what was expected (the option's key is added by :func:`parse`)."""

    values: str
    """how a value is written, for docs/reference.md (``0|1``, ``1..100``, ``DURATION``)"""
    parse: Callable[[str], ValueT]


def choice(*allowed: str) -> Parser[str]:
    """One of ``allowed``, as written."""

    def parse(text: str) -> str:
        if text not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}, got {text!r}")
        return text

    return Parser("|".join(allowed), parse)


def integer(low: int, high: int) -> Parser[int]:
    """A whole number ``low..high``, digits only."""

    def parse(text: str) -> int:
        if not text.isdigit() or not low <= int(text) <= high:
            raise ValueError(f"expected an integer {low}..{high}, got {text!r}")
        return int(text)

    return Parser(f"{low}..{high}", parse)


def number(low: float, high: float) -> Parser[float]:
    """A number ``low..high``, fractions allowed."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not low <= value <= high:  # NaN (not a number) fails too
            raise ValueError(f"expected a number {low:g}..{high:g}, got {text!r}")
        return value

    return Parser(f"{low:g}..{high:g}", parse)


def _flag(text: str) -> bool:
    if text not in ("0", "1"):
        raise ValueError(f"expected 0 or 1, got {text!r}")
    return text == "1"


FLAG = Parser("0|1", _flag)
"""A switch: ``0`` or ``1``."""


DURATION = Parser("DURATION", parse_duration_ms)
"""A duration (``200ms``, ``2s``), in milliseconds (never negative: the unit parser refuses it)."""

SIZE = Parser("SIZE", parse_size_bytes)
"""A size (``16KB``, ``1MiB``), in bytes."""


@dataclass(frozen=True)
class Option:
    """One option of a server or client, as :func:`option` declares it."""

    key: str
    """the option's key; a family's ends in ``<...>`` (``delay_<class>``)"""
    parser: Parser[Any]
    doc: str
    """what it does, one sentence"""
    example: str
    """the options part of a spec that uses it and that the adapter accepts (``push=css-js``;
    ``FILE``: any readable file); docs/reference.md shows it after the adapter's name"""
    members: tuple[str, ...] = ()
    """a family's members: ``delay_<class>`` takes ``delay_html``, ``delay_css``, ..."""
    values_doc: str = ""
    """how a value is written when not the parser's own words (``as push``)"""

    @property
    def values(self) -> str:
        return self.values_doc or self.parser.values

    @property
    def stem(self) -> str:
        """A family's keys before the member (``delay_``); the key itself otherwise."""
        return self.key.split("<", 1)[0] if self.members else self.key

    def matches(self, key: str) -> bool:
        return key.startswith(self.stem) if self.members else key == self.key


def option(
    parser: Parser[Any],
    default: Any,
    doc: str,
    example: str,
    *,
    key: str = "",
    members: tuple[str, ...] = (),
    values: str = "",
) -> Any:
    """A field of an options dataclass that is an option: ``key`` (default: the field's name)
    read by ``parser``, ``default`` when absent (:data:`REQUIRED`: none). A family (``members``)
    collects ``stem<member>=value`` pairs into a tuple of ``(member, value)`` sorted by member."""
    opt = Option(key, parser, doc, example, members, values)
    return dataclasses.field(default=default, metadata={_METADATA_KEY: opt})


@dataclass(frozen=True)
class Declared:
    """An options dataclass's options, each with its field."""

    options: tuple[Option, ...]
    """in field order"""
    fields: tuple[str, ...]
    """the field of each option"""
    required: tuple[bool, ...]
    """whether each option has no default"""
    refused: Mapping[str, str]
    """keys refused with a reason of their own (the dataclass's ``refused``)"""


class NoOptions:
    """The options of an adapter that takes none."""


_DECLARED: dict[type[Any], Declared] = {NoOptions: Declared((), (), (), {})}


def declared(kind: type[Any]) -> Declared:
    """What the dataclass ``kind`` declares (TypeError when a field is not an :func:`option`:
    h2lab's own slip, found when the adapter registers)."""
    if kind not in _DECLARED:
        _DECLARED[kind] = _declare(kind)
    return _DECLARED[kind]


def _declare(kind: type[Any]) -> Declared:
    options, names, required = [], [], []
    for f in dataclasses.fields(kind):
        opt = f.metadata.get(_METADATA_KEY)
        if not isinstance(opt, Option):
            raise TypeError(f"{kind.__name__}.{f.name} is not declared with option()")
        options.append(dataclasses.replace(opt, key=opt.key or f.name))
        names.append(f.name)
        no_default = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        required.append(no_default)
    refused = getattr(kind, "refused", {})
    return Declared(tuple(options), tuple(names), tuple(required), refused)


def parse(kind: type[OptionsT], raw: Mapping[str, str], name: str = "") -> OptionsT:
    """``raw`` (``{"per_host": "5"}``) as the options object ``kind``; an unknown key, a value
    its parser refuses, a required option missing or a cross-option rule broken (``kind``'s
    ``__post_init__``) is an :class:`OptionError` naming the key (``name``: the adapter's, for
    the message)."""
    d = declared(kind)
    who = name or "it"
    given: dict[str, Any] = {}
    for key, text in raw.items():
        at = next((i for i, o in enumerate(d.options) if o.matches(key)), None)
        if at is None:
            if key in d.refused:
                raise OptionError(f"{key}: {d.refused[key]}")
            taken = ", ".join(o.key for o in d.options) or "none"
            raise OptionError(f"no option {key!r} ({who} takes: {taken})")
        opt = d.options[at]
        member = key.removeprefix(opt.stem)
        if opt.members and member not in opt.members:
            raise OptionError(f"{key}: {member!r} is not one of {', '.join(opt.members)}")
        try:
            value = opt.parser.parse(text)
        except ValueError as exc:
            raise OptionError(f"{key}: {exc}") from None
        if opt.members:
            given.setdefault(d.fields[at], {})[member] = value
        else:
            given[d.fields[at]] = value
    for i, opt in enumerate(d.options):
        if d.required[i] and d.fields[i] not in given:
            raise OptionError(f"{who} needs {opt.key}= (e.g. {name or 'name'}:{opt.example})")
    for i, opt in enumerate(d.options):
        if opt.members and d.fields[i] in given:
            given[d.fields[i]] = tuple(sorted(given[d.fields[i]].items()))
    try:
        return kind(**given)
    except ValueError as exc:  # a rule between options (__post_init__)
        raise OptionError(str(exc)) from None


def split_named(spec: str, kind: str) -> tuple[str, dict[str, str]]:
    """``"chromium:device=mobile,cpu=4"`` -> ``("chromium", {"device": "mobile", "cpu": "4"})``;
    :class:`OptionError` on a part that is not ``key=value``."""
    name, _, rest = spec.partition(":")
    options: dict[str, str] = {}
    for part in filter(None, rest.split(",")):
        key, eq, value = part.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise OptionError(f"{kind} option {part!r} is not key=value")
        options[key.strip()] = value.strip()
    return name, options


def parse_named(spec: str, source: str, field: str, kind: str) -> tuple[str, dict[str, str]]:
    """:func:`split_named`, its refusal a :class:`SpecError` naming ``source`` and ``field``."""
    try:
        return split_named(spec, kind)
    except OptionError as exc:
        raise SpecError(source, field, str(exc)) from None


def resolve_paths(spec: str, base: Path, source: str = "server", field: str = "server") -> str:
    """``spec`` with a relative ``conf=`` (its own, or a nested spec's:
    ``haproxy:backend=nginx:conf=x.conf``) made absolute against ``base`` (the experiment
    file's folder); any other spec as written."""
    parse_named(spec, source, field, "server")  # a malformed spec is refused here, in one line
    return _map_conf(spec, lambda v: v if Path(v).is_absolute() else str((base / v).resolve()))


def portable(spec: str) -> str:
    """``spec`` as a trial's key and the store carry it: each ``conf=/abs/dir/x.conf`` written
    ``conf=x.conf@sha256:0123456789ab`` (its file's name and the first 12 hex digits of its
    SHA-256), so one configuration has one key wherever its file lies: a results folder moved
    to another machine, or the experiment run from another checkout, resumes (issue #56). The
    path stays out: where a file lies is not what a trial ran with, its content is. A ``conf=``
    that names no readable file is left as written (validation says so)."""
    return _map_conf(spec, _by_content)


def _by_content(value: str) -> str:
    path = Path(value)
    if not path.is_absolute():
        return value
    try:
        return f"{path.name}@sha256:{content_digest(path)}"
    except OSError:
        return value


@functools.lru_cache(maxsize=256)
def content_digest(path: Path) -> str:
    """12 hex digits of ``path``'s SHA-256, read once per process: a trial's key is taken
    many times during a run, and must not change under it if the file is edited meanwhile
    (the server's recorded version has the digest of what it read). A folder's: of each
    regular file's path under it and digest, in path order (links not followed). OSError
    for neither."""
    if not path.is_dir():
        h = hashlib.sha256()
        with path.open("rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        return h.hexdigest()[:12]
    h = hashlib.sha256()
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            file = Path(root, name)
            if file.is_file() and not file.is_symlink():
                h.update(f"{file.relative_to(path)}\0{content_digest(file)}\n".encode())
    return h.hexdigest()[:12]


def _map_conf(spec: str, change: Callable[[str], str], sep: str = ",") -> str:
    """``spec`` with each ``conf=`` value passed through ``change``, the rest as written. A
    nested spec (an option's value ``name:k=v;k=v``) is walked too."""
    name, colon, rest = spec.partition(":")
    if not colon or f"{CONF_OPTION}=" not in rest:
        return spec
    parts = []
    for part in rest.split(sep):
        key, eq, value = part.partition("=")
        if eq and key.strip() == CONF_OPTION and value.strip():
            value = change(value.strip())
        elif eq and sep == "," and ":" in value:
            value = _map_conf(value, change, ";")
        parts.append(f"{key}{eq}{value}")
    return f"{name}:{sep.join(parts)}"


def base_dir(source: str) -> Path:
    """The folder relative ``conf=`` paths are resolved in: the experiment file's, else the
    working directory (``command line``)."""
    path = Path(source)
    return path.parent.resolve() if path.is_file() else Path.cwd()
