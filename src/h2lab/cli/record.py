"""``h2lab record URL``: load a live page in Chromium and store what it fetched as a page."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from h2lab.cli.common import console, err
from h2lab.errors import SpecError
from h2lab.spec.limits import MAX_TIMEOUT_S


def parse_host_map(items: list[str]) -> dict[str, str]:
    """``--host NAME=IP`` options -> {name: ip} (SpecError naming the option)."""
    hosts: dict[str, str] = {}
    for item in items:
        name, eq, ip = item.partition("=")
        if not eq or not name or not ip:
            raise SpecError("command line", "--host", f"expected NAME=IP, got {item!r}")
        hosts[name.lower()] = ip
    return hosts


def record(
    url: Annotated[str, typer.Argument(help="the page to load: an http:// or https:// URL")],
    name: Annotated[str | None, typer.Option(help="page name (default: the URL's host)")] = None,
    warc: Annotated[
        Path | None, typer.Option(help="also write the recording as a WARC 1.1 file here")
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            help="seconds the load event and the network idle after it may take",
            min=1,
            max=MAX_TIMEOUT_S,
        ),
    ] = 30.0,
    netns: Annotated[
        str | None, typer.Option(hidden=True, help="run the browser in this network namespace")
    ] = None,
    host: Annotated[
        list[str] | None,
        typer.Option(hidden=True, help="NAME=IP: the only names the browser resolves"),
    ] = None,
    spki: Annotated[
        str | None, typer.Option(hidden=True, help="SPKI hash of a CA the browser trusts")
    ] = None,
    journey: Annotated[
        Path | None,
        typer.Option(
            help="a journey file: its first step's path is loaded on URL's site, then its "
            "other steps are taken, and every response recorded (POSTs, cookies)"
        ),
    ] = None,
) -> None:
    """Record a live page: load URL in Chromium and store every response it fetched.

    Waits for the load event, then for 2 s with no request in flight (within --timeout).
    With --journey, then takes the journey's steps and records what they fetch too.
    Prints what was recorded, a note for each thing left out, and the page id."""
    from h2lab.record import record_page
    from h2lab.spec.journey import load_journey

    hosts = parse_host_map(host) if host else None
    steps = load_journey(journey) if journey is not None else None
    result = record_page(
        url, name=name, warc=warc, timeout_s=timeout, netns=netns, hosts=hosts, spki=spki,
        journey=steps,
    )  # fmt: skip
    rec, page = result.recording, result.page
    for note in rec.notes:
        err.print(f"note: {note}", soft_wrap=True, markup=False, emoji=False)
    console.print(
        f"recorded {rec.url} in {result.elapsed_s:.1f} s: {len(page.resources)} resources, "
        f"{len(page.origins)} origins, {page.total_body_bytes:,} bytes of bodies, "
        f"{len(rec.notes)} notes",
        soft_wrap=True,
        markup=False,
        emoji=False,
    )
    if result.warc is not None:
        console.print(f"WARC: {result.warc}", soft_wrap=True, markup=False, emoji=False)
    console.print(f"page id: {page.digest} (name {page.name})", markup=False, emoji=False)
    if steps is not None:
        console.print(
            f'replay it with a journey file whose page = "{page.name}" (docs/guide.md)',
            markup=False,
            emoji=False,
        )
