"""``h2lab pages``: list, show, generate, import and check stored pages."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from h2lab.cli.common import console, err
from h2lab.errors import H2LabError, SpecError

pages_app = typer.Typer(help="Pages: list, show, generate, import and check stored pages.")


def _page_row(page: object) -> tuple[str, ...]:
    from h2lab.pages import Page

    assert isinstance(page, Page)
    return (
        page.digest,
        page.name,
        str(len(page.origins)),
        str(len(page.resources)),
        f"{page.total_body_bytes / 1000:.1f}",
        page.entry.url(page.schemes.get(page.entry.origin, "https")),
    )


def _pages_table(title: str, pages: list[object]) -> Table:
    table = Table(title=title)
    for col in ("id", "name", "origins", "resources", "body_kB", "entry"):
        table.add_column(col)
    for p in pages:
        table.add_row(*_page_row(p))
    return table


@pages_app.command("list")
def pages_list() -> None:
    """List the stored pages (imported and generated) with their ids."""
    from h2lab.pages.manifest import load_page, pages_root

    pages = []
    for mf in sorted(pages_root().glob("*/manifest.json")):
        try:
            pages.append(load_page(mf.parent))
        except H2LabError as exc:
            err.print(f"skipped {mf.parent.name}: {exc.line()}")
    console.print(_pages_table(f"pages in {pages_root()}", pages))  # type: ignore[arg-type]


@pages_app.command("show")
def pages_show(
    page: Annotated[str, typer.Argument(help="page id, name, spec or folder")],
    limit: Annotated[int, typer.Option(help="resources to list (0: all)", min=0)] = 40,
) -> None:
    """Show a page: origins, and its resources with status, type and size."""
    from h2lab.pages import resolve_page

    p = resolve_page(page, "command line")
    console.print(_pages_table(p.source or p.name, [p]))
    table = Table(title="resources")
    for col in ("#", "method", "status", "url", "content_type", "body_B"):
        table.add_column(col)
    shown = p.resources if limit == 0 else p.resources[:limit]
    for i, r in enumerate(shown):
        table.add_row(str(i), r.method, str(r.status), r.url(), r.content_type, str(r.size_bytes))
    console.print(table)
    if len(shown) < len(p.resources):
        console.print(f"... {len(p.resources) - len(shown)} more (--limit 0 lists all)")


@pages_app.command("synth")
def pages_synth(
    spec: Annotated[str, typer.Argument(help="generator spec, e.g. synthetic:n=64,size=10KB")],
) -> None:
    """Generate a synthetic page (once; the same spec gives the same page id)."""
    from h2lab.pages import resolve_page

    if not spec.startswith("synthetic:"):
        raise SpecError("command line", "SPEC", f"expected synthetic:..., got {spec!r}")
    p = resolve_page(spec, "command line")
    console.print(_pages_table("generated", [p]))


@pages_app.command("import")
def pages_import(
    source: Annotated[str, typer.Argument(help="FILE.warc\\[.gz], FILE.har, or FOLDER#ENTRY")],
    name: Annotated[str | None, typer.Option(help="page name (default: from the file)")] = None,
    host: Annotated[str | None, typer.Option(help="folder import: the origin's host name")] = None,
    follow_symlinks: Annotated[
        bool, typer.Option(help="folder import: follow symlinks that leave the folder")
    ] = False,
) -> None:
    """Import a real page (WARC, HAR with bodies, or a folder) into the page store.

    Prints its id, and a note for each response skipped or dropped."""
    from h2lab.pages.importers import read_capture, read_folder, store

    spec = source
    kind = source.split(":", 1)[0]
    if kind not in ("warc", "har", "dir"):
        path = source.split("#", 1)[0]
        if Path(path).is_dir():
            kind = "dir"
        elif path.endswith((".warc", ".warc.gz")):
            kind = "warc"
        elif path.endswith(".har"):
            kind = "har"
        else:
            raise SpecError(
                "command line", "SOURCE", f"{source!r}: expected a .warc(.gz), a .har or a folder"
            )
        spec = f"{kind}:{source}"
    if kind == "dir":
        folder, _, entry = spec.removeprefix("dir:").partition("#")
        capture = read_folder(
            Path(folder), entry or None, host=host, follow_symlinks=follow_symlinks
        )
    else:
        capture = read_capture(spec, "command line")
    for note in capture.notes:
        err.print(f"note: {note}")
    page = store(capture, name)
    console.print(_pages_table("imported", [page]))


@pages_app.command("check")
def pages_check(page: Annotated[str, typer.Argument(help="page id, name, spec or folder")]) -> None:
    """Check a stored page: valid manifest, every body present with its size and hash."""
    from h2lab.pages import resolve_page
    from h2lab.pages.manifest import check_bodies

    p = resolve_page(page, "command line")
    problems = check_bodies(p)
    for line in problems:
        console.print(f"[red]{line}[/]")
    console.print(
        f"{p.name} ({p.digest}): {len(p.resources)} resources, {len(p.origins)} origins, "
        f"{len(problems)} problem(s)"
    )
    if problems:
        raise typer.Exit(1)
