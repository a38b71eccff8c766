"""Experiments checked against the registries: the levels only the page store or a server or
client adapter can judge (a page spec's syntax and its page, an adapter's name, its options,
the protocols it takes, a server's configuration fragment).

:mod:`h2lab.spec` parses and checks what it can alone and takes these checks as an argument
(:data:`h2lab.spec.factors.LevelChecks`), so the definitions import no adapter; this layer,
which knows the registries, supplies them. The command line reads experiments through here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from h2lab import clients, servers
from h2lab.errors import SpecError
from h2lab.pages.manifest import check_page_spec
from h2lab.pages.sites import ALL
from h2lab.spec import experiment
from h2lab.spec.experiment import Experiment, Factors
from h2lab.spec.factors import JOURNEY, LevelChecks
from h2lab.spec.protocols import H3


def check_server(level: str, protocols: tuple[str, ...], source: str, key: str) -> None:
    """A known server (its options taken) that serves every protocol of the table, and whose
    configuration fragment passes the server's own test."""
    served = servers.get(level, source, key)
    unsupported = [p for p in protocols if p not in served.protocols]
    if unsupported:
        raise SpecError(source, key, f"{level} cannot serve protocol {unsupported[0]}")
    served.check()  # the user's configuration fragment, with the server's own test


def check_client(level: str, protocols: tuple[str, ...], source: str, key: str) -> None:
    """A known client (its options taken) that runs every protocol of the table; the refusal
    carries the client's :attr:`~h2lab.clients.ClientAdapter.protocol_note`."""
    adapter = clients.get(level, source, key)
    unsupported = [p for p in protocols if p not in adapter.protocols]
    if unsupported:
        note = adapter.protocol_note
        why = f"{level} cannot run protocol {unsupported[0]}" + (f" ({note})" if note else "")
        raise SpecError(source, key, why)


def check_page(level: str, protocols: tuple[str, ...], source: str, key: str) -> None:
    """A page spec that parses (a synthetic page's keys), names a file that exists (an
    import), or a page of the store, without generating or importing anything."""
    check_page_spec(level, source, key)


REGISTRY_CHECKS: LevelChecks = {"page": check_page, "server": check_server, "client": check_client}
"""The checks of :mod:`h2lab.spec.experiment` that need the registries, by factor name."""


def _h3(adapter: servers.ServerAdapter | clients.ClientAdapter) -> str:
    return " (h3)" if H3 in adapter.protocols else ""


LISTED: Mapping[str, Callable[[], str]] = {
    "server": lambda: servers.REGISTRY.usage(_h3),
    "client": lambda: clients.REGISTRY.usage(_h3),
}
"""Every level of the factors a registry holds, by factor name, for the command line's help:
each adapter as its shortest spec, `` (h3)`` after those that take HTTP/3."""


Refusal = Callable[[str, str, clients.ClientAdapter], str | None]
"""``refused(level, spec, adapter)``: why client ``spec`` cannot run a factor's ``level``, or
None when it can."""


def _each_client(factors: Factors, factor: str, refused: Refusal, source: str, prefix: str) -> None:
    """Every level of ``factor`` against every client of the table: the first refusal raises,
    naming the level's key."""
    for i, level in enumerate(factors[factor]):
        for spec in factors["client"]:
            why = refused(level, spec, clients.get(spec))
            if why is not None:
                raise SpecError(source, f"{prefix}.{factor}[{i}]", why)


def _capable(has: Callable[[clients.ClientAdapter], bool]) -> str:
    """The registered clients (their names) that ``has``."""
    least = clients.REGISTRY.least_spec
    return ", ".join(n for n in clients.REGISTRY.names() if has(clients.get(least(n))))


def check_views(factors: Factors, source: str, prefix: str) -> None:
    """Every client of a table with the repeat view can visit a page again (a browser
    profile): the refusal names the view's key and the client."""

    def refused(view: str, spec: str, adapter: clients.ClientAdapter) -> str | None:
        if view in adapter.views:
            return None
        return (
            f"{view} needs a client that visits the page again in its browser profile; {spec} "
            f"does not (repeat view: {_capable(lambda c: 'repeat' in c.views)})"
        )

    _each_client(factors, "view", refused, source, prefix)


def check_discoveries(factors: Factors, source: str, prefix: str) -> None:
    """Every client and server of a table with a discovery other than ``forced`` runs it:
    the refusal names the discovery's key and the adapter."""
    runs: dict[str, Callable[[str], frozenset[str]]] = {
        "client": lambda spec: clients.get(spec).discoveries,
        "server": lambda spec: servers.get(spec).discoveries,
    }
    registries = {"client": clients.REGISTRY.names, "server": servers.REGISTRY.names}
    least = {"client": clients.REGISTRY.least_spec, "server": servers.REGISTRY.least_spec}
    for i, discovery in enumerate(factors["discovery"]):
        for kind, of in runs.items():
            spec = next((s for s in factors[kind] if discovery not in of(s)), None)
            if spec is not None:
                names = [n for n in registries[kind]() if discovery in of(least[kind](n))]
                raise SpecError(
                    source, f"{prefix}.discovery[{i}]",
                    f"{discovery} needs a {kind} that runs it; {spec} does not "
                    f"({discovery}: {', '.join(names)})",
                )  # fmt: skip


def check_repeat_discoveries(factors: Factors, source: str, prefix: str) -> None:
    """A table with the repeat view and a discovery other than ``forced`` has only clients
    that run that discovery in a repeat view."""

    def refused(discovery: str, spec: str, adapter: clients.ClientAdapter) -> str | None:
        runs = adapter.repeat_discoveries
        if discovery in runs:
            return None
        return (
            f"{discovery} in a repeat view: {spec} runs only {', '.join(sorted(runs))} there "
            '(docs/servers.md, "How browsers find h3")'
        )

    if "repeat" in factors["view"]:
        _each_client(factors, "discovery", refused, source, prefix)


def check_h3_origins(factors: Factors, source: str, prefix: str) -> None:
    """A table whose ``h3_origins`` is not ``all`` has only clients that speak h3 to some
    origins of a page and TCP to the others."""

    def refused(level: str, spec: str, adapter: clients.ClientAdapter) -> str | None:
        if level == ALL or adapter.mixed_origins:
            return None
        return (
            f"{level[:80]} needs a client that speaks h3 to some origins only; {spec} does not "
            f"(h3_origins: {_capable(lambda c: c.mixed_origins)})"
        )

    _each_client(factors, "h3_origins", refused, source, prefix)


def check_journeys(factors: Factors, source: str, prefix: str) -> None:
    """A table with a journey (``journey:FILE``) has only clients that take its steps (the
    repeat view, a whole journey again, is :func:`check_views`'s: Chromium's)."""
    for i, page in enumerate(factors["page"]):
        if not str(page).startswith(f"{JOURNEY}:"):
            continue
        key = f"{prefix}.page[{i}]"
        spec = next((c for c in factors["client"] if not clients.get(c).journeys), None)
        if spec is not None:
            raise SpecError(
                source, key, f"a journey needs a client that takes its steps; {spec} does not "
                f"(journeys: {_capable(lambda c: c.journeys)})",
            )  # fmt: skip


def _check_table(factors: Factors, source: str, prefix: str) -> None:
    check_journeys(factors, source, prefix)
    check_views(factors, source, prefix)
    check_discoveries(factors, source, prefix)
    check_repeat_discoveries(factors, source, prefix)
    check_h3_origins(factors, source, prefix)


def check_capture(exp: Experiment, source: str, key: str = "capture") -> None:
    """With ``qlog`` captured, every h3 trial has a side that writes one: a table with h3 and
    a server that writes none has only clients that do (and the other way round)."""
    if "qlog" not in exp.capture:
        return
    for factors in exp.matrices:
        if H3 not in factors.protocol:
            continue
        server = next((s for s in factors["server"] if not servers.get(s).qlog), None)
        client = next((c for c in factors["client"] if not clients.get(c).qlog), None)
        if server is not None and client is not None:
            writers = ", ".join(n for n in servers.REGISTRY.names() if _writes_qlog(n))
            by = _capable(lambda c: c.qlog)
            raise SpecError(
                source, key,
                f"qlog: neither server {server} nor client {client} writes one for an h3 trial "
                f"(servers that do: {writers}; clients: {by})",
            )  # fmt: skip


def _writes_qlog(name: str) -> bool:
    return servers.get(servers.REGISTRY.least_spec(name)).qlog


def _check_tables(exp: Experiment, source: str) -> Experiment:
    tables = exp.matrices
    for i, factors in enumerate(tables):
        _check_table(factors, source, "factors" if len(tables) == 1 else f"factors[{i}]")
    check_capture(exp, source)
    return exp


def validate_factors(source: str, raw: dict[str, Any], prefix: str = "factors") -> Factors:
    """:func:`h2lab.spec.experiment.validate_factors` with the registries' checks."""
    factors = experiment.validate_factors(source, raw, prefix, checks=REGISTRY_CHECKS)
    _check_table(factors, source, prefix)
    return factors


def parse_experiment(raw: dict[str, Any], source: str, *, quick: bool = False) -> Experiment:
    """:func:`h2lab.spec.experiment.parse_experiment` with the registries' checks."""
    exp = experiment.parse_experiment(raw, source, quick=quick, checks=REGISTRY_CHECKS)
    return _check_tables(exp, source)


def load_experiment(path: Path, *, quick: bool = False) -> Experiment:
    """:func:`h2lab.spec.experiment.load_experiment` with the registries' checks."""
    exp = experiment.load_experiment(path, quick=quick, checks=REGISTRY_CHECKS)
    return _check_tables(exp, str(path))
