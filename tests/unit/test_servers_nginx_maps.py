"""nginx's replay maps: exact, then closest query as regexes on ``METHOD host$uri?$args``
(longest prefix first), then by path."""

from __future__ import annotations

from pathlib import Path

from h2lab.pages.manifest import PageWriter
from h2lab.servers.nginx import render_maps


def test_closest_query_regexes_come_between_exact_and_path(tmp_path: Path) -> None:
    with PageWriter("maps", root=tmp_path / "pages") as w:
        w.add("https://a.test/", b"x", content_type="text/html")
        w.add("https://a.test/q?t=15&x=a", b"1", content_type="text/plain")
        w.add("https://a.test/q?t=19&x=b", b"2", content_type="text/plain")
        w.add("https://a.test/one?t=1", b"3", content_type="text/plain")
        page = w.commit("https://a.test/")
    maps = render_maps(page)
    query = maps.split("$h2lab_query {", 1)[1].split("}", 1)[0].split("\n")
    head = r"~^GET\\x20a\\x2Etest\\x2Fq\\x3F"
    assert [line.strip() for line in query if line.strip()] == [
        'default "";',
        f'"{head}t\\\\x3D19" 2;',
        f'"{head}" 1;',
    ]  # /one has one query: by path answers it
    assert maps.index("$h2lab_exact {") < maps.index("$h2lab_query {") < maps.index("$h2lab_path")
    assert '"" $h2lab_near;' in maps and '"" $h2lab_path;' in maps
