"""h2lab.report.write_report on stores built in memory (no lab): every section is there, an
empty section says so in one line, the exports hold the store's rows, the HTML is self-contained."""

from __future__ import annotations

import csv
import dataclasses
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest

from h2lab.clients import ResourceTiming
from h2lab.report import NoResults, write_report
from h2lab.report.build import NO_FILMSTRIP
from h2lab.report.html import SECTIONS
from h2lab.results import TrialRecord
from h2lab.store import Store
from tests.unit.test_report_model import trial


class _Headings(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.h2: list[str] = []
        self.sections: dict[str, str] = {}
        self._in_h2 = False
        self._refs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_h2 = tag == "h2"
        self._refs += [v or "" for k, v in attrs if k in ("src", "href")]

    def handle_data(self, data: str) -> None:
        if self._in_h2:
            self.h2.append(data)
            self._in_h2 = False


def headings_and_refs(text: str) -> tuple[list[str], list[str]]:
    p = _Headings()
    p.feed(text)
    return p.h2, p._refs


def section_html(text: str, sid: str) -> str:
    m = re.search(rf'<(section|footer) id="{sid}">(.*?)</\1>', text, re.S)
    assert m, sid
    return m.group(2)


def test_no_store_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(NoResults, match=r"no results\.sqlite"):
        write_report(tmp_path)


def test_empty_store_every_section_says_why_it_is_empty(tmp_path: Path) -> None:
    Store(tmp_path).close()
    path = write_report(tmp_path)
    text = path.read_text()
    heads, refs = headings_and_refs(text)
    assert heads == list(SECTIONS.values())
    assert all(r.startswith(("data:", "#")) for r in refs)
    for sid in SECTIONS:
        if sid != "repro":
            body = section_html(text, sid)
            assert body.count('class="empty"') >= 1, sid
    for name in ("trials.csv", "resources.csv", "trials.parquet", "resources.parquet"):
        assert (tmp_path / name).is_file()
    assert pq.read_table(tmp_path / "trials.parquet").num_rows == 0


def test_small_store_every_section_with_its_figures(tmp_path: Path) -> None:
    store = Store(tmp_path)
    res = (
        ResourceTiming("https://o1/index.html", "o1", 0.0, 10.0, 20.0, 1000, "h2s", "o1#0"),
        ResourceTiming("https://o1/obj/1.png", "o1", 21.0, 30.0, 40.0, 10000, "h2s", "o1#0"),
    )
    for net in ("rtt=20ms", "rtt=100ms"):
        for r in range(3):
            for protocol, v in (("h1s", 100.0), ("h2s", 80.0)):
                t = trial(protocol, r, v + r, network=net, client="chromium", plt=v * 1.1 + r)
                store.add_trial(t, res)
                store.add_trial(trial(protocol, r, v + r, network=net), res)
    store.close()
    timings: dict[str, float] = {}
    text = write_report(tmp_path, rng_seed=3, timings=timings).read_text()
    heads, refs = headings_and_refs(text)
    assert heads == list(SECTIONS.values())
    assert all(r.startswith(("data:", "#")) for r in refs)
    assert set(timings) >= {"analysis", "tree", "export"}
    verdicts = section_html(text, "verdicts")
    assert verdicts.count("<tbody>") == 2  # pdt (h2load) and plt (chromium)
    assert "h2 faster" in verdicts
    assert 'aria-label="CDF' in section_html(text, "cdf")
    assert "against rtt_ms" in section_html(text, "factors")
    assert "rtt_ms × client" in section_html(text, "heatmap")
    assert 'aria-label="decision tree"' in section_html(text, "tree")
    assert "not recorded" in section_html(text, "headers")
    assert section_html(text, "waterfalls").count('aria-label="waterfall') == 2
    assert NO_FILMSTRIP in section_html(text, "filmstrips")
    assert "derived from resource timings" in section_html(text, "frames")
    assert "report seed (bootstrap, tree)</td><td>3" in section_html(text, "repro")
    with (tmp_path / "resources.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 24 * 2
    assert rows[0]["url"] == "https://o1/index.html"
    assert pq.read_table(tmp_path / "trials.parquet").num_rows == 24


def test_too_few_cells_for_a_tree_says_so(tmp_path: Path) -> None:
    store = Store(tmp_path)
    for r in range(2):
        store.add_trial(trial("h1s", r, 100.0))
        store.add_trial(trial("h2s", r, 90.0))
    store.close()
    text = write_report(tmp_path).read_text()
    assert "too few cells to fit a tree: 1 cell(s)" in section_html(text, "tree")
    assert "no numeric factor varies" in section_html(text, "factors")
    assert "the chosen cell has no HTTP/2 trial" not in text


def test_the_experiments_outlier_rule_is_applied_and_recorded(tmp_path: Path) -> None:
    """experiment.json says ``outlier_rule = "2sd"``: a wild h2 value is left out of the
    comparison (the verdict row counts it), and the reproducibility table names the rule."""
    store = Store(tmp_path)
    for r in range(12):
        store.add_trial(trial("h1s", r, 100.0 + r % 3))
        store.add_trial(trial("h2s", r, 5000.0 if r == 0 else 80.0 + r % 3))
    store.close()
    (tmp_path / "experiment.json").write_text('{"name": "t", "outlier_rule": "2sd"}')
    text = write_report(tmp_path, rng_seed=1).read_text()
    assert "1 outliers removed" in section_html(text, "verdicts")
    assert "outlier rule</td><td>2sd" in section_html(text, "repro")
    (tmp_path / "experiment.json").write_text('{"name": "t"}')
    text = write_report(tmp_path, rng_seed=1).read_text()
    assert "outliers removed" not in section_html(text, "verdicts")
    assert "outlier rule</td><td>none" in section_html(text, "repro")


def test_reproducibility_table_counts_cpu_and_concurrent_trials(tmp_path: Path) -> None:
    """The machine's CPU use during the trials and how many ran beside others (--jobs)."""
    store = Store(tmp_path)
    for r in range(4):
        for protocol, pdt, busy in (
            ("h1s", 100.0, 20.0 + r),
            ("h2s", 90.0, 95.0 if r == 0 else 30.0),
        ):
            t = trial(protocol, r, pdt)
            config = {"shard": f"{1 + r % 2}/2"} if r >= 2 else {}
            store.add_trial(
                dataclasses.replace(
                    t,
                    cpu_busy_pct=busy,
                    cpu_saturated=busy >= 90,
                    config=config,
                    emulator_drops=3 if (r, protocol) == (1, "h2s") else 0,
                )
            )
    store.close()
    repro = section_html(write_report(tmp_path).read_text(), "repro")
    assert "machine busy 26% (median over 8 trials), max 95%; 1 trials at &gt;= 90%" in repro
    assert "1 of 8 trials lost packets in Rattan&#x27;s full sockets (3 in all" in repro
    assert "4 one at a time; 4 as shards of --jobs 2" in repro


def test_reproducibility_counts_the_machines_and_flags_cells_whose_machines_differ(
    tmp_path: Path,
) -> None:
    """Two machines: one cell's h2s trials ran on the one with another kernel (a warning line
    for that cell), the other cell's all on one machine; a warm-up on a third is not counted."""
    store = Store(tmp_path)

    def versions(machine: str, kernel: str) -> dict[str, str]:
        return {
            "h2lab": "0.1.0",
            "machine": machine,
            "host": machine.split("/")[0],
            "cpu_model": "AMD EPYC 7B13",
            "kernel": kernel,
            "rattan_delay_overhead_ms": "0.150",
        }

    for net in ("rtt=20ms", "rtt=100ms"):
        for r in range(2):
            for protocol, pdt in (("h1s", 100.0), ("h2s", 90.0)):
                other = (net, protocol) == ("rtt=20ms", "h2s")
                m, k = ("b/fedcba987654", "6.8.0") if other else ("a/0123456789ab", "6.1.0")
                t = trial(protocol, r, pdt + r, network=net)
                store.add_trial(dataclasses.replace(t, machine=m, versions=versions(m, k)))
    warm = trial("h1s", 0, 100.0)
    store.add_trial(
        dataclasses.replace(warm, warmup=True, machine="c", versions=versions("c", "5.10"))
    )
    store.close()
    repro = section_html(write_report(tmp_path).read_text(), "repro")
    assert "2 machines ran the 8 trial attempts (warm-ups not counted)." in repro
    assert (
        '<td>a/0123456789ab</td><td class="num">6</td><td class="num">6</td>'
        "<td>AMD EPYC 7B13</td><td>6.1.0</td><td>0.150 ms</td>"
    ) in repro
    assert repro.count('class="warn"') == 1
    assert (
        "⚠ synthetic:n=8,size=10KB,origins=1 | rtt=20ms | nginx | h2load | cubic | iw10 | 1.3 | "
        "first | forced | all: its trials ran on machines that differ in kernel: "
        "a/0123456789ab (AMD EPYC 7B13, kernel 6.1.0), b/fedcba987654 (AMD EPYC 7B13, kernel "
        "6.8.0)"
    ) in repro
    # the machine keys are in the machine table, not among the tool versions
    assert "tool versions</td><td>h2lab 0.1.0</td>" in repro
    machines = pq.read_table(tmp_path / "trials.parquet").column("machine").to_pylist()
    assert sorted(set(machines)) == ["a/0123456789ab", "b/fedcba987654", "c"]


def test_reproducibility_says_when_the_machines_agree(tmp_path: Path) -> None:
    store = Store(tmp_path)
    for r in range(2):
        for protocol, pdt in (("h1s", 100.0), ("h2s", 90.0)):
            host = "a" if r == 0 else "b"
            versions = {"host": host, "cpu_model": "X", "kernel": "6.1.0"}
            t = trial(protocol, r, pdt)
            store.add_trial(dataclasses.replace(t, machine=host, versions=versions))
    store.add_trial(trial("h2s", 2, 90.0))  # a row older than the machine: not a difference
    store.close()
    repro = section_html(write_report(tmp_path).read_text(), "repro")
    assert (
        "2 machines ran the 5 trial attempts (warm-ups not counted); 1 recorded no machine."
        in repro
    )
    assert 'class="warn"' not in repro
    assert "No cell ran on machines that differ in cpu_model or kernel." in repro


def test_box_plots_say_they_aggregate_every_value_and_cap_the_dots(tmp_path: Path) -> None:
    store = Store(tmp_path)
    for r in range(3):
        for protocol, v in (("h1s", 100.0), ("h2s", 80.0)):
            store.add_trial(trial(protocol, r, v + r))
    store.close()
    boxes = section_html(write_report(tmp_path).read_text(), "boxes")
    assert "from all its values (6 trials in all, none sampled)" in boxes
    assert "at most the 40 most extreme per box" in boxes


SERVERS = ("origin", "caddy", "nginx@1.26", "haproxy@3.0", "jetty")


def _on(server: str, t: TrialRecord) -> TrialRecord:
    block = t.block.replace("|nginx|", f"|{server}|")
    return dataclasses.replace(
        t, cell=t.cell.replace("server", server), block=block, trial_key=f"{block}|h3"
    )


def test_five_servers_over_one_protocol_are_compared_against_the_first(tmp_path: Path) -> None:
    """No [compare]: the verdicts give s per server against the first the file lists, with its
    CI, and the box plots draw one box per server instead of pooling them."""
    store = Store(tmp_path)
    for i, server in enumerate(SERVERS):
        for r in range(6):
            store.add_trial(_on(server, trial("h3", r, 100.0 * (1 + i / 4) + r)))
    store.close()
    meta = {"name": "servers", "levels": {"server": list(SERVERS)}}
    (tmp_path / "experiment.json").write_text(json.dumps(meta))
    text = write_report(tmp_path, rng_seed=2).read_text()
    verdicts = section_html(text, "verdicts")
    assert "no cell has both an h1 and an h2" not in verdicts
    assert "server against origin:" in verdicts
    rows = re.findall(r"<tr>(.*?)</tr>", verdicts.split("<tbody>", 1)[1], re.S)
    assert len(rows) == 4  # caddy, nginx, haproxy, jetty: each against origin
    for i, server in enumerate(SERVERS[1:], start=1):
        (row,) = [r for r in rows if f"<td>{server}</td><td>origin</td>" in r]
        # s = (1 + i/4): its median and a CI around it, 'baseline faster'
        m = re.search(r"(\d\.\d+) \[(\d\.\d+), (\d\.\d+)\]", row)
        assert m, row
        median, low, high = (float(x) for x in m.groups())
        assert low <= median <= high and abs(median - (1 + i / 4)) < 0.05
        assert "baseline faster" in row
    compare = section_html(text, "compare")
    assert "against its first level" in compare and "server against origin:" in compare
    boxes = section_html(text, "boxes")
    assert "pdt_ms per server" in boxes
    for server in SERVERS:
        assert f">{server}<" in boxes  # one group, its one box, per server


def test_a_journey_is_reported_step_by_step(tmp_path: Path) -> None:
    """A journey's cell: one row per step with each protocol's median, h2/h1 and h3/h2 per
    repetition with their CI, and the connections opened; a store without one says so."""
    from h2lab.results import StepTiming

    store = Store(tmp_path)
    page = "journey:/tmp/shop.toml"
    for r in range(4):
        for protocol, slow in (("h1s", 1.0), ("h2s", 0.8), ("h3", 0.6)):
            t = trial(protocol, r, None, client="chromium", page=page, plt=500 * slow + r)
            steps = (
                StepTiming(1, "product", "click", 100 * slow + r, 3, int(protocol == "h1s")),
                StepTiming(2, "log in", "submit", 200 * slow + r, 2, 0),
            )
            total = t.plt_ms + sum(s.duration_ms for s in steps)  # type: ignore[operator]
            store.add_trial(dataclasses.replace(t, journey_ms=total), (), steps)
    store.close()
    text = write_report(tmp_path, rng_seed=4).read_text()
    part = section_html(text, "journeys")
    assert "s = h2s/h1s [CI]" in part and "s = h3/h2s [CI]" in part
    rows = re.findall(r"<tr>(.*?)</tr>", part.split("<tbody>", 1)[1], re.S)
    assert [re.sub("<.*?>", "|", r).split("|")[1] for r in rows] == [
        "(first: the measured load, plt)",
        "1. product",
        "2. log in",
        "whole journey (journey_ms)",
    ]
    # h2s/h1s and h3/h2s of 100 + r, 80 + r, 60 + r: their medians, within their CIs
    assert "<td>0.803 [0.800, 0.806]</td><td>0.755 [0.750, 0.759]</td>" in rows[1]
    assert rows[1].endswith("<td>1</td><td>0</td><td>0</td>")  # h1s opened one, h2 and h3 none
    Store(tmp_path / "plain").close()
    plain = write_report(tmp_path / "plain").read_text()
    assert "no journey trials" in section_html(plain, "journeys")
