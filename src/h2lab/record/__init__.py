"""``h2lab record``: load a live page in Chromium and store what it fetched as a page, like
WebPageTest's or Web Page Replay's record mode, so that the lab can replay it
(docs/pages-import.md, "Recording a live page"). All of recording is in this package, above
the clients and the pages it uses (nothing below it imports it; the command line,
``h2lab.cli.record``, calls :func:`record_page`):

- :mod:`~h2lab.record.chromium`: Chromium loading the live page, every response and its body
  into a log (the browser started as the Chromium client starts its own);
- :mod:`~h2lab.record.log`: the recording format, pure: the DevTools events -> the log -> a
  :class:`~h2lab.record.log.Recording` (the responses to store);
- :mod:`~h2lab.record.warc`: a recording as a WARC 1.1 file, pure (read back by the WARC
  importer, :mod:`h2lab.pages.importers.warc`);
- here: the order of it all.

In order: the URL is checked (http(s), a host the lab can serve) before any browser starts;
Chromium loads it (:func:`h2lab.record.chromium.record_live`); the responses become a
:class:`~h2lab.record.log.Recording`; with ``warc``, a WARC of it is written beside its
final name; the page is stored (:class:`~h2lab.pages.manifest.PageWriter`, one atomic rename);
then the WARC takes its name. Anything failing on the way leaves no page and no WARC.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from h2lab.clients.browser.journey import step_url
from h2lab.errors import SpecError
from h2lab.pages.importers.common import host_of, write_page
from h2lab.pages.manifest import Page
from h2lab.record.chromium import IDLE_S, record_live
from h2lab.record.log import Recording, build_recording, check_record_url
from h2lab.record.warc import write_warc
from h2lab.spec.journey import Journey
from h2lab.spec.limits import MAX_TIMEOUT_S

DEFAULT_RECORD_TIMEOUT_S = 30.0
"""How long the load event and the network idle after it may take, together."""


@dataclass(frozen=True)
class RecordResult:
    """What :func:`record_page` made."""

    page: Page
    recording: Recording
    elapsed_s: float
    """from the browser's start to the page stored"""
    warc: Path | None = None


def check_warc_path(warc: Path) -> None:
    """A WARC can be written at ``warc`` (its folder exists; it is no folder itself)."""
    if warc.is_dir():
        raise SpecError("command line", "--warc", f"{warc} is a folder, not a file name")
    if not warc.parent.is_dir():
        raise SpecError("command line", "--warc", f"{warc}: no such folder {warc.parent}")


def store_recording(
    recording: Recording, name: str, root: Path | None = None, cookies: bool = False
) -> Page:
    """Write ``recording`` as a page (same responses, same page id as its WARC imported);
    ``cookies``: keep their ``Set-Cookie`` (a journey's)."""
    return write_page(
        recording.responses, recording.entry_url, name, recording.source, root, cookies
    )


def record_page(
    url: str,
    *,
    name: str | None = None,
    warc: Path | None = None,
    timeout_s: float = DEFAULT_RECORD_TIMEOUT_S,
    idle_s: float = IDLE_S,
    netns: str | None = None,
    hosts: Mapping[str, str] | None = None,
    spki: str | None = None,
    root: Path | None = None,
    journey: Journey | None = None,
) -> RecordResult:
    """Record ``url`` and store it as a page named ``name`` (default: the URL's host), under
    ``root`` (default: the page store); with ``warc``, also write it there as a WARC.
    ``netns``, ``hosts`` and ``spki``: where the browser runs, what it resolves, which CA it
    trusts (:func:`~h2lab.record.chromium.record_live`). With ``journey``, its steps after the
    first are taken once the page is loaded, every response of every step recorded (POSTs with
    their bodies) and their cookies kept. Bad input (a URL that cannot be recorded or does not
    load) is a SpecError naming the URL; nothing is then stored."""
    checked = check_record_url(url)
    if not 0 < timeout_s <= MAX_TIMEOUT_S:
        raise SpecError(
            "command line", "--timeout", f"expected 0..{MAX_TIMEOUT_S:g} seconds, got {timeout_s:g}"
        )
    if warc is not None:
        check_warc_path(warc)
    started = time.monotonic()
    if journey is not None:  # the journey's first page, on the URL's site
        checked = check_record_url(step_url(journey.steps[0].target, checked))
    log, notes = record_live(
        checked, timeout_s=timeout_s, idle_s=idle_s, netns=netns, hosts=hosts, spki=spki,
        journey=journey,
    )  # fmt: skip
    recording = build_recording(checked, log, notes)
    tmp = None
    try:
        if warc is not None:
            tmp = _write_warc_beside(recording, warc)
        page = store_recording(recording, name or host_of(checked), root, journey is not None)
        if tmp is not None and warc is not None:
            os.replace(tmp, warc)
            tmp = None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()
    return RecordResult(page, recording, time.monotonic() - started, warc)


def _write_warc_beside(recording: Recording, warc: Path) -> Path:
    """The WARC written to a temporary file in ``warc``'s folder (renamed once all is done)."""
    fd, name = tempfile.mkstemp(prefix=f".{warc.name}.", suffix=".tmp", dir=warc.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as out:
            write_warc(recording, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp
