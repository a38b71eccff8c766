"""Push and Early Hints rules for the servers that take them from their config (h2o, Apache):
which resources of a page a rule names, and the ``as`` of a preload link for each (pure).

The rules are seed 000's (§6.2, Fig. 6), as the Go origin's (``origin/page.go``, ``Select``):
``critical-css`` (the first stylesheet the entry HTML links to, else the first recorded one),
``css-js``, ``images``, ``all``. Only 200 GETs with a body on the entry's origin qualify: HTTP/2
push is per origin, and a config names paths, not hosts.
"""

from __future__ import annotations

import re

from h2lab.pages import Page, Resource

RULES = ("critical-css", "css-js", "images", "all")


def content_class(content_type: str) -> str:
    """html, css, js, image, font or other (as the Go origin's ``contentClass``)."""
    ct = content_type.lower()
    if ct.startswith(("text/html", "application/xhtml")):
        return "html"
    if ct.startswith("text/css"):
        return "css"
    if "javascript" in ct or "ecmascript" in ct:
        return "js"
    if ct.startswith("image/"):
        return "image"
    if ct.startswith("font/") or any(k in ct for k in ("woff", "opentype", "truetype")):
        return "font"
    return "other"


def preload_as(res: Resource) -> str:
    """The ``as`` of a ``Link: rel=preload`` for ``res`` (HTML spec keywords)."""
    return {"css": "style", "js": "script", "image": "image", "font": "font"}.get(
        content_class(res.content_type), "fetch"
    )


def preload_link(res: Resource) -> str:
    """``</path>; rel=preload; as=...``, with ``crossorigin`` where the browser fetches in CORS
    mode (fonts and fetches), so the page's own request matches the preload."""
    kind = preload_as(res)
    cors = "; crossorigin" if kind in ("font", "fetch") else ""
    return f"<{res.target}>; rel=preload; as={kind}{cors}"


def _first_linked_stylesheet(page: Page, css: list[Resource]) -> Resource | None:
    try:
        html = page.body_file(page.entry).read_text(errors="replace")
    except OSError:
        html = ""
    for m in re.finditer(r"<link\b[^>]*>", html, re.IGNORECASE):
        tag = m.group(0)
        if not re.search(r"""rel\s*=\s*["']?stylesheet""", tag, re.IGNORECASE):
            continue
        href = re.search(r"""href\s*=\s*["']?([^"'\s>]+)""", tag, re.IGNORECASE)
        if href is None:
            continue
        target = re.sub(r"^(https?:)?//[^/]+", "", href.group(1))
        for r in css:
            if r.target == target:
                return r
    return css[0] if css else None


def select(page: Page, rule: str) -> list[Resource]:
    """The resources ``rule`` names, in manifest order (``none`` or an unknown rule: none)."""
    entry = page.entry
    same = [
        r
        for r in page.resources
        if r.origin == entry.origin and r is not entry and r.status == 200 and r.method == "GET"
        if r.size_bytes > 0
    ]
    if rule == "critical-css":
        first = _first_linked_stylesheet(page, [r for r in same if _cls(r) == "css"])
        return [first] if first else []
    if rule == "css-js":
        return [r for r in same if _cls(r) in ("css", "js")]
    if rule == "images":
        return [r for r in same if _cls(r) == "image"]
    if rule == "all":
        return same
    return []


def _cls(res: Resource) -> str:
    return content_class(res.content_type)
