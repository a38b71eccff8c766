"""A journey file: named steps a browser takes on one page's site (land, click, type, submit,
scroll, wait), parsed and checked before anything runs (issue #57).

A journey is TOML::

    name = "shop"                  # default: the file's name without .toml
    page = "synthetic:shop"        # the site the steps run on: any page spec; a file path in it
                                   # is relative to this file
    [[step]]
    name = "land"
    navigate = "/"                 # a path on the page's first origin, or a URL on its origins
    [[step]]
    name = "user"
    type = "#user"                 # a CSS selector; the text typed into it:
    text = "alice"
    [[step]]
    name = "log in"
    submit = "form#login"          # the form, submitted as a user would (its submit button)
    wait = "load"                  # what ends the step: see WAITS

Each step does one thing (its *kind*: the one key of :data:`KINDS` it has), or only waits
(``wait`` alone). What ends a step is its ``wait``: ``load`` (the load event of the navigation
it started), ``quiet`` (no request for :data:`QUIET_MS`), ``css:SELECTOR`` (an element matches),
or a duration (``500ms``, ``2s``); each kind has its default (:data:`DEFAULT_WAIT`).

Everything is bounded (:data:`MAX_JOURNEY_BYTES`, :data:`MAX_STEPS`, text lengths): the file is
outside data. A bad file is one :class:`~h2lab.errors.SpecError` naming the file, the step
(``step[2] (log in)``) and the field. Pure: nothing is read but the file.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from h2lab.errors import SpecError, UnitError
from h2lab.units import parse_duration_ms

KINDS = ("navigate", "click", "type", "submit", "scroll")
"""What a step can do; a step with none of them and a ``wait`` only waits (kind ``wait``)."""

DEFAULT_WAIT = {
    "navigate": "load",
    "submit": "load",
    "click": "quiet",
    "scroll": "quiet",
    "type": "",
    "wait": "",
}
"""What ends a step of each kind when it says nothing ("": nothing, the next step follows)."""

QUIET_MS = 500
"""``wait = "quiet"``: no request started or finished for this long (browsertime's and
Lighthouse's network-quiet windows are 500 ms to 2 s; a short one keeps steps brisk)."""

MAX_JOURNEY_BYTES = 64 << 10
MAX_STEPS = 50
MAX_NAME_CHARS = 80
MAX_SELECTOR_CHARS = 500
MAX_TEXT_CHARS = 10_000
MAX_WAIT_MS = 60_000
"""A wait for a time: at most a minute (a trial's timeout bounds the whole journey anyway)."""

_STEP_KEYS = frozenset({*KINDS, "name", "text", "wait"})
_TOP_KEYS = frozenset({"name", "page", "step"})
_SCROLL_TO = re.compile(r"^(top|bottom|[0-9]{1,7}px)$")


@dataclass(frozen=True)
class Step:
    """One step of a journey."""

    name: str
    kind: str
    """one of :data:`KINDS`, or ``wait``"""
    target: str = ""
    """what the step acts on: a URL or path (navigate), a CSS selector (click, type, submit),
    ``top``, ``bottom``, ``Npx`` or a selector (scroll); empty for a wait"""
    text: str = ""
    """what ``type`` types"""
    wait: str = ""
    """what ends the step: ``load``, ``quiet``, ``css:SELECTOR``, ``Nms``; "" none"""

    @property
    def wait_ms(self) -> float | None:
        """The time a duration ``wait`` waits (None: it waits for something else)."""
        if self.wait in ("", "load", "quiet") or self.wait.startswith("css:"):
            return None
        return parse_duration_ms(self.wait)


@dataclass(frozen=True)
class Journey:
    name: str
    page: str
    """the page spec the steps run on (file paths in it made absolute)"""
    steps: tuple[Step, ...]
    path: Path


def load_journey(path: Path) -> Journey:
    """The journey file at ``path``, checked; one SpecError naming file, step and field."""
    source = str(path)
    try:
        if path.stat().st_size > MAX_JOURNEY_BYTES:
            raise SpecError(source, "file", f"larger than {MAX_JOURNEY_BYTES} bytes")
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SpecError(source, "file", f"cannot read: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise SpecError(source, "file", f"not UTF-8 text (byte {exc.start})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(source, "toml", str(exc)) from exc
    except RecursionError as exc:  # tomllib recurses into nested arrays and tables
        raise SpecError(source, "toml", "arrays or tables nested too deep") from exc
    return parse_journey(raw, path)


def parse_journey(raw: dict[str, Any], path: Path) -> Journey:
    """A journey from its parsed TOML (``path``: its file, for relative page paths)."""
    source = str(path)
    unknown = sorted(set(raw) - _TOP_KEYS)
    if unknown:
        raise SpecError(source, unknown[0], f"unknown key (known: {', '.join(sorted(_TOP_KEYS))})")
    name = raw.get("name", path.name.removesuffix(".toml"))
    if not isinstance(name, str) or not 0 < len(name) <= MAX_NAME_CHARS:
        raise SpecError(source, "name", f"must be text of 1..{MAX_NAME_CHARS} characters")
    page = raw.get("page")
    if not isinstance(page, str) or not page.strip():
        raise SpecError(source, "page", "missing: the page spec the steps run on")
    steps = raw.get("step")
    if not isinstance(steps, list) or not steps:
        raise SpecError(source, "step", "missing: at least one [[step]]")
    if len(steps) > MAX_STEPS:
        raise SpecError(source, "step", f"more than {MAX_STEPS} steps ({len(steps)})")
    parsed = tuple(_step(source, i, s) for i, s in enumerate(steps))
    seen: dict[str, int] = {}
    for i, s in enumerate(parsed):
        if s.name in seen:
            raise SpecError(source, _where(i, s.name), f"the name of step[{seen[s.name]}] too")
        seen[s.name] = i
    if parsed[0].kind != "navigate":
        raise SpecError(source, _where(0, parsed[0].name), "the first step must navigate")
    return Journey(name, _relative_page(path.parent, page.strip()), parsed, path)


def _where(i: int, name: str | None) -> str:
    return f"step[{i}] ({name})" if name else f"step[{i}]"


def _step(source: str, i: int, raw: object) -> Step:
    if not isinstance(raw, dict):
        raise SpecError(source, _where(i, None), "must be a table [[step]]")
    name = raw.get("name")
    if not isinstance(name, str) or not 0 < len(name.strip()) <= MAX_NAME_CHARS:
        raise SpecError(
            source, f"{_where(i, None)}.name", f"missing or not 1..{MAX_NAME_CHARS} characters"
        )
    where = _where(i, name.strip())
    unknown = sorted(set(raw) - _STEP_KEYS)
    if unknown:
        raise SpecError(
            source, f"{where}.{unknown[0]}", f"unknown step key (a step does one of: "
            f"{', '.join(KINDS)}; or only waits)",
        )  # fmt: skip
    kinds = [k for k in KINDS if k in raw]
    if len(kinds) > 1:
        raise SpecError(source, where, f"does {' and '.join(kinds)}: one thing per step")
    if not kinds and "wait" not in raw:
        raise SpecError(source, where, f"does nothing: give one of {', '.join(KINDS)}, or wait")
    kind = kinds[0] if kinds else "wait"
    target = _target(source, where, kind, raw.get(kind, ""))
    text = raw.get("text", "")
    if "text" in raw and kind != "type":
        raise SpecError(source, f"{where}.text", "only a type step types text")
    if kind == "type" and (
        not isinstance(text, str) or "text" not in raw or len(text) > MAX_TEXT_CHARS
    ):
        raise SpecError(source, f"{where}.text", f"missing or over {MAX_TEXT_CHARS} characters")
    wait = _wait(source, f"{where}.wait", raw.get("wait", DEFAULT_WAIT[kind]))
    return Step(name.strip(), kind, target, text, wait)


def _target(source: str, where: str, kind: str, value: object) -> str:
    field = f"{where}.{kind}"
    if kind == "wait":
        return ""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_SELECTOR_CHARS:
        what = "a URL or path" if kind == "navigate" else "a CSS selector"
        raise SpecError(source, field, f"missing {what} (1..{MAX_SELECTOR_CHARS} characters)")
    value = value.strip()
    if re.search(r"[\x00-\x1f\x7f]", value):
        raise SpecError(source, field, "has control characters")
    if kind == "navigate" and not value.startswith(("/", "https://", "http://")):
        raise SpecError(source, field, f"{value[:80]!r}: a path (/...) or an http(s) URL")
    if kind == "scroll" and not _SCROLL_TO.match(value) and not _selector_like(value):
        raise SpecError(source, field, f"{value[:80]!r}: top, bottom, Npx or a CSS selector")
    return value


def _selector_like(value: str) -> bool:
    return value[0] in "#.[" or value[0].isalpha()


def _wait(source: str, field: str, value: object) -> str:
    if not isinstance(value, str):
        raise SpecError(source, field, f"must be text, got {value!r}")
    value = value.strip()
    if value in ("", "load", "quiet"):
        return value
    if value.startswith("css:"):
        selector = value[4:].strip()
        if not selector or len(selector) > MAX_SELECTOR_CHARS:
            raise SpecError(source, field, "css: needs a selector")
        return f"css:{selector}"
    try:
        ms = parse_duration_ms(value)
    except UnitError:
        raise SpecError(
            source, field, f"{value[:80]!r}: load, quiet, css:SELECTOR or a time (500ms, 2s)"
        ) from None
    if not 0 < ms <= MAX_WAIT_MS:
        raise SpecError(source, field, f"{value!r}: a time of 1ms..{MAX_WAIT_MS // 1000}s")
    return value


def _relative_page(folder: Path, page: str) -> str:
    """``warc:shop.warc.gz`` in a journey file means relative to that file."""
    kind, sep, rest = page.partition(":")
    if not sep or kind not in ("warc", "har", "dir") or rest.startswith("/"):
        return page
    return f"{kind}:{(folder / rest).resolve()}"
