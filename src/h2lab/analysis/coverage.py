"""Replay coverage of one trial (pure: a page and its resource rows in, counts out).

Every request the browser made over the network (``http``/``https`` URLs; ``data:`` and
``blob:`` are not requests) falls in one of four groups, as the replaying servers answered it
(docs/pages.md):

* **answered from the recording**, with the recorded status: *exact* (same method, host and
  target) or *by path* (same host and path, another query string);
* **not recorded**: the replay had nothing for it and answered 404;
* **failed in the browser**: the row carries the browser's error (blocked by ORB or CSP, a
  dropped connection, a host the lab does not serve, so the name did not resolve).

A request the replay holds but whose row shows another status and no error is counted as not
recorded (it was not answered from the recording); none is expected.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from h2lab.pages.manifest import Page


@dataclass(frozen=True)
class Coverage:
    requests: int
    """network requests of the trial"""
    exact: int
    by_path: int
    not_recorded: int
    failed: int
    """failed in the browser (an error in the row)"""
    in_recording: int
    """requests whose URL the replay holds (exact or by path), however they ended"""

    @property
    def answered(self) -> int:
        return self.exact + self.by_path


def is_network(url: str) -> bool:
    return url.startswith(("http://", "https://"))


def coverage(page: Page, rows: Iterable[Mapping[str, Any]]) -> Coverage:
    """Count the rows (``url``, ``status``, ``error``; ``method`` GET unless given) of one
    trial of ``page`` in the groups above."""
    counts = {"exact": 0, "path": 0, "not": 0, "failed": 0, "held": 0}
    requests = 0
    for row in rows:
        url = str(row["url"])
        if not is_network(url):
            continue
        requests += 1
        held, how = page.match_how(str(row.get("method") or "GET"), url)
        counts["held"] += held is not None
        if row.get("error"):
            counts["failed"] += 1
        elif held is not None and row.get("status") == held.status:
            counts[how] += 1
        else:
            counts["not"] += 1
    return Coverage(
        requests=requests,
        exact=counts["exact"],
        by_path=counts["path"],
        not_recorded=counts["not"],
        failed=counts["failed"],
        in_recording=counts["held"],
    )
