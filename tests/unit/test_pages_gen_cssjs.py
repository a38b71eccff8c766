"""h2lab.pages.gen_cssjs: the CSS/JS HOL pages of seed 000 §4.3 (500 divs, k files)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from h2lab.errors import SpecError
from h2lab.pages.gen_cssjs import CssJsSpec
from h2lab.pages.synthetic import materialize, parse


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("H2LAB_CACHE", str(root))
    return root


def test_parse_and_name() -> None:
    spec = parse("synthetic:cssjs:kind=js,files=50")
    assert spec == CssJsSpec("js", 50, 500, 0)
    assert spec.name == "synthetic:cssjs:kind=js,files=50"
    assert parse("synthetic:cssjs").name == "synthetic:cssjs:kind=css,files=1"


@pytest.mark.parametrize(
    ("spec", "field", "reason"),
    [
        ("synthetic:cssjs:kind=wasm", "p.kind", "unknown value 'wasm' (allowed: css, js)"),
        ("synthetic:cssjs:files=0", "p.files", "must be 1..500, got 0"),
        ("synthetic:cssjs:files=501", "p.files", "must be 1..500, got 501"),
        ("synthetic:cssjs:divs=10,files=11", "p.files", "must be 1..10, got 11"),
        ("synthetic:cssjs:files=x", "p.files", "'x': invalid literal"),
        ("synthetic:cssjs:rules=3", "p.rules", "unknown key (known: kind, files, divs, seed)"),
    ],
)
def test_parse_errors(spec: str, field: str, reason: str) -> None:
    with pytest.raises(SpecError) as exc:
        parse(spec, "e.toml", field="p")
    assert (exc.value.source, exc.value.field) == ("e.toml", field)
    assert exc.value.reason.startswith(reason)


@pytest.mark.parametrize("files", [1, 7, 500])
def test_css_one_rule_per_div_over_k_files(cache: Path, files: int) -> None:
    page = materialize(parse(f"synthetic:cssjs:kind=css,files={files}"))
    html = page.body_file(page.entry).read_text()
    sheets = page.resources[1:]
    assert len(sheets) == files
    assert {r.content_type for r in sheets} == {"text/css; charset=utf-8"}
    assert page.origins == ("o1.h2lab.test",)
    assert re.findall(r'<link rel="stylesheet" href="//o1.h2lab.test(/css/\d+\.css)">', html) == [
        r.path for r in sheets
    ]
    divs = re.findall(r'<div id="(d\d{4})"></div>', html)
    assert len(divs) == 500
    rules: list[str] = []
    for r in sheets:
        css = page.body_file(r).read_text()
        found = re.findall(r"#(d\d{4})\{background:#[0-9a-f]{6}\}\n", css)
        assert found  # balanced blocks: every file styles some divs
        assert re.sub(r"#d\d{4}\{background:#[0-9a-f]{6}\}\n", "", css) == ""
        rules += found
    assert rules == divs  # exactly one rule per div, in order


def test_same_code_whatever_the_concatenation(cache: Path) -> None:
    def code(files: int, kind: str) -> str:
        page = materialize(parse(f"synthetic:cssjs:kind={kind},files={files}"))
        return "".join(page.body_file(r).read_text() for r in page.resources[1:])

    assert code(1, "css") == code(30, "css")
    assert code(1, "js") == code(500, "js")


def test_js_several_statements_per_div(cache: Path) -> None:
    page = materialize(parse("synthetic:cssjs:kind=js,files=30"))
    html = page.body_file(page.entry).read_text()
    scripts = page.resources[1:]
    assert len(scripts) == 30
    assert {r.content_type for r in scripts} == {"text/javascript; charset=utf-8"}
    srcs = re.findall(r'<script async src="//o1.h2lab.test(/js/\d+\.js)"></script>', html)
    assert srcs == [r.path for r in scripts]
    assert html.index("<script") > html.rindex('<div id="d')  # divs exist when scripts run
    ids = []
    for r in scripts:
        js = page.body_file(r).read_text()
        for line in js.splitlines():
            m = re.fullmatch(
                r'\(function\(\)\{var e=document\.getElementById\("(d\d{4})"\);'
                r'(e\.\w+(\.\w+)?="[^"]*";){4}\}\)\(\);',
                line,
            )
            assert m, line
            ids.append(m.group(1))
    assert ids == [f"d{i:04d}" for i in range(500)]


def test_seed_changes_the_page(cache: Path) -> None:
    a = materialize(parse("synthetic:cssjs:kind=css,files=5"))
    assert materialize(parse("synthetic:cssjs:kind=css,files=5")).digest == a.digest
    assert materialize(parse("synthetic:cssjs:kind=css,files=5,seed=1")).digest != a.digest
