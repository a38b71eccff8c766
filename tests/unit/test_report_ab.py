"""h2lab.report.ab: two results folders read, compared and written as compare.html; the
metric the report would choose; what differs between the runs; bad input."""

from __future__ import annotations

import dataclasses
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import pytest

from h2lab.errors import SpecError
from h2lab.report.ab import ab_page, ab_rows, compare_folders, differs_lines, row_cells
from h2lab.store import Store
from tests.unit.test_analysis_ab import CLIENT, FCFS, on


def folder(
    path: Path,
    server: str,
    values_ms: Sequence[float],
    *,
    seed: int = 1,
    protocols: Sequence[str] = ("h2s",),
    page: str = "synthetic:n=2,size=1KB",
    nginx: str = "1.22.1",
) -> Path:
    """A results folder of one Chromium cell: plt_ms = values_ms[r] in repetition r (pdt_ms a
    tenth of it), ``experiment.json`` with the experiment's seed."""
    store = Store(path)
    for protocol in protocols:
        for r, v in enumerate(values_ms):
            t = on(server, protocol, r, v / 10, client="chromium", plt=v, page=page)
            tools = {"nginx": nginx, server: "h2lab-origin 1", "cpu_model": "x86", "machine": "lab"}
            store.add_trial(dataclasses.replace(t, versions=tools, machine="lab"))
    store.close()
    meta = {"name": "e", "seed": seed, "repetitions": len(values_ms), "outlier_rule": None}
    (path / "experiment.json").write_text(json.dumps(meta))
    return path


def test_compare_folders_pairs_on_the_browsers_metric_and_says_what_differs(
    tmp_path: Path,
) -> None:
    a = folder(tmp_path / "a", FCFS, [1000, 1100, 1200, 1300, 1400])
    b = folder(tmp_path / "b", CLIENT, [800, 880, 960, 1040, 1120], seed=2, nginx="1.24.0")
    result = compare_folders(a, b)
    (row,) = ab_rows(result.comparison)
    assert row.metric == "plt_ms"  # the report's for a browser, not pdt_ms
    assert (row.a_ms, row.b_ms, row.ratio) == ("1200", "960", "0.800 [0.800, 0.800]")
    assert row.n == "5 pairs (A 5, B 5)" and row.p == "0.0625" and row.outcome == "B faster"
    assert row.factors[:4] == (
        "synthetic:n=2,size=1KB",
        "rtt=20ms",
        f"{FCFS} → {CLIENT}",
        "chromium",
    )
    headers, (cells,) = row_cells([row])
    assert headers[:5] == ["page", "network", "server", "client", "protocol"]  # tcp, tls: same
    assert cells[:5] == [*row.factors[:4], "h2s"]
    assert differs_lines(result) == [
        f"server: A {FCFS}; B {CLIENT} (set aside: cells matched without it)",
        "experiment seed: A 1; B 2",
        "nginx version: A 1.22.1; B 1.24.0",
    ]
    assert compare_folders(a, b, metric="pdt_ms").comparison.cells[0].median_a_ms == 120.0


def test_the_page_has_the_table_the_chart_and_the_differences(tmp_path: Path) -> None:
    a = folder(tmp_path / "a", FCFS, [1000, 1100, 1200], protocols=("h1s", "h2s"))
    b = folder(tmp_path / "b", CLIENT, [1000, 1210, 1320], protocols=("h1s", "h2s"))
    page = ab_page(compare_folders(a, b))
    cell = f"<td>synthetic:n=2,size=1KB</td><td>rtt=20ms</td><td>{FCFS} → {CLIENT}</td>"
    assert page.count(f"<tr>{cell}<td>chromium</td>") == 2
    assert page.count('<td class="tie">tie</td>') == 2
    assert f"server: A {FCFS}; B {CLIENT} (set aside" in page
    svg = re.search(r"<svg.*?</svg>", page, re.S)
    assert svg is not None
    root = ET.fromstring(svg.group(0))
    labels = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "h1s" in labels and "h2s" in labels  # one CI bar per protocol
    assert "every cell of each run has a partner" in page
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")


def test_cells_without_a_partner_are_listed(tmp_path: Path) -> None:
    a = folder(tmp_path / "a", FCFS, [1000, 1100], protocols=("h1s", "h2s"))
    b = folder(tmp_path / "b", CLIENT, [1000, 1100])
    store = Store(b)
    store.add_trial(on(CLIENT, "h2s", 0, 5.0, network="cable"))  # a cell A does not have
    store.close()
    result = compare_folders(a, b)
    assert [c.protocol for c in result.comparison.cells] == ["h2s"]
    assert [c.network for c in result.comparison.unmatched_b] == ["cable"]
    assert "network: A rtt=20ms; B cable, rtt=20ms (matched on)" in differs_lines(result)


def test_bad_input_is_a_spec_error_naming_file_and_field(tmp_path: Path) -> None:
    a = folder(tmp_path / "a", FCFS, [1000, 1100])
    b = folder(tmp_path / "b", CLIENT, [900, 1000], page="synthetic:n=9,size=1KB")
    with pytest.raises(SpecError) as none:
        compare_folders(a, b)
    assert str(none.value) == (
        f"{b / 'results.sqlite'}: cells: no cell in common with {a / 'results.sqlite'} "
        "(page: A synthetic:n=2,size=1KB; B synthetic:n=9,size=1KB)"
    )
    h1 = folder(tmp_path / "h1", CLIENT, [900, 1000], protocols=("h1s",))
    with pytest.raises(SpecError, match=r"cells: .* \(no protocol in common: A h2s; B h1s\)"):
        compare_folders(a, h1)
    with pytest.raises(SpecError) as metric:
        compare_folders(a, b, metric="plt")
    assert str(metric.value).startswith("command line: --metric: unknown metric 'plt' (pdt_ms, ")
    empty = tmp_path / "empty"
    Store(empty).close()
    with pytest.raises(SpecError, match=r"results\.sqlite: trials: no trials stored"):
        compare_folders(a, empty)
