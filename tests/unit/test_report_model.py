"""h2lab.report.model: which metric for which client, verdict table rows, factor levels,
heatmap axes, header bytes, the chosen cell and its median trials, frame logs."""

from __future__ import annotations

import numpy as np

from h2lab.analysis.factors import Cell
from h2lab.analysis.verdict import analyze
from h2lab.report import model, timeline
from h2lab.report.svg import WaterfallRow
from h2lab.results import STATUSES, TrialRecord
from h2lab.spec.protocols import PROTOCOLS
from h2lab.spec.vocab import one_of

PAGE = "synthetic:n=8,size=10KB,origins=1"


def trial(
    protocol: str,
    rep: int,
    pdt: float | None,
    *,
    client: str = "h2load",
    network: str = "rtt=20ms",
    page: str = PAGE,
    plt: float | None = None,
    status: str = "ok",
    attempt: int = 1,
    req_headers: int | None = None,
    resp_headers: int | None = None,
    body: int | None = None,
) -> TrialRecord:
    block = f"{page}|{network}|nginx|{client}|cubic|iw10|r{rep}"
    return TrialRecord(
        trial_key=f"{block}|{protocol}",
        experiment="e",
        block=block,
        cell=Cell.of(page=page, network=network, server="nginx", client=client),
        page_digest=None,
        protocol=one_of(PROTOCOLS, protocol, "protocol"),
        repetition=rep,
        seed=rep,
        attempt=attempt,
        status=one_of(STATUSES, status, "status"),
        error=None if status == "ok" else "boom",
        started_at="2026-01-01T00:00:00",
        duration_s=1.0,
        pdt_ms=pdt,
        plt_ms=plt,
        body_bytes=body,
        bytes_up=None,
        bytes_down=None,
        tcp_connections=None,
        retransmits=None,
        request_header_bytes=req_headers,
        response_header_bytes=resp_headers,
        config={},
        versions={},
    )


def cell(client: str = "h2load", network: str = "rtt=20ms", page: str = PAGE) -> Cell:
    return Cell.of(page=page, network=network, server="nginx", client=client)


def test_browsers_are_judged_on_plt_and_speed_index_others_on_pdt() -> None:
    trials = [
        trial("h1s", 0, 100.0),
        trial("h1s", 0, 120.0, client="chromium", plt=150.0),
    ]
    views = model.metric_views(trials)
    assert [v.metric for v in views] == ["pdt_ms", "plt_ms"]  # no speed index anywhere
    assert {t.cell.client for t in views[0].trials} == {"h2load"}
    assert {t.cell.client for t in views[1].trials} == {"chromium"}
    assert model.metric_views([]) == []


def test_verdict_rows_carry_medians_ci_ratio_n_and_failures() -> None:
    trials = [trial("h1s", r, 100.0 + r) for r in range(4)]
    trials += [trial("h2s", r, 50.0 + r) for r in range(3)]
    trials.append(trial("h2s", 3, None, status="failed"))
    a = analyze(trials, np.random.default_rng(0))
    (row,) = model.verdict_rows(a)
    assert row.pair == "h2s/h1s"
    assert row.h1.startswith("h1s: 102 [")  # median of 100..103 is 101.5 -> "102"
    assert row.h2.startswith("h2s: 51 [")
    assert row.ratio.startswith("0.50")
    assert row.outcome == "h2 faster"
    assert row.n == "3 blocks (h1s 4, h2s 3), 1 incomplete"
    assert row.failures == "1"
    assert row.factors[2:] == (
        "nginx", "h2load", "cubic iw10", "1.3", "first", "forced", "all",
    )  # fmt: skip


def test_verdict_rows_empty_without_pairs() -> None:
    a = analyze([trial("h1s", 0, 100.0)], np.random.default_rng(0))
    assert model.verdict_rows(a) == []


def test_latest_ok_keeps_the_latest_successful_attempt() -> None:
    rows = [
        trial("h1s", 0, None, status="failed", attempt=1),
        trial("h1s", 0, 90.0, attempt=2),
        trial("h1s", 1, None, status="failed"),
    ]
    ok = model.latest_ok(rows)
    assert [t.pdt_ms for t in ok] == [90.0]


def test_numeric_factor_levels_only_varying_known_finite_factors() -> None:
    cells = [cell(network="rtt=20ms"), cell(network="rtt=100ms"), cell(page="warc:x.warc")]
    levels = model.numeric_factor_levels(cells)
    assert set(levels) == {"rtt_ms"}
    assert sorted(set(levels["rtt_ms"].values())) == [20.0, 100.0]


def test_line_series_median_and_quartiles_per_level() -> None:
    trials = [trial("h1s", r, v, network=n) for r, (v, n) in enumerate(
        [(10.0, "rtt=20ms"), (20.0, "rtt=20ms"), (30.0, "rtt=20ms"), (100.0, "rtt=100ms")]
    )]  # fmt: skip
    levels = model.numeric_factor_levels({cell(network="rtt=20ms"), cell(network="rtt=100ms")})
    series = model.line_series(trials, "pdt_ms", levels["rtt_ms"])
    (low, high) = series["h1s"]
    assert (low.x, low.median, low.low, low.high) == (20.0, 20.0, 15.0, 25.0)
    assert (high.x, high.median) == (100.0, 100.0)


def test_line_series_keep_the_levels_of_another_varied_factor_apart() -> None:
    """Two clients over two RTTs: split by client, one line each (h2load 10 and 100 ms, nghttp
    30 and 300 ms); pooled, one line of their mixture."""
    trials = [
        trial("h1s", r, v * k, network=n, client=c)
        for c, k in (("h2load", 1), ("nghttp", 3))
        for r, (v, n) in enumerate([(10.0, "rtt=20ms"), (100.0, "rtt=100ms")])
    ]
    levels = model.numeric_factor_levels({t.cell for t in trials})["rtt_ms"]
    split = model.line_series(trials, "pdt_ms", levels, ["client"])
    assert {k: [p.median for p in v] for k, v in split.items()} == {
        "h1s h2load": [10.0, 100.0], "h1s nghttp": [30.0, 300.0]}  # fmt: skip
    (pooled,) = model.line_series(trials, "pdt_ms", levels).values()
    assert [p.median for p in pooled] == [20.0, 200.0]


def test_heatmap_axes_prefer_factors_that_separate_the_most_cells() -> None:
    trials = []
    for net in ("rtt=20ms", "rtt=100ms"):
        for page in ("synthetic:n=8,size=10KB,origins=1", "synthetic:n=64,size=10KB,origins=1"):
            for r in range(2):
                trials += [
                    trial("h1s", r, 100.0, network=net, page=page),
                    trial("h2s", r, 80.0, network=net, page=page),
                ]
    a = analyze(trials, np.random.default_rng(0))
    assert model.choose_heatmap_axes(a.verdicts) == ("object_count", "rtt_ms")
    (hm,) = model.heatmaps(a.verdicts)
    assert hm.x_labels == ("8", "64") and hm.y_labels == ("20 ms", "100 ms")
    assert hm.values[(0, 0)] == (0.8, 2)


def test_heatmap_falls_back_to_page_by_network() -> None:
    trials = [trial("h1s", r, 100.0) for r in range(2)] + [trial("h2s", r, 90.0) for r in range(2)]
    a = analyze(trials, np.random.default_rng(0))
    assert model.choose_heatmap_axes(a.verdicts) == ("page", "network")
    (hm,) = model.heatmaps(a.verdicts)
    assert list(hm.values) == [(0, 0)]
    assert model.heatmaps([]) == []


def test_header_rows_shares_of_page_bytes() -> None:
    trials = [
        trial("h1s", 0, 1.0, req_headers=100, resp_headers=100, body=800),
        trial("h2s", 0, 1.0, req_headers=None, resp_headers=50, body=950),
    ]
    h1, h2 = model.header_rows(trials)
    assert (h1.protocol, h1.request_header_bytes, h1.request_share) == ("h1s", 100.0, 0.1)
    assert h1.response_share == 0.1
    assert h2.request_header_bytes is None and h2.request_share is None
    assert h2.response_share == 0.05


def test_chosen_cell_prefers_browsers_then_most_trials() -> None:
    trials = [trial("h1s", r, 10.0) for r in range(5)]
    trials += [trial("h1s", r, 10.0, client="chromium", plt=12.0) for r in range(2)]
    assert model.choose_cell(trials) == cell("chromium")
    assert model.choose_cell(trials[:5]) == cell()
    assert model.choose_cell([]) is None


def test_median_trial_per_protocol_lower_middle() -> None:
    trials = [trial("h1s", r, v) for r, v in enumerate([30.0, 10.0, 20.0, 40.0])]
    trials.append(trial("h2s", 0, 5.0))
    metric, median = model.median_trials(trials, cell())
    assert metric == "pdt_ms"
    assert median["h1s"].pdt_ms == 20.0
    assert median["h2s"].pdt_ms == 5.0


def test_frame_log_gives_one_lane_per_stream_with_data_frames() -> None:
    log = "\n".join(
        [
            "[  0.010] send HEADERS frame <length=40, flags=0x25, stream_id=13>",
            "[  0.122] recv DATA frame <length=512, flags=0x00, stream_id=13>",
            "[  0.129] recv DATA frame <length=8192, flags=0x00, stream_id=15>",
            "[  0.130] recv DATA frame <length=1808, flags=0x01, stream_id=13>",
        ]
    )
    lanes = timeline.frame_rows_from_log(log, "nghttp-0")
    assert [lane.label for lane in lanes] == ["nghttp-0 stream 13", "nghttp-0 stream 15"]
    assert lanes[0].spans == ((122.0, 122.0, 512), (130.0, 130.0, 1808))


def test_frame_rows_from_resources_span_first_to_last_byte() -> None:
    rows = [
        WaterfallRow("/b", 5.0, None, 9.0, "c", 10),
        WaterfallRow("/a", 1.0, 3.0, 4.0, "c", 20),
    ]
    lanes = timeline.frame_rows_from_resources(rows)
    assert [(lane.label, lane.spans) for lane in lanes] == [
        ("/a", ((3.0, 4.0, 20),)),
        ("/b", ((5.0, 9.0, 10),)),
    ]


def test_waterfall_rows_from_store_dicts() -> None:
    (row,) = timeline.waterfall_rows(
        [
            {
                "url": "https://o1.h2lab.test/obj/1.png?x=1",
                "start_ms": 1,
                "ttfb_ms": None,
                "end_ms": 2.5,
                "connection": "o1#0",
                "bytes": 10,
            }
        ]
    )
    assert row == WaterfallRow("/obj/1.png?x=1", 1.0, None, 2.5, "o1#0", 10)


def test_filmstrip_instants_and_frame_on_screen() -> None:
    assert timeline.filmstrip_times([900.0, 450.0], count=4) == [0.0, 300.0, 600.0, 900.0]
    frames = [(100.0, "a"), (500.0, "b")]
    assert timeline.frame_at(frames, 50.0) is None
    assert timeline.frame_at(frames, 100.0) == "a"
    assert timeline.frame_at(frames, 600.0) == "b"
