"""Replay by closest query: Mahimahi's rule for a request whose exact target was not recorded.

When no recorded response has the request's method, host and target, the replay looks at the
responses recorded for the same method, host and path, and answers with the one whose query
string shares the **longest common prefix** with the request's (Mahimahi's replayserver scores
recorded requests this way; Web Page Replay also falls back to the same host and path with
another query). Ties go to the first recorded. A cache-buster or a beacon carrying the time of
the load (``?t=1795656749``) is so answered by the recording it resembles most. With no
response for that method, the first recorded with the same host and path, any method, answers
(h2lab's older rule); else 404.

The Go origin and H2O's mruby handler compute the prefix lengths per request. nginx and Apache
cannot, so :func:`prefix_keys` turns the rule into a list of query prefixes, longest first: the
first prefix the request's query starts with names the answer (one regex per prefix). The list
holds one key per branch of the recorded queries' prefix tree (at most two per recorded query).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence


def common_prefix_len(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def closest(queries: Sequence[str], query: str) -> int:
    """The index in ``queries`` (in recording order, not empty) whose query shares the longest
    prefix with ``query``; the first of the longest."""
    best, best_len = 0, -1
    for i, q in enumerate(queries):
        n = common_prefix_len(q, query)
        if n > best_len:
            best, best_len = i, n
    return best


def prefix_keys(queries: Sequence[str]) -> list[tuple[str, int]]:
    """``(prefix, index)`` pairs, longest prefix first, ending with ``("", 0)``, such that for
    any query the index of the first pair whose prefix it starts with is
    ``closest(queries, query)``.

    Every set of recorded queries that share more with some request than with the rest is the
    set starting with ``q[:n + 1]``, where ``n`` is the common prefix of ``q`` and a neighbour in
    sorted order: those prefixes are the keys, each mapped to the first recorded query that
    starts with it; a key that maps where the next shorter key it starts with maps is left
    out."""
    ordered = sorted(set(queries))
    keys: set[str] = {""}
    for a, b in itertools.pairwise(ordered):
        n = common_prefix_len(a, b)
        keys.update(q[: n + 1] for q in (a, b) if len(q) > n)
    first = {k: next(i for i, q in enumerate(queries) if q.startswith(k)) for k in keys}

    def parent(k: str) -> str:
        return max((p for p in keys if p != k and k.startswith(p)), key=len)

    # a key that names what the next shorter key it starts with names adds nothing
    kept = {k: i for k, i in first.items() if not k or first[parent(k)] != i}
    return sorted(kept.items(), key=lambda kv: (-len(kv[0]), kv[0]))


def query_groups(
    resources: Sequence[tuple[str, str, str, str]],
) -> dict[tuple[str, str, str], list[tuple[str, int]]]:
    """The groups a server needs for the rule: (method, host, path) -> its ``(query, index)``
    pairs in recording order, given each resource's ``(method, host, path, query)``. Only
    groups whose answer can differ from "the first with the same host and path" are kept:
    several queries, or one whose resource is not that first."""
    groups: dict[tuple[str, str, str], list[tuple[str, int]]] = {}
    first: dict[tuple[str, str], int] = {}
    for i, (method, host, path, query) in enumerate(resources):
        groups.setdefault((method, host, path), []).append((query, i))
        first.setdefault((host, path), i)
    return {k: v for k, v in groups.items() if len(v) > 1 or v[0][1] != first[(k[1], k[2])]}


def regex_literal(text: str) -> str:
    """``text`` as a PCRE pattern matching it literally (nginx and Apache): letters and digits
    as they are, every other byte of its UTF-8 as ``\\xHH`` (no quoting character survives)."""
    return "".join(
        chr(b) if chr(b).isascii() and chr(b).isalnum() else f"\\x{b:02X}" for b in text.encode()
    )
