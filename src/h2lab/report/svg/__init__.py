"""Hand-written inline SVG charts for the report (pure: data in, one ``<svg>`` string out),
in four modules: :mod:`.frame` (colours, scales, axes), :mod:`.charts`, :mod:`.tree` and
:mod:`.waterfall`; this package names every builder, as the report uses them (``svg.heatmap``).

Every builder returns a complete, well-formed XML element with the SVG namespace, so it can be
inlined in HTML and parsed by an XML parser (the unit tests do). No fonts, images or scripts are
referenced: the figures need nothing outside the report file.
"""

from h2lab.report.svg.charts import (
    MAX_OUTLIER_DOTS,
    BoxStats,
    LinePoint,
    RatioInterval,
    box_chart,
    box_stats,
    cdf_chart,
    ci_chart,
    heatmap,
    line_chart,
    ratio_colour,
    step_chart,
)
from h2lab.report.svg.frame import (
    FONT,
    HEIGHT,
    LABEL_COLOURS,
    PALETTE,
    PROTOCOL_COLOURS,
    WIDTH,
    Scale,
    axes,
    colour_of,
    empty_chart,
    esc,
    fmt_number,
    legend,
    nice_ticks,
    num,
    padded,
    plot_area,
    shorten,
    svg_root,
)
from h2lab.report.svg.tree import (
    tree_chart,
)
from h2lab.report.svg.waterfall import (
    MAX_ROWS,
    ROW_H,
    TimelineRow,
    WaterfallRow,
    timeline,
    waterfall,
)

__all__ = [
    "FONT",
    "HEIGHT",
    "LABEL_COLOURS",
    "MAX_OUTLIER_DOTS",
    "MAX_ROWS",
    "PALETTE",
    "PROTOCOL_COLOURS",
    "ROW_H",
    "WIDTH",
    "BoxStats",
    "LinePoint",
    "RatioInterval",
    "Scale",
    "TimelineRow",
    "WaterfallRow",
    "axes",
    "box_chart",
    "box_stats",
    "cdf_chart",
    "ci_chart",
    "colour_of",
    "empty_chart",
    "esc",
    "fmt_number",
    "heatmap",
    "legend",
    "line_chart",
    "nice_ticks",
    "num",
    "padded",
    "plot_area",
    "ratio_colour",
    "shorten",
    "step_chart",
    "svg_root",
    "timeline",
    "tree_chart",
    "waterfall",
]
