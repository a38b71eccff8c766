"""jetty (Jetty 12.0, HTTP/3 over quiche): its jetty.json (every origin with its address and
certificate, the lab's ports, the trial's TLS version and resumption, the resources with the Go
origin's lookup keys), the JVM's command line, the pinned pom, and the registry entry. The
program itself: tests/integration/test_jetty.py."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from h2lab.pages import Page
from h2lab.pages.manifest import PageWriter
from h2lab.servers import IDLE_TIMEOUT_S, ServeContext, jetty
from h2lab.servers import get as get_server
from h2lab.spec.protocols import H3, TCP_PROTOCOLS
from h2lab.tls import LocalCA

HOSTS = ("a.example.org", "b.example.org")
IPS = {HOSTS[0]: "10.2.0.1", HOSTS[1]: "10.2.0.2"}


@pytest.fixture
def page(tmp_path: Path) -> Page:
    with PageWriter("jetty-test", root=tmp_path / "pages") as w:
        w.add(f"https://{HOSTS[0]}/", b"<html></html>", content_type="text/html",
              headers=[("link", "<a{b}>; rel=x")])  # fmt: skip
        w.add(f"https://{HOSTS[0]}/q?a=1", b"1", content_type="text/plain")
        w.add(f"https://{HOSTS[0]}/old", None, content_type="text/html", status=301,
              headers=[("location", f"https://{HOSTS[0]}/")])  # fmt: skip
        w.add(f"https://{HOSTS[1]}/a%20b.css", b"a{}", content_type="text/css")
        return w.commit()


def _config(page: Page, tmp_path: Path, tls: str = "1.3", resumption: bool = False) -> Any:
    ctx = ServeContext("h2lab-x-servers", IPS, tmp_path / "srv", tmp_path / "tls", tls, resumption)
    return jetty.render_config(page, ctx, LocalCA(ctx.tls_dir))


def test_every_origin_listens_on_its_address_with_its_certificate(
    page: Page, tmp_path: Path
) -> None:
    conf = _config(page, tmp_path)
    assert [(o["host"], o["ip"]) for o in conf["origins"]] == list(IPS.items())
    for o in conf["origins"]:
        assert Path(o["cert"]).read_text().count("BEGIN CERTIFICATE") == 2  # leaf, then CA
        assert "BEGIN PRIVATE KEY" in Path(o["key"]).read_text()  # PKCS#8, as Main reads it
    assert conf["ports"] == {"h1c": 80, "tls": 443, "h2c": 8080, "h3": 443}
    assert conf["idle_timeout_s"] == IDLE_TIMEOUT_S
    assert conf["unserved_log"] == str(tmp_path / "srv" / "unserved.log")


def test_tls_version_and_resumption_come_from_the_trial(page: Page, tmp_path: Path) -> None:
    first = _config(page, tmp_path)
    assert (first["tls_version"], first["resumption"]) == ("1.3", False)
    repeat = _config(page, tmp_path, "1.2", resumption=True)
    assert (repeat["tls_version"], repeat["resumption"]) == ("1.2", True)


def test_resources_carry_the_origins_lookup_keys(page: Page, tmp_path: Path) -> None:
    res = _config(page, tmp_path)["resources"]
    assert [(r["method"], r["host"], r["target"], r["path"], r["query"]) for r in res] == [
        ("GET", HOSTS[0], "/", "/", ""),
        ("GET", HOSTS[0], "/q?a=1", "/q", "a=1"),
        ("GET", HOSTS[0], "/old", "/old", ""),
        ("GET", HOSTS[1], "/a%20b.css", "/a b.css", ""),  # the path decoded, the target not
    ]
    entry, _, old, css = res
    assert entry["headers"] == [["link", "<a{b}>; rel=x"]]  # as recorded: no template language
    assert Path(entry["body"]).read_bytes() == b"<html></html>"
    assert (old["status"], old["body"]) == (301, None)
    assert old["headers"] == [["location", f"https://{HOSTS[0]}/"]]
    assert css["content_type"] == "text/css"


def test_the_jvm_loads_libquiche_from_the_jars_folder(tmp_path: Path) -> None:
    jar = tmp_path / "jetty-abc" / jetty.JAR
    argv = jetty.serve_argv(jar, tmp_path / "jetty.json", tmp_path / "srv")
    assert f"-Djna.library.path={jar.parent}" in argv
    assert f"-Djna.tmpdir={tmp_path / 'srv' / 'jna'}" in argv
    assert argv[-4:] == ["-jar", str(jar), "-config", str(tmp_path / "jetty.json")]


def test_the_pom_pins_every_dependency_and_plugin() -> None:
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    root = ET.parse(jetty.SOURCE_DIR / "pom.xml").getroot()
    props = {p.tag.split("}")[1]: p.text for p in root.find("m:properties", ns) or []}
    assert props["jetty.version"] == "12.0.36" and props["quiche.version"] == "0.24.5"
    for el in root.iter("{http://maven.apache.org/POM/4.0.0}dependency"):
        version = el.find("m:version", ns)
        assert version is not None and re.fullmatch(r"\$\{[a-z.]+\}|[0-9.]+", version.text or "")
    for el in root.iter("{http://maven.apache.org/POM/4.0.0}plugin"):
        version = el.find("m:version", ns)
        assert version is not None and re.fullmatch(r"[0-9.]+", version.text or "")


def test_registered_with_every_protocol_and_no_options() -> None:
    adapter = get_server("jetty")
    assert adapter.protocols == TCP_PROTOCOLS | {H3}
    with pytest.raises(Exception, match=r"no option .x. \(jetty takes: none\)"):
        get_server("jetty:x=1")


def test_build_goes_to_the_cache_by_source_hash(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("H2LAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("H2LAB_SYSTEM_CACHE", str(tmp_path / "system"))
    path = jetty.jar_path()
    assert path.parent.parent == tmp_path / "cache"
    assert re.fullmatch(r"jetty-[0-9a-f]{12}", path.parent.name) and path.name == jetty.JAR
