"""h2lab.cluster.checks: a lab node re-parses every level a driver sends with the experiment
file's parser, and needs a page id per trial, before it runs anything."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from h2lab.cluster.checks import check_job, check_trial, h2lab_identity, version_refusal
from h2lab.errors import SpecError
from h2lab.runner.executor import BlockJob, block_jobs
from h2lab.runner.matrix import TrialSpec, expand
from h2lab.spec.experiment import load_experiment
from h2lab.spec.network import Queue, parse_network

DEMO = Path(__file__).resolve().parents[2] / "experiments" / "demo.toml"
PAGE_ID = "0123456789abcdef"


@pytest.fixture(scope="module")
def trials() -> list[TrialSpec]:
    return expand(load_experiment(DEMO))


def _with(t: TrialSpec, **levels: Any) -> TrialSpec:
    return dataclasses.replace(t, factors=dataclasses.replace(t.factors, **levels))


def _refusal(t: TrialSpec) -> SpecError:
    with pytest.raises(SpecError) as exc:
        check_trial(t)
    assert exc.value.source == f"block from the driver (trial {t.key})"
    return exc.value


def test_every_trial_of_the_demo_passes(trials: list[TrialSpec]) -> None:
    assert len(trials) == 24  # 2 protocols x 2 networks x 2 clients x 3 repetitions
    for t in trials:
        check_trial(t)  # raises on a refusal


@pytest.mark.parametrize(
    ("levels", "field", "reason"),
    [
        (
            {"server": "nginx; rm -rf /"},
            "server",
            "unknown server 'nginx; rm -rf /' (known: apache, caddy, h2o, haproxy, haproxy@3.0, "
            "jetty, nginx, nginx@1.26, origin)",
        ),
        (
            {"client": "h2load:per_host=$(id)"},
            "client",
            "per_host must be an integer 1..1000, got '$(id)'",
        ),
        (
            {"congestion_control": "evil"},
            "congestion_control",
            "unknown value 'evil' (allowed: cubic, bbr, reno)",
        ),
        ({"tls": "1.1"}, "tls", "unknown value '1.1' (allowed: 1.2, 1.3)"),
        ({"initcwnd": 0}, "initcwnd", "must be 1..1000 packets, got 0"),
        ({"initcwnd": 1001}, "initcwnd", "must be 1..1000 packets, got 1001"),
    ],
    ids=["server", "client", "congestion_control", "tls", "initcwnd-0", "initcwnd-1001"],
)
def test_a_tampered_level_is_refused_naming_its_factor(
    trials: list[TrialSpec], levels: dict[str, Any], field: str, reason: str
) -> None:
    err = _refusal(_with(trials[0], **levels))
    assert (err.field, err.reason) == (field, reason)


def test_an_unknown_protocol_is_refused(trials: list[TrialSpec]) -> None:
    err = _refusal(dataclasses.replace(trials[0], protocol="gopher"))
    assert (err.field, err.reason) == ("protocol", "unknown protocol 'gopher'")


def test_a_network_that_does_not_parse_is_refused_naming_the_key(
    trials: list[TrialSpec],
) -> None:
    net = trials[0].network
    # the profile is checked against what its name (the experiment's text) parses to
    err = _refusal(_with(trials[0], network=dataclasses.replace(net, down_rate_bps=-5)))
    assert (err.field, err.reason) == ("network", f"{net.name!r} does not parse to this profile")
    err = _refusal(_with(trials[0], network=dataclasses.replace(net, name="rtt=40ms,aqm=evil")))
    assert err.field == "network.aqm" and "evil" in err.reason


@pytest.mark.parametrize(
    "change",
    [
        {"cellular_parts": ("bw",)},  # net check's own, never an experiment file's
        {"queue": Queue(packets=100, bytes=64_000)},  # exactly one of the three, or none
    ],
    ids=["cellular_parts", "two-queue-limits"],
)
def test_a_network_no_spec_can_write_is_refused(
    trials: list[TrialSpec], change: dict[str, Any]
) -> None:
    net = dataclasses.replace(trials[0].network, **change)
    err = _refusal(_with(trials[0], network=net))
    assert (err.field, err.reason) == ("network", f"{net.name!r} does not parse to this profile")


def test_a_network_with_both_a_trace_and_a_rate_is_refused(
    trials: list[TrialSpec], tmp_path: Path
) -> None:
    trace = tmp_path / "up.trace"
    trace.write_text("1\n2\n3\n")
    ok = parse_network(f"rtt=40ms,down=5Mbps,up_trace={trace}", "x.toml", field="network")
    check_trial(_with(trials[0], network=ok))
    both = dataclasses.replace(ok, up_rate_bps=1_000_000)  # a trace replaces the rate
    err = _refusal(_with(trials[0], network=both))
    assert (err.field, err.reason) == ("network", f"{ok.name!r} does not parse to this profile")


def test_a_network_naming_a_trace_the_node_lacks_is_refused(
    trials: list[TrialSpec], tmp_path: Path
) -> None:
    trace = tmp_path / "up.trace"
    trace.write_text("1\n2\n")
    net = parse_network(f"rtt=40ms,up_trace={trace}", "x.toml", field="network")
    trace.unlink()
    err = _refusal(_with(trials[0], network=net))
    assert err.field == "network.up_trace" and "cannot read" in err.reason


@pytest.mark.parametrize(
    "spec",
    [
        "cable",
        "3g-fast",
        "rtt=50ms,rate=10Mbps,loss=1%,loss_burst=2,queue=1.5bdp",
        "rtt=50ms,down=10500kbps,up=1Mbps,queue=100KB,aqm=codel",
        "cellular=good",
        # valid experiment-file levels the describe()/parse round trip does not keep:
        "cable,up_delay=5ms",
        "up_delay=10ms,down_delay=40ms,rate=10Mbps",
        "rtt=50ms,rate=10Mbps,aqm=codel,codel_target=10ms",
        "rtt=50ms,rate=10Mbps,aqm=codel,codel_interval=200ms",
        "rtt=50ms,rate=10Mbps,up_loss=1%,down_loss=2%,loss_burst=3",
        "rtt=33.333333ms,rate=10Mbps",
    ],
)
def test_every_network_an_experiment_file_may_hold_passes(
    trials: list[TrialSpec], spec: str
) -> None:
    """What the driver sends is what the experiment file's parser made: a node must not refuse
    a level the driver's own parser accepted."""
    check_trial(_with(trials[0], network=parse_network(spec, "x.toml", field="network")))


# ------------------------------------------------------------------ check_job


def _jobs(trials: list[TrialSpec], pages: dict[str, str] | None) -> list[BlockJob]:
    return block_jobs(
        trials,
        {},
        retries=0,
        timeout_s=60.0,
        results_dir=Path("/out"),
        origins=("o1", "o2"),
        pages=pages,
    )


def test_a_job_of_checked_trials_with_a_page_id_passes(trials: list[TrialSpec]) -> None:
    jobs = _jobs(trials, {trials[0].page: PAGE_ID})
    assert len(jobs) == 12 and all(job.pages == {trials[0].page: PAGE_ID} for job in jobs)
    for job in jobs:
        check_job(job)


@pytest.mark.parametrize(
    "page_id",
    ["", "0123456789abcde", "0123456789abcdef0", "0123456789ABCDEF", "../../../etc/pass"],
    ids=["empty", "15-digits", "17-digits", "upper-case", "path"],
)
def test_a_job_without_a_16_hex_digit_page_id_is_refused(
    trials: list[TrialSpec], page_id: str
) -> None:
    job = _jobs(trials, {trials[0].page: page_id})[0]
    with pytest.raises(SpecError) as exc:
        check_job(job)
    t = job.trials[0]
    assert str(exc.value) == f"block from the driver (trial {t.key}): page: no page id"


def test_a_job_with_no_pages_is_refused(trials: list[TrialSpec]) -> None:
    job = _jobs(trials, None)[0]
    assert job.pages == {}
    with pytest.raises(SpecError) as exc:
        check_job(job)
    assert (exc.value.field, exc.value.reason) == ("page", "no page id")


def test_a_job_checks_every_trial_not_only_the_first(trials: list[TrialSpec]) -> None:
    job = _jobs(trials, {trials[0].page: PAGE_ID})[0]
    assert len(job.trials) >= 2
    bad = _with(job.trials[-1], congestion_control="evil")
    job = dataclasses.replace(job, trials=(*job.trials[:-1], bad))
    with pytest.raises(SpecError) as exc:
        check_job(job)
    assert exc.value.source == f"block from the driver (trial {bad.key})"
    assert exc.value.field == "congestion_control"


# ------------------------------------------------------------------ the driver's h2lab


DRIVER = {"h2lab_version": "0.3.0", "h2lab_commit": "0123456789ab" + "c" * 28}


def test_a_node_of_the_drivers_version_and_commit_is_not_refused() -> None:
    assert version_refusal(DRIVER, {**DRIVER, "machine": "x"}) is None


@pytest.mark.parametrize(
    ("node", "named"),
    [
        (
            {**DRIVER, "h2lab_commit": "fedcba987654" + "0" * 28},
            "h2lab 0.3.0 (commit fedcba987654)",
        ),
        (
            {**DRIVER, "h2lab_commit": DRIVER["h2lab_commit"] + "-dirty"},
            "h2lab 0.3.0 (commit 0123456789ab-dirty)",
        ),
        ({**DRIVER, "h2lab_version": "0.2.9"}, "h2lab 0.2.9 (commit 0123456789ab)"),
        ({"machine": "older"}, "h2lab of a version that does not say (commit unknown)"),
    ],
    ids=["commit", "dirty", "version", "before-0.3.1"],
)
def test_a_node_of_another_h2lab_is_refused_naming_both(node: dict[str, str], named: str) -> None:
    why = version_refusal(DRIVER, node)
    assert why is not None and f"this node runs {named}" in why, why
    assert why.endswith(
        ", the driver h2lab 0.3.0 (commit 0123456789ab): run the same h2lab commit on every "
        "node and the driver"
    )


def test_an_unknown_commit_is_compared_by_version_only() -> None:
    wheel = {"h2lab_version": "0.3.0", "h2lab_commit": "unknown"}
    assert version_refusal(DRIVER, wheel) is None
    assert version_refusal(wheel, {**wheel, "h2lab_version": "0.3.1"}) is not None


def test_this_process_says_its_version_and_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    import h2lab
    from h2lab.version import commit

    assert h2lab_identity() == {"h2lab_version": h2lab.__version__, "h2lab_commit": commit()}
