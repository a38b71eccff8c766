"""Pages: the manifest type, synthetic generators and (later) importers."""

from h2lab.pages.manifest import Page, Resource, resolve_page

__all__ = ["Page", "Resource", "resolve_page"]
