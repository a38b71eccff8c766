"""``synthetic:shop``: the journeys' shop (issue #57): its login POST is answered with a redirect
and a cookie, kept in the stored page (captures drop cookies), and its account page shows the
signed-in name from that cookie."""

from __future__ import annotations

from pathlib import Path

import pytest

from h2lab.errors import SpecError
from h2lab.pages import gen_shop, synthetic
from h2lab.pages.manifest import check_page_spec, find_page, load_page


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("H2LAB_CACHE", str(tmp_path / "cache"))


def test_the_shop_is_stored_with_its_login_answer_and_cookie() -> None:
    page = synthetic.materialize(synthetic.parse("synthetic:shop"))
    assert page.entry.path == "/" and page.entry.method == "GET"
    host = page.entry.origin
    post = page.match("POST", f"https://{host}/login")
    assert post is not None and post.status == 303
    assert dict(post.headers) == {
        "location": "/account",
        "set-cookie": "shop_user=alice; Path=/; SameSite=Lax",
    }
    form = page.match("GET", f"https://{host}/login")
    assert (
        form is not None and b'<form id="login" method="post"' in page.body_file(form).read_bytes()
    )
    account = page.match("GET", f"https://{host}/account")
    assert account is not None and b"Signed in as" in page.body_file(account).read_bytes()
    product = page.match("GET", f"https://{host}/product/1")
    assert product is not None
    assert f"<{gen_shop.SLOW_CLICK_MS});".encode() in page.body_file(product).read_bytes()
    folder = find_page("synthetic:shop")
    assert folder is not None
    again = load_page(folder)  # a stored page may hold Set-Cookie
    assert again.digest == page.digest


def test_the_shop_takes_no_keys() -> None:
    check_page_spec("synthetic:shop")
    with pytest.raises(SpecError, match="synthetic:shop takes no keys"):
        check_page_spec("synthetic:shop:n=2")
