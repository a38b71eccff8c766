"""h2lab.pages.request_body: a recorded POST is answered by its body (the same body, else the
form whose fields agree most, volatile fields left out, else the first), kept as digests only;
the origin holds the same rule (origin/requestbody_test.go: the same figures)."""

from __future__ import annotations

from pathlib import Path

from h2lab.pages.manifest import PageWriter, find_page, load_page
from h2lab.pages.request_body import RequestBody, best, fingerprint

FORM = "application/x-www-form-urlencoded"


def test_a_form_is_kept_as_digests_the_origin_computes_too() -> None:
    got = fingerprint(b"user=alice&password=s%20ecret&csrf=abc123", f"{FORM}; charset=UTF-8")
    assert got == RequestBody(
        "e6041cae76d168d14b1a0a109ae5675006f2d2f63549035ce98ad3a91a7f6231",
        (("user", "2bd806c97f0e00af"), ("password", "5dab2cfbccd8e2e0"),
         ("csrf", "6ca13d52ca70c883")),
    )  # fmt: skip
    assert b"secret" not in repr(got).encode()  # no value is kept
    assert fingerprint(b'{"a": 1}', "application/json").fields == ()


def test_the_same_body_else_the_most_fields_else_the_first() -> None:
    alice = fingerprint(b"user=alice&csrf=one", FORM)
    bob = fingerprint(b"user=bob&csrf=two", FORM)
    assert best([alice, bob], bob) == 1
    assert best([alice, bob], fingerprint(b"user=bob&csrf=three", FORM)) == 1  # csrf ignored
    assert best([None, alice, bob], fingerprint(b"user=eve", FORM)) == 0


def test_a_page_keeps_two_posts_of_one_url_and_answers_each_by_its_body(tmp_path: Path) -> None:
    url = "https://shop.test/login"
    alice = fingerprint(b"user=alice&csrf=1", FORM)
    bob = fingerprint(b"user=bob&csrf=2", FORM)
    with PageWriter("posts", root=tmp_path) as w:
        w.add("https://shop.test/", b"<html></html>", content_type="text/html")
        for who, body in (("alice", alice), ("bob", bob)):
            w.add(url, who.encode(), content_type="text/plain", method="POST", request=body)
        page = w.commit()
    folder = find_page("posts", tmp_path)
    assert folder is not None
    again = load_page(folder)
    assert again.digest == page.digest and len(again.resources) == 3
    for who in ("alice", "bob"):
        asked = fingerprint(f"user={who}&csrf=9".encode(), FORM)
        found = again.match("POST", url, asked)
        assert found is not None and again.body_file(found).read_bytes() == who.encode()
    first = again.match("POST", url)  # no body given: the first recorded
    assert first is not None and again.body_file(first).read_bytes() == b"alice"
