"""A lab node checks what a driver sends before it runs anything: every level of every trial
goes through the parser an experiment file's level goes through (so nothing a driver sends
becomes a command line the experiment parser would not have written), and each trial's page
is named by its id. The driver, for its part, runs blocks only on nodes of its own h2lab
(:func:`version_refusal`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from h2lab.errors import SpecError
from h2lab.runner.executor import BlockJob
from h2lab.runner.levels import REGISTRY_CHECKS
from h2lab.runner.matrix import TrialSpec
from h2lab.spec.factors import FACTORS
from h2lab.spec.network import parse_network
from h2lab.spec.protocols import PROTOCOLS

SOURCE = "block from the driver"


def check_trial(t: TrialSpec) -> None:
    """``t``'s levels parse as an experiment file's would, and go with its protocol; else a
    :class:`SpecError` naming the trial and the factor."""
    where = f"{SOURCE} (trial {t.key})"
    if t.protocol not in PROTOCOLS:
        raise SpecError(where, "protocol", f"unknown protocol {t.protocol!r}")
    for f in FACTORS:
        level = getattr(t.factors, f.name)
        if f.name == "page":
            continue  # never resolved here: the page comes by its id (check_job)
        if f.name == "network":  # its name is the text the experiment file gave
            if parse_network(level.name, where, field=f.name) != level:
                raise SpecError(where, f.name, f"{level.name!r} does not parse to this profile")
            continue
        if f.parse(level, where, f.name) != level:
            raise SpecError(where, f.name, f"{level!r} does not parse back to itself")
        for check in (f.check, REGISTRY_CHECKS.get(f.name)):
            if check is not None:
                check(level, (t.protocol,), where, f.name)


def check_job(job: BlockJob) -> None:
    """Every trial of ``job`` passes :func:`check_trial` and has a page id."""
    for t in job.trials:
        check_trial(t)
        page_id = job.pages.get(t.page, "")
        if len(page_id) != 16 or any(c not in "0123456789abcdef" for c in page_id):
            raise SpecError(f"{SOURCE} (trial {t.key})", "page", "no page id")


def h2lab_identity() -> dict[str, str]:
    """This process's h2lab: ``{"h2lab_version": ..., "h2lab_commit": ...}``
    (:mod:`h2lab.version`)."""
    import h2lab
    from h2lab.version import commit

    return {"h2lab_version": h2lab.__version__, "h2lab_commit": commit()}


def _named(identity: Mapping[str, Any]) -> str:
    from h2lab.version import UNKNOWN, short_commit

    version = identity.get("h2lab_version") or "of a version that does not say"
    full = str(identity.get("h2lab_commit") or UNKNOWN)
    return f"h2lab {version} (commit {short_commit(full)})"


def version_refusal(driver: Mapping[str, Any], node: Mapping[str, Any]) -> str | None:
    """Why a node whose probe answered ``node`` may not run the blocks of ``driver``'s run
    (both as :func:`h2lab_identity` has them), or None: the versions differ, or the commits do
    (a commit ``unknown`` on either side, an installed wheel, is compared by version only).
    Blocks are decoded and run by the node's own code: another commit may read a field
    otherwise, or run a trial otherwise, and its trials would be stored as this run's."""
    from h2lab.version import UNKNOWN

    same = driver.get("h2lab_version") == node.get("h2lab_version")
    commits = (driver.get("h2lab_commit") or UNKNOWN, node.get("h2lab_commit") or UNKNOWN)
    if same and (UNKNOWN in commits or commits[0] == commits[1]):
        return None
    return (
        f"this node runs {_named(node)}, the driver {_named(driver)}: run the same h2lab "
        "commit on every node and the driver"
    )
