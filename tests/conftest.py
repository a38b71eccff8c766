"""The suite's order in lanes: the slowest known files first, so that lanes end together.

tests/durations.json holds each test's duration in seconds as measured in a whole-suite run
(``make durations`` writes it again). Tests it does not know go after those it does, in
collection order; the file only orders, it never selects, so a stale one costs time, not
tests.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

DURATIONS = Path(__file__).with_name("durations.json")
FINEST_LAST = ("test_visual_metrics.py", "test_link.py", "test_rootless.py", "test_net.py")
"""Outside lanes (the alone run), these files' tests go last, in this order: their bounds are
the finest (a blocking time of 0 ms, an RTT within 1-2 ms, per 70 ms step), and by then the
work that runs beside the alone run at the idle scheduling class (tests/suite.py) has most
likely ended: in one run the cellular profile's RTT row missed its bound while it ran."""


def known_durations(path: Path = DURATIONS) -> dict[str, float]:
    """Test id -> seconds, from ``path``; empty when it is missing or not such a map."""
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {k: float(v) for k, v in raw.items() if isinstance(v, int | float)}


TIMING_PROPERTY = ("timing", "1")
"""Written into a timing test's JUnit XML case: tests/suite.py runs again only such tests."""


def mark_timing(items: list[pytest.Item]) -> None:
    """Every ``alone`` test asserts on time, so it is a ``timing`` test too; each timing test
    says so in its JUnit XML case (a property), where tests/suite.py reads it."""
    for item in items:
        if item.get_closest_marker("alone") and not item.get_closest_marker("timing"):
            item.add_marker(pytest.mark.timing)
        if item.get_closest_marker("timing"):
            item.user_properties.append(TIMING_PROPERTY)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_timing(items)
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        # one test at a time (the alone group, a file): only the finest bounds go last
        rank = {name: i + 1 for i, name in enumerate(FINEST_LAST)}
        items.sort(key=lambda item: rank.get(item.path.name, 0))
        return
    durations = known_durations()
    if durations:
        # A lane takes a whole file (--dist loadfile): the files with the most known seconds
        # first (longest processing time first), each file's tests in their own order.
        # sorted() is stable: files of equal (or no) known duration keep collection order.
        per_file: dict[str, float] = {}
        for item in items:
            path = item.nodeid.split("::", 1)[0]
            per_file[path] = per_file.get(path, 0.0) + durations.get(item.nodeid, 0.0)
        items.sort(key=lambda item: -per_file[item.nodeid.split("::", 1)[0]])
