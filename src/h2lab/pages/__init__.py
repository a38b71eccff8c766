"""Pages: the manifest type, synthetic generators and importers."""

from h2lab.pages.manifest import Page, Resource

__all__ = ["Page", "Resource", "resolve_page"]


def resolve_page(spec: str, source: str = "page") -> Page:
    """A page spec -> page on disk (:func:`h2lab.pages.resolve.resolve_page`).

    Imported on the first call, not with this package: every server and client imports the
    package for :class:`Page`, and so do pure modules (the analysis, through the generators),
    while the importers behind resolving import ``warcio``, which imports ``socket``."""
    from h2lab.pages.resolve import resolve_page as resolve

    return resolve(spec, source)
