"""h2lab.analysis.estimate: a block's duration from what is known before it runs.

The estimate ranks blocks for the dispatcher; these tests check that it moves the right way
with each factor, that timeouts, recorded durations and the page's shape enter as documented,
and the rank correlation the benchmark prints. Figures worked out by hand are in comments.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import pytest

from h2lab.analysis.estimate import (
    CLIENT_COSTS,
    UNKNOWN_CLIENT,
    UNKNOWN_PAGE,
    BlockEstimator,
    PageShape,
    PathModel,
    client_model,
    load_s,
    loss_limited_bps,
    path_of,
    rank_correlation,
    ranks,
    recorded_costs,
    server_think_ms,
    trial_estimate_s,
)
from h2lab.pages import Resource
from h2lab.results import TrialRecord
from h2lab.runner.executor import BlockJob, block_jobs
from h2lab.runner.matrix import TrialSpec, expand
from h2lab.runner.trial import trial_record
from h2lab.spec.experiment import Experiment, Factors
from h2lab.spec.factors import TrialFactors, trial_factors
from h2lab.spec.network import parse_network

MBIT = 1_000_000
SMALL = PageShape(objects=2, size_bytes=20_000, origins=1)
HEAVY = PageShape(objects=230, size_bytes=7_000_000, origins=10)


def factors(**levels: object) -> TrialFactors:
    base: dict[str, object] = {"page": "synthetic:n=2", "network": parse_network("cable")}
    return trial_factors({**base, **levels})


def path(rtt_ms: float = 100.0, rate_bps: float | None = 10 * MBIT, loss: float = 0.0) -> PathModel:
    return PathModel(rtt_ms, rate_bps, loss)


# ------------------------------------------------------------------------------ the path


def test_a_fixed_profile_is_its_rtt_downlink_and_loss_either_way() -> None:
    p = path_of(parse_network("rtt=100ms,down=10Mbps,up=1Mbps,up_loss=1%,down_loss=2%,jitter=5ms"))
    assert p.rtt_ms == pytest.approx(110)  # 100 ms and 5 ms of jitter each way
    assert p.rate_bps == 10 * MBIT
    assert p.loss_ratio == pytest.approx(1 - 0.99 * 0.98)


def test_an_unshaped_profile_has_no_rate() -> None:
    assert path_of(parse_network("lan")) == PathModel(0.0, None, 0.0)


def test_cellular_profiles_are_their_mean_rate_and_rtt() -> None:
    good, poor = path_of(parse_network("cell-good")), path_of(parse_network("cell-poor"))
    # the packaged profiles: good averages 6.6 Mbit/s at 67 ms, poor 136 kbit/s at 115 ms
    assert good.rate_bps == pytest.approx(6.6 * MBIT, rel=0.01)
    assert poor.rate_bps == pytest.approx(136_000, rel=0.01)
    assert good.rtt_ms < poor.rtt_ms
    assert 0 < good.loss_ratio < 0.05
    assert path_of(parse_network("cell-noloss")).loss_ratio < 1e-4


def test_a_trace_is_its_mean_rate(tmp_path: Path) -> None:
    trace = tmp_path / "t.trace"
    trace.write_text("".join(f"{ms}\n" for ms in range(1, 11)))  # 10 × 1500 B per 10 ms
    p = path_of(parse_network(f"rtt=50ms,trace={trace}"))
    assert p.rate_bps == pytest.approx(12 * MBIT)  # 15 000 B × 8 / 10 ms


def test_loss_caps_a_connection_more_the_more_loss_and_the_longer_the_rtt() -> None:
    assert loss_limited_bps(100, 0.0) is None
    one, two = loss_limited_bps(100, 0.01), loss_limited_bps(100, 0.02)
    far = loss_limited_bps(200, 0.01)
    assert one is not None and two is not None and far is not None
    assert two < one and far < one
    # Padhye eq. 30 at 100 ms, 1%, b = 2, RTO 300 ms: 1 / (0.1 sqrt(0.04/3) + 0.3 × 3 sqrt(0.0075)
    # × 0.01 × 1.0032) = 1 / (0.011547 + 0.000782) = 81.1 packets/s of 1448 B = 0.94 Mbit/s
    assert one == pytest.approx(81.1 * 1448 * 8, rel=0.01)


# ------------------------------------------------------------------------------ the load


def test_loads_grow_with_rtt_bytes_and_loss_and_shrink_with_rate() -> None:
    base = load_s(SMALL, path(), "h2s")
    assert load_s(SMALL, path(rtt_ms=200), "h2s") > base
    assert load_s(HEAVY, path(), "h2s") > base
    assert load_s(SMALL, path(loss=0.02), "h2s") > base
    assert load_s(HEAVY, path(rate_bps=100 * MBIT), "h2s") < load_s(HEAVY, path(), "h2s")


def test_a_small_page_on_a_fast_link_is_its_round_trips() -> None:
    # h2c, 20 KB in 10 ms RTT at 1 Gbit/s: handshake 1 RTT, request + IW10 + one more window
    # (the rest of 20 KB) 2 RTTs, and one RTT for the entry document before its subresources
    seconds = load_s(SMALL, path(rtt_ms=10, rate_bps=1000 * MBIT), "h2c")
    assert seconds == pytest.approx(0.040, abs=0.002)


def test_many_objects_cost_http1_round_trips_that_http2_and_pipelining_do_not() -> None:
    many = PageShape(objects=120, size_bytes=120_000, origins=1)
    h1, h2 = load_s(many, path(), "h1s"), load_s(many, path(), "h2s")
    # 120 objects over 6 connections: 20 requests each, 19 behind another: ~1.9 s more
    assert h1 - h2 == pytest.approx(1.9, abs=0.3)
    assert load_s(many, path(), "h1p") < load_s(many, path(), "h1c")


def test_a_client_capped_per_host_queues_requests_even_over_http2() -> None:
    many = PageShape(objects=100, size_bytes=200_000, origins=1)
    capped = load_s(many, path(), "h2s", client=client_model("okhttp"))  # 5 per host
    assert capped - load_s(many, path(), "h2s") == pytest.approx(19 * 0.1, abs=0.05)


def test_parallel_page_loads_multiply_the_bytes() -> None:
    one = load_s(HEAVY, path(), "h2c", client=client_model("h2load"))
    forty = load_s(HEAVY, path(), "h2c", client=client_model("h2load:clients=40"))
    assert forty > 30 * one  # 280 MB at 10 Mbit/s: ~230 s against ~6 s


def test_server_think_time_is_the_longest_delay_in_the_spec() -> None:
    assert server_think_ms("nginx") == 0
    assert server_think_ms("origin:delay_image=200ms,scheduler=fcfs") == 200
    assert server_think_ms("haproxy:backend=origin:delay_css=80ms;delay_image=0.3s") == 300
    assert server_think_ms("origin:think=50ms") == 50


# ------------------------------------------------------------------------------ clients


def test_client_specs_take_their_options() -> None:
    assert client_model("h2load:clients=40").loads == 40
    assert client_model("okhttp").per_host == 5
    assert client_model("okhttp:per_host=8").per_host == 8
    assert client_model("chromium:device=mobile").cost == CLIENT_COSTS["chromium"]
    assert client_model("h2load:clients=lots").loads == 1  # not a count: left out


def test_an_unknown_client_costs_as_much_as_the_dearest_known() -> None:
    assert client_model("lynx").cost == UNKNOWN_CLIENT
    assert UNKNOWN_CLIENT.overhead_s == max(c.overhead_s for c in CLIENT_COSTS.values())


def test_a_browser_trial_costs_more_than_an_h2load_one() -> None:
    browser = trial_estimate_s(factors(client="chromium"), "h2s", SMALL)
    loader = trial_estimate_s(factors(client="h2load"), "h2s", SMALL)
    assert browser - loader == pytest.approx(
        CLIENT_COSTS["chromium"].overhead_s - CLIENT_COSTS["h2load"].overhead_s
    )


def test_a_slow_network_costs_more_than_a_fast_one() -> None:
    poor = trial_estimate_s(factors(network=parse_network("cell-poor")), "h2s", HEAVY)
    good = trial_estimate_s(factors(network=parse_network("cell-good")), "h2s", HEAVY)
    assert poor > 10 * good  # 136 kbit/s against 6.6 Mbit/s


# ------------------------------------------------------------------------------ blocks


@dataclass(frozen=True)
class FakePage:
    """What :meth:`PageShape.of` reads of a page (and a record, its digest)."""

    resources: tuple[Resource, ...]
    origins: tuple[str, ...]
    digest: str = "feedfacefeedface"


def test_a_page_shape_counts_responses_bytes_origins_and_think_time() -> None:
    page = FakePage(
        (
            Resource("a.test", "/", 1000, "text/html"),
            Resource("b.test", "/x", 5000, "image/png", delay_ms=200),
        ),
        ("a.test", "b.test"),
    )
    assert PageShape.of(page) == PageShape(2, 6000, 2, 200.0)  # type: ignore[arg-type]


def _trials(repetitions: int = 2, warmup: int = 0) -> list[TrialSpec]:
    exp = Experiment(
        name="est",
        factors=Factors.of(
            protocol=("h1s", "h2s"),
            page=("synthetic:n=2", "synthetic:n=64"),
            network=(parse_network("cable"), parse_network("3g")),
        ),
        seed=5,
        repetitions=repetitions,
        warmup=warmup,
    )
    return expand(exp)


def _jobs(trials: list[TrialSpec], timeout_s: float = 60.0, retries: int = 1) -> list[BlockJob]:
    return block_jobs(
        trials, {}, retries=retries, timeout_s=timeout_s, results_dir=Path("/out"), origins=()
    )


def test_a_block_is_the_sum_of_its_trials() -> None:
    est = BlockEstimator(shapes={"synthetic:n=2": SMALL, "synthetic:n=64": HEAVY})
    job = _jobs(_trials())[0]
    assert est.block_s(job.trials) == pytest.approx(sum(est.trial_s(t) for t in job.trials))
    assert len(job.trials) == 2


def test_the_heavier_cells_are_estimated_longer() -> None:
    est = BlockEstimator(shapes={"synthetic:n=2": SMALL, "synthetic:n=64": HEAVY})
    by_cell = {(t.page, t.network.name): est.trial_s(t) for t in _trials() if t.protocol == "h2s"}
    assert by_cell["synthetic:n=64", "3g"] > by_cell["synthetic:n=64", "cable"]
    assert by_cell["synthetic:n=64", "cable"] > by_cell["synthetic:n=2", "cable"]


def test_a_page_not_seen_is_the_median_web_page() -> None:
    t = _trials()[0]
    assert BlockEstimator().trial_s(t) == pytest.approx(
        BlockEstimator(shapes={t.page: UNKNOWN_PAGE}).trial_s(t)
    )


def test_a_trial_past_its_timeout_costs_every_attempt_of_it() -> None:
    heavy = next(t for t in _trials() if t.network.name == "3g" and t.page == "synthetic:n=64")
    est = BlockEstimator(shapes={heavy.page: HEAVY})
    assert est.trial_s(heavy) > 20  # 7 MB at 1.6 Mbit/s: over 35 s
    assert est.trial_s(heavy, timeout_s=20, retries=1) == 40
    assert est.trial_s(heavy, timeout_s=math.inf, retries=1) == est.trial_s(heavy)


def _record(
    t: TrialSpec, attempt: int, duration_s: float, ok: bool = True, warmup: bool = False
) -> TrialRecord:
    record = trial_record(
        t, FakePage((), ()), attempt=attempt, error=None if ok else "boom",  # type: ignore[arg-type]
        started_at="2026-12-01T00:00:00.000+00:00", duration_s=duration_s, versions={},
        cpu_busy_pct=None, metrics={},
    )  # fmt: skip
    return dataclasses.replace(record, warmup=warmup)


def test_recorded_costs_sum_attempts_per_trial_and_take_the_median_per_cell() -> None:
    trials = _trials(repetitions=3)
    h2 = [t for t in trials if t.protocol == "h2s" and t.page == "synthetic:n=2"]
    h2 = [t for t in h2 if t.network.name == "cable"]
    assert [t.repetition for t in sorted(h2, key=lambda t: t.repetition)] == [0, 1, 2]
    r0, r1, r2 = sorted(h2, key=lambda t: t.repetition)
    records = [
        _record(r0, 1, 10.0, ok=False), _record(r0, 2, 2.0),  # one trial: 12 s
        _record(r1, 1, 3.0),
        _record(r2, 1, 4.0),
        _record(r2, 1, 100.0, warmup=True),  # a warm-up trial: left out
    ]  # fmt: skip
    assert recorded_costs(records) == {(r0.cell, "h2s"): 4.0}  # median of 12, 3, 4


def test_a_recorded_cell_costs_what_it_took_and_scales_the_model_for_the_others() -> None:
    trials = _trials()
    shapes = {"synthetic:n=2": SMALL, "synthetic:n=64": HEAVY}
    model = BlockEstimator(shapes=dict(shapes))
    known = trials[0]
    est = BlockEstimator(recorded={(known.cell, known.protocol): model.trial_s(known) * 3},
                         shapes=dict(shapes))  # fmt: skip
    assert est.trial_s(known) == pytest.approx(model.trial_s(known) * 3)
    assert est.scale(trials) == pytest.approx(3)  # the one recorded cell took 3 × the model
    jobs = _jobs(trials, timeout_s=math.inf)
    costs = est.jobs_s(jobs, {})
    other = next(j for j in jobs if known not in j.trials)
    assert costs[jobs.index(other)] == pytest.approx(3 * model.block_s(other.trials))


def test_jobs_learn_page_shapes_from_the_runs_pages() -> None:
    page = FakePage((Resource("a.test", "/", 7_000_000, "text/html"),), ("a.test",))
    est = BlockEstimator()
    jobs = _jobs(_trials())
    est.jobs_s(jobs, {"synthetic:n=64": page})  # type: ignore[dict-item]
    assert est.shapes["synthetic:n=64"] == PageShape(1, 7_000_000, 1)


# ------------------------------------------------------------------------------ ranks


def test_ranks_share_ties() -> None:
    assert ranks([30.0, 10.0, 20.0, 10.0]) == [4.0, 1.5, 3.0, 1.5]


def test_rank_correlation_of_orders() -> None:
    assert rank_correlation([1, 2, 3, 4], [10, 20, 30, 1000]) == pytest.approx(1.0)
    assert rank_correlation([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ranks (1, 2, 3) against (1, 3, 2): 1 - 6 × 2 / (3 × 8) = 0.5
    assert rank_correlation([1, 2, 3], [5, 9, 7]) == pytest.approx(0.5)


def test_rank_correlation_without_spread_is_not_a_number() -> None:
    assert math.isnan(rank_correlation([1, 1, 1], [1, 2, 3]))
    assert math.isnan(rank_correlation([1], [1]))
    with pytest.raises(ValueError, match="as many"):
        rank_correlation([1, 2], [1])
