"""HTML building blocks of the report (pure): the page, its sections, tables and notes.

The page is one self-contained file: CSS inline, figures inline SVG, images ``data:`` URIs, no
script and no reference to anything outside the file (not even a favicon: the ``data:`` icon
stops the browser from asking for one).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping, Sequence
from html import escape

from h2lab.report.model import CompareRow, HeaderRow, VerdictRow
from h2lab.spec.factors import report_columns

SECTIONS: dict[str, str] = {
    "verdicts": "Verdicts",
    "compare": "Paired comparison on another factor",
    "journeys": "Journeys, step by step",
    "cdf": "CDFs across pages",
    "boxes": "Box plots per varied factor and protocol",
    "factors": "Against each numeric factor",
    "heatmap": "Ratio heatmap",
    "tree": "When does h2 help: decision tree",
    "headers": "Header bytes per protocol",
    "browser-metrics": "Browser metrics (browsertime's names)",
    "waterfalls": "Waterfalls of the median trials",
    "filmstrips": "Filmstrips",
    "frames": "Frame timeline of h2 streams",
    "quic": "QUIC connections (qlog)",
    "repro": "Reproducibility",
}
"""Section id -> heading, in page order. Every section is always there; one without data says
so in one line."""

CSS = """
body{font-family:system-ui,sans-serif;margin:24px auto;max-width:1280px;padding:0 16px;
color:#222;line-height:1.4}
h1{font-size:1.6em;margin-bottom:0}h2{margin-top:2em;border-bottom:1px solid #ddd}
h3{font-size:1em;margin:1.2em 0 .4em}
table{border-collapse:collapse;font-size:12px;margin:.5em 0}
th,td{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
.h2-faster{background:#cfe3f7}.h1-faster{background:#fbe0c7}.tie{background:#eee}
.too-few-blocks{color:#888}
.level-faster{background:#cfe3f7}.baseline-faster{background:#fbe0c7}
.b-faster{background:#cfe3f7}.a-faster{background:#fbe0c7}.too-few-pairs{color:#888}
.note{color:#555;font-size:.9em}.empty{color:#777;font-style:italic}
.warn{color:#8a4b00;background:#fff4e0;padding:2px 6px}
.wide{overflow-x:auto}.side{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
.strip{display:flex;gap:4px;overflow-x:auto}.strip figure{margin:0;text-align:center;
font-size:10px}.strip img{display:block;border:1px solid #ccc}
.strip .blank{width:128px;height:72px;border:1px dashed #ccc}
nav a{margin-right:12px}pre{background:#f7f7f7;padding:8px;overflow-x:auto;font-size:12px}
footer{margin-top:3em;border-top:1px solid #ddd;font-size:.9em}
"""


CSP = (
    "default-src 'none'; "
    f"style-src 'sha256-{base64.b64encode(hashlib.sha256(CSS.encode()).digest()).decode()}'; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)
"""The page's Content-Security-Policy: its own ``<style>`` (by hash) and ``data:`` images,
nothing else: no script runs and nothing is fetched, whatever a page's URLs, titles or
headers put into the text (escaped as it is). SVG figures use presentation attributes, not
style attributes, so the policy needs no ``unsafe-inline``."""


def e(text: object) -> str:
    return escape(str(text), quote=True)


def page(
    title: str, subtitle: str, sections: Sequence[str], headings: Mapping[str, str] = SECTIONS
) -> str:
    """The whole page: ``sections`` under a title and a navigation bar to ``headings``."""
    nav = " ".join(f'<a href="#{sid}">{e(t)}</a>' for sid, t in headings.items())
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<link rel="icon" href="data:,">'
        f"<title>{e(title)}</title><style>{CSS}</style></head><body>"
        f'<h1>{e(title)}</h1><p class="note">{e(subtitle)}</p><nav>{nav}</nav>'
        + "".join(sections)
        + "</body></html>\n"
    )


def section(sid: str, body: str, headings: Mapping[str, str] = SECTIONS) -> str:
    tag = "footer" if sid == "repro" else "section"
    return f'<{tag} id="{sid}"><h2>{e(headings[sid])}</h2>{body}</{tag}>'


def empty(message: str) -> str:
    """The one line a section shows when it has nothing to show."""
    return f'<p class="empty">{e(message)}</p>'


def note(text: str) -> str:
    return f'<p class="note">{e(text)}</p>'


def warning(text: str) -> str:
    """A line the reader should not miss (e.g. a cell whose trials ran on machines that
    differ)."""
    return f'<p class="warn">⚠ {e(text)}</p>'


def h3(text: str) -> str:
    return f"<h3>{e(text)}</h3>"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: set[int] = set()) -> str:  # noqa: B006
    """A plain table; cells are escaped; columns in ``numeric`` are right-aligned."""
    head = "".join(f"<th>{e(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{e(c)}</td>' if i in numeric else f"<td>{e(c)}</td>"
            for i, c in enumerate(r)
        )
        + "</tr>"
        for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


VERDICT_HEADERS = (
    *report_columns(),
    "pair",
    "h1 median [95% CI] (ms)",
    "h2 median [95% CI] (ms)",
    "s = h2/h1, median [95% CI]",
    "verdict",
    "n",
    "failures",
)


def verdict_table(rows: Sequence[VerdictRow]) -> str:
    head = "".join(f"<th>{e(h)}</th>" for h in VERDICT_HEADERS)
    body = []
    for r in rows:
        cls = (r.kind or r.outcome).replace(" ", "-")
        cells = (*r.factors, r.pair, r.h1, r.h2, r.ratio)
        body.append(
            "<tr>"
            + "".join(f"<td>{e(c)}</td>" for c in cells)
            + f'<td class="{e(cls)}">{e(r.outcome)}</td>'
            + f"<td>{e(r.n)}</td><td>{e(r.failures)}</td></tr>"
        )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def compare_table(factor: str, rows: Sequence[CompareRow]) -> str:
    heads = (
        "cell (other factors)",
        "protocol",
        factor,
        "baseline",
        "baseline median ms",
        "level median ms",
        "s = level/baseline [CI]",
        "outcome",
        "n",
    )
    head = "".join(f"<th>{e(x)}</th>" for x in heads)
    body = []
    for r in rows:
        cls = r.outcome.replace(" ", "-")
        body.append(
            "<tr>"
            + "".join(f"<td>{e(c)}</td>" for c in (r.cell, r.protocol, r.level, r.baseline))
            + "".join(f'<td class="num">{e(c)}</td>' for c in (r.baseline_ms, r.level_ms))
            + f"<td>{e(r.ratio)}</td>"
            + f'<td class="{e(cls)}">{e(r.outcome)}</td><td>{e(r.n)}</td></tr>'
        )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _bytes(v: float | None) -> str:
    return "not recorded" if v is None else f"{v:,.0f}"


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v * 100:.2f}%"


HEADER_HEADERS = (
    "client",
    "protocol",
    "trials",
    "request header bytes",
    "% of page bytes",
    "response header bytes",
    "% of page bytes",
    "body bytes",
)


def header_table(rows: Sequence[HeaderRow]) -> str:
    return table(
        HEADER_HEADERS,
        [
            (
                r.client,
                r.protocol,
                str(r.n),
                _bytes(r.request_header_bytes),
                _pct(r.request_share),
                _bytes(r.response_header_bytes),
                _pct(r.response_share),
                _bytes(r.body_bytes),
            )
            for r in rows
        ],
        numeric={2, 3, 4, 5, 6, 7},
    )


def side_by_side(items: Sequence[tuple[str, str]]) -> str:
    """(caption, inner HTML) pairs next to each other."""
    return (
        '<div class="side">'
        + "".join(f"<div><h3>{e(cap)}</h3>{inner}</div>" for cap, inner in items)
        + "</div>"
    )


def filmstrip(frames: Sequence[tuple[float, str | None]]) -> str:
    """(ms, data URI or None for nothing on screen yet) thumbnails in a row."""
    out = []
    for t, uri in frames:
        img = (
            f'<img src="{e(uri)}" width="128" alt="frame at {t:.0f} ms">'
            if uri
            else '<div class="blank"></div>'
        )
        out.append(f"<figure>{img}<figcaption>{t:.0f} ms</figcaption></figure>")
    return f'<div class="strip">{"".join(out)}</div>'


def details(summary: str, body_html: str) -> str:
    return f"<details><summary>{e(summary)}</summary>{body_html}</details>"


def pre(text: str) -> str:
    return f"<pre>{e(text)}</pre>"
