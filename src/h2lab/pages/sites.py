"""Which origins of a page are its first party: the hosts under the registrable domain of its
entry document (``www.example.co.uk`` and ``static.example.co.uk`` are one site,
``cdn.example-static.net`` another), by the Public Suffix List as browsers read it.

The list is Debian's ``publicsuffix`` package (pinned in ``scripts/setup.sh``), read once per
process. Its algorithm (https://publicsuffix.org/list/): the longest matching rule names the
public suffix, a wildcard rule ``*.ck`` matches one label, an exception ``!www.ck`` makes the
suffix one label shorter, and a name no rule matches has its last label as the suffix (so the
lab's ``o1.h2lab.test`` is under ``h2lab.test``). The ICANN and the private section both count,
as in browsers' notion of a site.

``h3_origins`` (:mod:`h2lab.spec.factors`) names the origins of an h3 trial that speak h3:
``all``, ``first-party``, or a list of hosts joined by ``+`` (:func:`h3_hosts_of`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from h2lab.errors import H2LabError
from h2lab.spec.factors import ALL_ORIGINS

PSL_FILE = Path("/usr/share/publicsuffix/public_suffix_list.dat")  # programs.PUBLIC_SUFFIX_LIST
"""Debian's copy of the Public Suffix List (package ``publicsuffix``)."""
MAX_PSL_BYTES = 4 * 1024 * 1024
"""More than ten times the list's size: a larger file is not the list."""

ALL = ALL_ORIGINS
FIRST_PARTY = "first-party"


@dataclass(frozen=True)
class Rules:
    """The list's rules: ``plain`` (``co.uk``, and wildcards as ``*.ck``) and ``exceptions``
    (``www.ck`` for ``!www.ck``), lower case, each also in its IDNA (punycode) form."""

    plain: frozenset[str]
    exceptions: frozenset[str]


def parse_rules(text: str) -> Rules:
    """Pure: the rules of a list in the PSL's format (one rule per line, up to its first
    white space; ``//`` comments and blank lines skipped)."""
    plain: set[str] = set()
    exceptions: set[str] = set()
    for line in text.splitlines():
        rule = line.strip().split(maxsplit=1)[0] if line.strip() else ""
        if not rule or rule.startswith("//"):
            continue
        into = exceptions if rule.startswith("!") else plain
        for form in _forms(rule.removeprefix("!").lower()):
            into.add(form)
    return Rules(frozenset(plain), frozenset(exceptions))


def _forms(rule: str) -> set[str]:
    """A rule as written and, when it has non-ASCII labels, as hosts are written (IDNA)."""
    forms = {rule}
    # a label IDNA 2003 refuses cannot be written in a URL either: its rule as written only
    with contextlib.suppress(UnicodeError):
        forms.add(
            ".".join(lab if lab == "*" else lab.encode("idna").decode() for lab in rule.split("."))
        )
    return forms


@functools.cache
def rules() -> Rules:
    """Debian's list, read once; :class:`H2LabError` when it is missing."""
    try:
        with PSL_FILE.open("rb") as f:
            text = f.read(MAX_PSL_BYTES).decode("utf-8", errors="replace")
    except OSError as exc:
        raise H2LabError(
            f"{PSL_FILE}: the Public Suffix List is missing ({exc.strerror}); "
            "`make setup` installs it (Debian package publicsuffix)"
        ) from exc
    return parse_rules(text)


def suffix_labels(labels: list[str], psl: Rules) -> int:
    """How many of ``labels``' last labels are its public suffix (at least 1)."""
    longest = 1
    for k in range(1, len(labels) + 1):
        name = ".".join(labels[-k:])
        if name in psl.exceptions:
            return k - 1  # an exception overrides the wildcard it is carved out of
        parent = ".".join(labels[-k + 1 :]) if k > 1 else ""
        if name in psl.plain or (k > 1 and f"*.{parent}" in psl.plain):
            longest = k
    return longest


def registrable_domain(host: str, psl: Rules) -> str:
    """The host's site: its public suffix and one label more (the host itself when it is a
    public suffix, or has no dot)."""
    labels = host.lower().rstrip(".").split(".")
    n = suffix_labels(labels, psl)
    return ".".join(labels[-(n + 1) :]) if n < len(labels) else ".".join(labels)


def first_party(entry_host: str, origins: Iterable[str], psl: Rules) -> frozenset[str]:
    """The ``origins`` of the entry document's site."""
    site = registrable_domain(entry_host, psl)
    return frozenset(o for o in origins if registrable_domain(o, psl) == site)


def h3_hosts_of(level: str, entry_host: str, origins: Iterable[str]) -> frozenset[str]:
    """The origins that speak h3 at ``h3_origins = level``: every one (``all``), the entry
    document's site (``first-party``), or those of a ``+`` list that the page has."""
    origins = frozenset(origins)
    if level == ALL:
        return origins
    if level == FIRST_PARTY:
        return first_party(entry_host, origins, rules())
    return origins & frozenset(level.split("+"))
