"""``synthetic:shop``: a small shop to take journeys on (issue #57): a landing page listing
products, a product page, a login form that POSTs and is answered with a redirect and a cookie,
and an account page that shows who is signed in (docs/pages-synthetic.md).

Every response is a recorded one, as for any page: the login's ``POST /login`` is answered
``303 See Other`` to ``/account`` with ``Set-Cookie: shop_user=alice`` whatever the form held,
and the account page's script writes the signed-in name from ``document.cookie`` into the page
(``#who``), so what a browser shows after the journey proves the cookie was set by the POST's
answer and carried to the next page. The product page has a button whose click handler blocks
the main thread for :data:`SLOW_CLICK_MS` (``#slow``): an interaction of known latency for the
Event Timing API to measure.

The shop's pages keep their ``Set-Cookie`` (the page is written with ``cookies=True``); pages
imported from captures drop cookies (:data:`h2lab.pages.manifest.KEPT_HEADERS`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from h2lab.errors import SpecError
from h2lab.pages.gen_common import ASSET_CACHE, Body, origin_names

KIND = "shop"
PRODUCTS = 3
USER = "alice"
COOKIE = "shop_user"
SLOW_CLICK_MS = 200
"""How long the product page's ``#slow`` button's handler keeps the main thread."""

_STYLE = (
    "body{margin:0;font:16px/1.4 sans-serif;color:#222}header{background:#2a6;color:#fff;"
    "padding:12px 16px}header a{color:#fff;margin-right:16px}main{padding:16px}"
    ".p{display:inline-block;width:180px;margin:8px;vertical-align:top}"
    ".p img{width:160px;height:120px;display:block}button{font-size:16px;padding:6px 14px}"
)
_NAV = (
    '<header><a href="/" id="home">Shop</a><a href="/product/1" id="product">Products</a>'
    '<a href="/login" id="login-link">Log in</a><a href="/account" id="account">Account</a>'
    "</header>"
)


@dataclass(frozen=True)
class ShopSpec:
    """The shop (no keys: one shop, always the same bytes)."""

    @property
    def name(self) -> str:
        return f"synthetic:{KIND}"


def parse(rest: str, spec: str, source: str, field: str) -> ShopSpec:
    if rest:
        raise SpecError(source, field, f"{spec!r}: synthetic:shop takes no keys")
    return ShopSpec()


def _html(title: str, main: str, head: str = "") -> bytes:
    return (
        "<!doctype html>\n<html><head><meta charset=utf-8>"
        f'<title>{title}</title><link rel="icon" href="data:,">'
        f'<link rel="stylesheet" href="/static/shop.css">{head}</head>'
        f"<body>{_NAV}<main>{main}</main></body></html>\n"
    ).encode()


def _image(i: int) -> bytes:
    hue = (i * 137) % 360
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" width="160" height="120">'
        f'<rect width="160" height="120" fill="hsl({hue},70%,55%)"/>'
        f'<text x="80" y="68" font-size="28" text-anchor="middle" fill="#fff">#{i}</text></svg>'
    ).encode()


def build(spec: ShopSpec) -> Iterator[Body]:
    """The shop's responses, the landing page first."""
    host = origin_names(1)[0]
    products = "".join(
        f'<a class="p" href="/product/{i}"><img src="/img/p{i}.svg" alt="">Product {i}</a>'
        for i in range(1, PRODUCTS + 1)
    )
    yield Body(host, "/", "text/html", _html("Shop", f"<h1>Welcome</h1>{products}"))
    yield Body(host, "/static/shop.css", "text/css", _STYLE.encode(), (ASSET_CACHE,))
    for i in range(1, PRODUCTS + 1):
        yield Body(host, f"/img/p{i}.svg", "image/svg+xml", _image(i), (ASSET_CACHE,))
    slow = (
        "<script>document.getElementById('slow').addEventListener('click',e=>{"
        f"const t=performance.now();while(performance.now()-t<{SLOW_CLICK_MS});"
        "e.target.textContent='Added';});</script>"
    )
    for i in range(1, PRODUCTS + 1):
        main = (
            f'<h1>Product {i}</h1><img src="/img/p{i}.svg" alt="" width="320" height="240">'
            f'<p><button id="slow">Add to cart</button></p>{slow}'
        )
        yield Body(host, f"/product/{i}", "text/html", _html(f"Product {i}", main))
    form = (
        '<h1>Log in</h1><form id="login" method="post" action="/login">'
        '<p><label>User <input id="user" name="user" autocomplete="off"></label></p>'
        '<p><label>Password <input id="password" name="password" type="password"></label></p>'
        '<p><button id="submit" type="submit">Log in</button></p></form>'
    )
    yield Body(host, "/login", "text/html", _html("Log in", form))
    answer = (("location", "/account"), ("set-cookie", f"{COOKIE}={USER}; Path=/; SameSite=Lax"))
    yield Body(host, "/login", "text/html", b"", answer, method="POST", status=303)
    who = (
        '<h1>Your account</h1><p id="who">Not signed in</p><script>'
        f"const m=document.cookie.match(/(?:^|; ){COOKIE}=([^;]*)/);"
        "if(m)document.getElementById('who').textContent='Signed in as '+m[1];</script>"
    )
    yield Body(host, "/account", "text/html", _html("Account", who))
