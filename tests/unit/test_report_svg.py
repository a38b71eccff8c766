"""h2lab.report.svg: every chart is well-formed XML in the SVG namespace with the marks its
data asks for."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from h2lab.analysis.tree import TreeNode, TreeSplit
from h2lab.report import svg

NS = "{http://www.w3.org/2000/svg}"


def parse(text: str) -> ET.Element:
    root = ET.fromstring(text)
    assert root.tag == f"{NS}svg"
    return root


def count(root: ET.Element, tag: str) -> int:
    return len(root.findall(f".//{NS}{tag}"))


def texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{NS}text")]


def test_nice_ticks_are_round_and_cover_the_range() -> None:
    assert svg.nice_ticks(0, 1) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert svg.nice_ticks(0, 1900) == [0, 500, 1000, 1500]
    assert svg.nice_ticks(3, 3) == [3]


def test_cdf_has_one_line_per_series_reaching_one() -> None:
    root = parse(svg.cdf_chart({"h1s": [3, 1, 2], "h2s": [1.5]}, x_label="ms", title="cdf"))
    lines = root.findall(f".//{NS}polyline")
    assert len(lines) == 2
    assert lines[0].get("stroke") == svg.PROTOCOL_COLOURS["h1s"]
    # 3 values: start at 0, then a rise at each value (a vertical and a point per step)
    assert len(lines[0].get("points", "").split()) == 1 + 2 * 3 - 1 + 1
    assert {"h1s", "h2s"} <= set(texts(root))


def test_box_chart_draws_one_box_per_network_and_protocol_and_marks_outliers() -> None:
    groups = {
        "cable": {"h1s": [10, 11, 12, 13, 100], "h2s": [9, 10, 11]},
        "3g": {"h1s": [50, 51, 52]},
    }
    root = parse(svg.box_chart(groups, y_label="ms", title="boxes"))
    assert count(root, "rect") == 3 + 2  # boxes + legend swatches
    assert count(root, "circle") == 1  # 100 is beyond 1.5 IQR
    assert {"cable", "3g"} <= set(texts(root))


def test_box_stats_whiskers_stop_at_1_5_iqr() -> None:
    b = svg.box_stats([10, 11, 12, 13, 100])
    assert (b.q1, b.median, b.q3) == (11, 12, 13)
    assert (b.whisker_low, b.whisker_high, b.outliers) == (10, 13, (100.0,))


def test_line_chart_points_and_error_bars() -> None:
    series = {
        "h1s": [svg.LinePoint(8, 100, 90, 110), svg.LinePoint(64, 300, 280, 320)],
        "h2s": [svg.LinePoint(8, 95, 90, 100), svg.LinePoint(64, 200, 190, 210)],
    }
    root = parse(svg.line_chart(series, x_label="objects", y_label="ms", title="t", log_x=True))
    assert count(root, "polyline") == 2
    assert count(root, "circle") == 4
    assert {"8", "64"} <= set(texts(root))


def test_heatmap_cells_coloured_by_ratio() -> None:
    values = {(0, 0): (0.5, 3), (1, 0): (1.0, 3), (1, 1): (2.0, 3)}
    root = parse(
        svg.heatmap(["a", "b"], ["x", "y"], values, x_label="X", y_label="Y", title="heat")
    )
    fills = [r.get("fill") for r in root.iter(f"{NS}rect")]
    assert fills == [svg.ratio_colour(0.5), svg.ratio_colour(1.0), svg.ratio_colour(2.0)]
    assert svg.ratio_colour(1.0) == "#ffffff"
    assert svg.ratio_colour(0.5) == "#1f5fa8"  # saturated blue: h2 twice as fast
    assert {"0.50", "1.00", "2.00"} <= set(texts(root))


def test_ci_chart_draws_a_bar_and_a_dot_per_row_and_the_threshold_lines() -> None:
    rows = [
        svg.RatioInterval("h1s", 0.8, 0.7, 0.9, "#1f5fa8"),
        svg.RatioInterval("h2s", 1.2, 1.1, 1.4, "#e07a1f"),
    ]
    root = parse(svg.ci_chart(rows, x_label="B/A", title="ci", marks=(0.95, 1.05)))
    lines = root.findall(f".//{NS}line")
    bars = [ln for ln in lines if ln.get("stroke-width") == "4"]
    assert [b.get("stroke") for b in bars] == ["#1f5fa8", "#e07a1f"]
    x = {ln: float(ln.get("x1") or 0) for ln in bars}
    assert all(float(b.get("x2") or 0) > x[b] for b in bars)  # low to high, left to right
    assert x[bars[1]] > float(bars[0].get("x2") or 0)  # 1.1 right of 0.9
    assert len([ln for ln in lines if ln.get("stroke-dasharray")]) == 2  # 0.95 and 1.05
    assert count(root, "circle") == 2
    assert {"h1s", "h2s", "B/A"} <= set(texts(root))
    assert "no data" in svg.ci_chart([], x_label="B/A", title="ci")


def test_tree_chart_draws_a_box_per_node_and_an_edge_per_child() -> None:
    def leaf(i: int, label: str, h2: int, tie: int) -> TreeNode:
        counts = {"h2": h2, "h1": 0, "tie": tie}
        return TreeNode(i, 1, h2 + tie, counts, label)  # type: ignore[arg-type]

    split = TreeSplit("object_count", 48.0, None, "object_count ≤ 48", "object_count > 48")
    root = TreeNode(
        0, 0, 5, {"h2": 2, "h1": 0, "tie": 3}, "mixed", split, leaf(1, "tie", 0, 3),
        leaf(2, "h2", 2, 0),
    )  # fmt: skip
    out = parse(svg.tree_chart(root))
    assert count(out, "rect") == 3
    assert count(out, "line") == 2
    words = texts(out)
    assert "object_count ≤ 48" in words and "object_count > 48" in words
    assert {"mixed", "tie", "h2"} <= set(words)


def test_waterfall_colours_by_connection_and_caps_rows() -> None:
    rows = [
        svg.WaterfallRow(f"/obj/{i}", i * 1.0, i + 5.0, i + 9.0, f"c{i % 3}", 100)
        for i in range(svg.MAX_ROWS + 5)
    ]
    root = parse(svg.waterfall(rows, t_max_ms=200, title="w"))
    bars = [r for r in root.iter(f"{NS}rect")][1:]  # after the background
    assert len(bars) == 2 * svg.MAX_ROWS  # waiting + receiving part per row
    assert len({b.get("fill") for b in bars}) == 3
    assert any("5 more resources not drawn" in t for t in texts(root))


def test_timeline_one_lane_per_stream() -> None:
    rows = [
        svg.TimelineRow("stream 1", "c", ((10.0, 10.0, 100), (20.0, 20.0, 100))),
        svg.TimelineRow("stream 3", "c", ((15.0, 30.0, 500),)),
    ]
    root = parse(svg.timeline(rows, t_max_ms=40, title="t"))
    assert count(root, "rect") == 1 + 3  # background + 3 marks
    assert "stream 3" in texts(root)


@pytest.mark.parametrize(
    "chart",
    [
        svg.cdf_chart({}, x_label="x", title="cdf"),
        svg.box_chart({}, y_label="y", title="box"),
        svg.line_chart({}, x_label="x", y_label="y", title="line"),
        svg.heatmap([], [], {}, x_label="x", y_label="y", title="heat"),
        svg.waterfall([], t_max_ms=1, title="w"),
        svg.timeline([], t_max_ms=1, title="t"),
    ],
)
def test_empty_data_gives_a_valid_chart_saying_so(chart: str) -> None:
    root = parse(chart)
    assert any("no " in t for t in texts(root))


def test_text_is_escaped() -> None:
    root = parse(svg.cdf_chart({"<a&b>": [1.0]}, x_label="x < y", title='"t"'))
    assert "<a&b>" in texts(root)
