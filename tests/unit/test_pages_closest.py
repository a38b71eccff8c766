"""h2lab.pages.closest: Mahimahi's longest-common-prefix rule, and its prefix list for servers
that match by regex, agree on every query."""

from __future__ import annotations

import itertools
import random

from h2lab.pages.closest import closest, common_prefix_len, prefix_keys


def by_keys(keys: list[tuple[str, int]], query: str) -> int:
    return next(i for prefix, i in keys if query.startswith(prefix))


def test_the_longest_common_prefix_answers_ties_go_to_the_first() -> None:
    recorded = ["t=1520301377&x=a", "t=1520301399&x=b", "u=1"]
    assert closest(recorded, "t=1795656749&x=b") == 0  # "t=1" ties: the first recorded
    assert closest(recorded, "t=1520301390&x=b") == 1  # "t=15203013" beats "t=1520301"
    assert closest(recorded, "u=2") == 2
    assert closest(recorded, "") == 0
    assert common_prefix_len("abc", "abd") == 2


def test_the_prefix_list_is_short_and_ends_with_the_whole_group() -> None:
    keys = prefix_keys(["t=1520301377&x=a", "t=1520301399&x=b", "u=1"])
    assert keys[-1] == ("", 0)
    assert len(keys) <= 2 * 3
    assert [len(k) for k, _ in keys] == sorted((len(k) for k, _ in keys), reverse=True)


def test_the_prefix_list_agrees_with_the_rule_on_every_query() -> None:
    rng = random.Random(7)
    alphabet = "ab=&"
    for _ in range(300):
        recorded = [
            "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
            for _ in range(rng.randint(1, 5))
        ]
        keys = prefix_keys(recorded)
        for n in range(5):
            for letters in itertools.product(alphabet, repeat=n):
                q = "".join(letters)
                assert by_keys(keys, q) == closest(recorded, q), (recorded, q, keys)
