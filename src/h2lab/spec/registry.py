"""One registry of adapters by name, for servers and for clients alike.

:mod:`h2lab.servers` and :mod:`h2lab.clients` each hold one :class:`Registry`; an adapter's
module registers its name, its factory and its options dataclass (:mod:`h2lab.spec.options`)
when imported. The registry alone turns a spec (``name:key=value,...``) into an adapter: it
finds the name, parses and checks the options once against their declaration, and refuses
anything wrong in one line naming the file, the field, the spec as written and the key
(:class:`~h2lab.errors.SpecError`), for every adapter alike. Everything that lists the adapters
(docs/reference.md, ``h2lab load --help``, tests) asks the registry, so a new adapter is its
module and one line in its package's module list.

Pure: the adapters' modules are imported by name when first needed, so this layer depends on
none of them (they depend on it).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload

from h2lab.errors import SpecError
from h2lab.spec.options import NoOptions, Option, OptionError, Parser, declared, parse, split_named

T = TypeVar("T")
OptionsT = TypeVar("OptionsT")


@dataclass(frozen=True)
class Entry(Generic[T]):
    """One registered adapter: how to make it from its parsed options."""

    make: Callable[[Any], T]
    options: type[Any] = NoOptions
    """the options dataclass (:mod:`h2lab.spec.options`)"""


@dataclass(frozen=True)
class Nested(Generic[T]):
    """An option whose value is itself a spec of the registry (HAProxy's ``backend``)."""

    spec: str
    """as given, its options joined by ``,``: ``nginx:conf=/abs/x.conf``"""
    adapter: T

    @property
    def name(self) -> str:
        return self.spec.partition(":")[0]


class Registry(Generic[T]):
    """The adapters of one kind (``server``, ``client``) by name."""

    def __init__(
        self, kind: str, modules: Sequence[str], refused: Mapping[str, str] | None = None
    ) -> None:
        self.kind = kind
        self.modules = tuple(modules)
        """the modules that register an adapter when imported (loaded on first use)"""
        self.refused = dict(refused or {})
        """keys no adapter of this kind takes, each with the reason to say (``pcap``)"""
        self.entries: dict[str, Entry[T]] = {}

    @overload
    def register(self, name: str, make: Callable[[NoOptions], T]) -> None: ...

    @overload
    def register(
        self, name: str, make: Callable[[OptionsT], T], options: type[OptionsT]
    ) -> None: ...

    def register(self, name: str, make: Callable[[Any], T], options: type[Any] = NoOptions) -> None:
        """``make(options)``: the adapter from its parsed ``options`` (an instance of the
        dataclass ``options`` whose fields are :func:`~h2lab.spec.options.option`; none: it
        takes no options). A field not declared as an option is a TypeError here."""
        declared(options)
        self.entries[name] = Entry(make, options)

    def _load(self) -> None:
        for module in self.modules:
            importlib.import_module(module)

    def names(self) -> list[str]:
        self._load()
        return sorted(self.entries)

    def options_of(self, name: str) -> tuple[Option, ...]:
        """The options ``name`` declares, in their dataclass's order."""
        self._load()
        return declared(self.entries[name].options).options

    def parse(self, spec: str) -> T:
        """The adapter ``spec`` names; :class:`OptionError` with one line saying what is wrong
        (an option's refusal after the spec as written)."""
        self._load()
        name, raw = split_named(spec, self.kind)
        entry = self.entries.get(name)
        if entry is None:
            raise OptionError(f"unknown {self.kind} {name!r} (known: {', '.join(self.names())})")
        for key in raw:
            if key in self.refused:
                raise OptionError(f"{spec}: {self.refused[key]}")
        try:
            options = parse(entry.options, raw, name)
        except OptionError as exc:
            raise OptionError(f"{spec}: {exc}") from None
        return entry.make(options)

    def get(self, spec: str, source: str = "", field: str = "") -> T:
        """The adapter ``spec`` names (a name, or ``name:key=value,...``); anything wrong is a
        :class:`SpecError` naming ``source`` (the file) and ``field`` (default: the kind)."""
        try:
            return self.parse(spec)
        except OptionError as exc:
            raise SpecError(source or self.kind, field or self.kind, str(exc)) from None

    def nested(self, refuse: Callable[[str], str] = lambda name: "") -> Parser[Nested[T]]:
        """An option's parser whose value is a spec of this registry, its own options joined
        by ``;`` since ``,`` separates the outer spec's (``haproxy:backend=nginx:conf=x;...``).
        ``refuse(name)``: why the adapter ``name`` cannot be the value ("": it can), said
        before its options are read."""

        def parse_nested(text: str) -> Nested[T]:
            spec = text.replace(";", ",")
            why = refuse(spec.partition(":")[0])
            if why:
                raise ValueError(why)
            return Nested(spec, self.parse(spec))

        return Parser(f"{self.kind.upper()}[:k=v;k=v]", parse_nested)

    def least_spec(self, name: str) -> str:
        """The shortest spec of ``name`` it accepts: its name, with the example of its first
        required option when it has one (``haproxy:backend=nginx,buffer=none``)."""
        self._load()
        d = declared(self.entries[name].options)
        needed = [o for o, r in zip(d.options, d.required, strict=True) if r]
        return f"{name}:{needed[0].example}" if needed else name

    def usage(self, note: Callable[[T], str] = lambda adapter: "") -> str:
        """Every adapter, comma-separated, as its :meth:`least_spec` followed by ``note``
        (e.g. `` (h3)``): the command line's help, derived from what is registered."""
        return ", ".join(
            f"{spec}{note(self.parse(spec))}" for spec in map(self.least_spec, self.names())
        )
