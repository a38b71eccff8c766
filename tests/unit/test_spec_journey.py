"""h2lab.spec.journey: a journey file parsed and checked; a bad one is one line naming the file,
the step and the field."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from h2lab.errors import SpecError
from h2lab.spec.journey import MAX_STEPS, QUIET_MS, Step, load_journey

SHOP = """
page = "warc:shop.warc.gz"
[[step]]
name = "land"
navigate = "/"
[[step]]
name = "user"
type = "#user"
text = "alice"
[[step]]
name = "log in"
submit = "form#login"
[[step]]
name = "account"
click = "a#account"
wait = "load"
[[step]]
name = "settle"
wait = "250ms"
[[step]]
name = "down"
scroll = "bottom"
wait = "css:footer .done"
"""


def _file(tmp_path: Path, text: str, name: str = "shop.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_journey_reads_with_each_steps_kind_and_default_wait(tmp_path: Path) -> None:
    j = load_journey(_file(tmp_path, SHOP))
    assert j.name == "shop"  # the file's name
    assert j.page == f"warc:{tmp_path / 'shop.warc.gz'}"  # relative to the journey file
    assert j.steps == (
        Step("land", "navigate", "/", wait="load"),
        Step("user", "type", "#user", "alice"),
        Step("log in", "submit", "form#login", wait="load"),
        Step("account", "click", "a#account", wait="load"),
        Step("settle", "wait", wait="250ms"),
        Step("down", "scroll", "bottom", wait="css:footer .done"),
    )
    assert j.steps[4].wait_ms == 250 and j.steps[0].wait_ms is None
    assert QUIET_MS == 500


BAD = [
    ('[[step]]\nname = "a"\nnavigate = "/"\n', "page", "missing: the page spec"),
    ('page = "p"\n', "step", "missing: at least one [[step]]"),
    ('page = "p"\nwho = 1\n[[step]]\nname="a"\nnavigate="/"\n', "who", "unknown key"),
    ('page = "p"\n[[step]]\nname = "a"\nhover = "#x"\n', "step[0] (a).hover", "unknown step key"),
    ('page = "p"\n[[step]]\nname = "a"\n', "step[0] (a)", "does nothing"),
    ('page = "p"\n[[step]]\nnavigate = "/"\n', "step[0].name", "missing"),
    ('page = "p"\n[[step]]\nname="a"\nnavigate="/"\n[[step]]\nname="b"\nclick=""\n',
     "step[1] (b).click", "missing a CSS selector"),
    ('page = "p"\n[[step]]\nname="a"\nnavigate="/"\nclick="#x"\n', "step[0] (a)",
     "does navigate and click: one thing per step"),
    ('page = "p"\n[[step]]\nname="a"\nclick="#x"\n', "step[0] (a)", "the first step must navigate"),
    ('page = "p"\n[[step]]\nname="a"\nnavigate="ftp://x/"\n', "step[0] (a).navigate",
     "a path (/...) or an http(s) URL"),
    ('page = "p"\n[[step]]\nname="a"\nnavigate="/"\nwait="soon"\n', "step[0] (a).wait",
     "load, quiet, css:SELECTOR or a time"),
    ('page = "p"\n[[step]]\nname="a"\nnavigate="/"\nwait="90s"\n', "step[0] (a).wait",
     "a time of 1ms..60s"),
    ('page = "p"\n[[step]]\nname="a"\nnavigate="/"\ntext="x"\n', "step[0] (a).text",
     "only a type step types text"),
    ('page = "p"\n[[step]]\nname="a"\nnavigate="/"\n[[step]]\nname="a"\nwait="1s"\n',
     "step[1] (a)", "the name of step[0] too"),
    ('page = "p"\n[[step]]\nname="a"\nnavigate="/"\n[[step]]\nname="b"\ntype="#u"\n',
     "step[1] (b).text", "missing or over"),
    ('page = "p"\n[[step]]\nname="a"\nnavigate="/"\n[[step]]\nname="b"\nscroll="@@"\n',
     "step[1] (b).scroll", "top, bottom, Npx or a CSS selector"),
    ("page = [", "toml", ""),
]  # fmt: skip


@pytest.mark.parametrize(("text", "field", "said"), BAD)
def test_a_bad_journey_is_one_line_naming_the_file_the_step_and_the_field(
    tmp_path: Path, text: str, field: str, said: str
) -> None:
    path = _file(tmp_path, text)
    with pytest.raises(SpecError) as caught:
        load_journey(path)
    line = str(caught.value)
    assert "\n" not in line
    assert line.startswith(f"{path}: {field}: ") and said in line, line


def test_a_journey_is_bounded(tmp_path: Path) -> None:
    steps = "".join(f'[[step]]\nname = "s{i}"\nnavigate = "/"\n' for i in range(MAX_STEPS + 1))
    with pytest.raises(SpecError, match=re.escape(f"step: more than {MAX_STEPS} steps")):
        load_journey(_file(tmp_path, f'page = "p"\n{steps}'))
    with pytest.raises(SpecError, match="file: larger than 65536 bytes"):
        load_journey(_file(tmp_path, "#" * 70_000))
    with pytest.raises(SpecError, match="file: cannot read"):
        load_journey(tmp_path / "missing.toml")


def test_a_journey_level_needs_a_client_that_takes_its_steps(
    tmp_path: Path,
) -> None:
    from h2lab.runner.levels import validate_factors

    path = _file(tmp_path, SHOP.replace("warc:shop.warc.gz", "synthetic:shop"))
    raw = {"protocol": ["h2s"], "network": ["cable"], "page": [f"journey:{path}"]}
    validate_factors("exp.toml", {**raw, "client": ["chromium", "firefox"]})
    said = r"a journey needs a client that takes its steps; h2load does not \(journeys: chromium"
    with pytest.raises(SpecError, match=r"factors.page\[0\]: " + said):
        validate_factors("exp.toml", {**raw, "client": ["h2load"]})
    validate_factors("exp.toml", {**raw, "client": ["chromium"], "view": ["first", "repeat"]})
    bad = _file(tmp_path, 'page = "synthetic:shop"\n[[step]]\nname = "a"\nclick = "#x"\n', "b.toml")
    with pytest.raises(SpecError, match=rf"{bad}: step\[0\] \(a\): the first step must navigate"):
        validate_factors("exp.toml", {**raw, "page": [f"journey:{bad}"], "client": ["chromium"]})
