"""Journeys in Chromium and Firefox (issue #57): the shop's journey
(experiments/journeys/shop.toml: land, a product, a 200 ms click, the login form, a POST
answered 303 with a cookie, the account page) over h1s, h2s and h3 from the origin. Every trial
is ok; each step is in ``steps.json``; the POST was answered from the page and its cookie
carried (the account page shows the name); the click's latency is the Event Timing API's (at
least its handler's 200 ms); over h2s and h3 no step after the first opens a connection to the
shop, over h1s the counts are printed; each step is a row of the store's ``steps``, and
``journey_ms`` their sum with the first step's load."""

from __future__ import annotations

import json
from pathlib import Path

from h2lab.clients.browser.journey import STEPS_FILE
from h2lab.net.lab import Lab
from h2lab.pages import resolve_page
from h2lab.record import record_page
from h2lab.report import write_report
from h2lab.runner.levels import validate_factors
from h2lab.runner.matrix import expand
from h2lab.runner.run import run_trials
from h2lab.servers import ServeContext
from h2lab.servers import get as get_server
from h2lab.spec.experiment import Experiment
from h2lab.spec.journey import load_journey
from h2lab.spec.network import parse_network
from h2lab.spec.tcp import TcpSettings
from h2lab.store import Store
from h2lab.tls import LocalCA
from tests.integration.conftest import ROOT

SHOP = ROOT / "experiments" / "journeys" / "shop.toml"
NAMES = ["land", "product", "add to cart", "login form", "user", "password", "log in", "account"]
HOST = "o1.h2lab.test"


def test_the_shop_journey_in_both_browsers(tmp_path: Path) -> None:
    factors = {
        "protocol": ["h1s", "h2s", "h3"], "network": ["rtt=20ms,rate=20Mbps"],
        "page": [f"journey:{SHOP}"], "server": ["origin"], "client": ["chromium", "firefox"],
    }  # fmt: skip
    exp = Experiment(name="journey", factors=validate_factors("test", factors), seed=57)
    store = Store(tmp_path)
    try:
        run_trials(expand(exp), store, timeout_s=120)
        trials, all_steps = store.trials(), store.all_steps()
        assert [t.error for t in trials if t.status != "ok"] == [] and len(trials) == 6
        for t in trials:
            folder = store.artifacts_dir(t.trial_key, t.attempt)
            steps = json.loads((folder / STEPS_FILE).read_text())["steps"]
            said = [(s["name"], s.get("duration_ms"), s.get("new_connections"),
                     s.get("interaction_ms")) for s in steps]  # fmt: skip
            print(t.cell["client"], t.protocol, said)
            assert [s["name"] for s in steps] == NAMES
            login = steps[NAMES.index("log in")]
            assert login["url"].endswith("/account"), login
            assert "Signed in as alice" in login["shown"]  # the cookie the 303 set, carried
            assert steps[NAMES.index("product")]["url"].endswith("/product/1")
            cart = steps[NAMES.index("add to cart")]
            click = cart["interaction_ms"]  # the handler's 200 ms, and the paint after it
            assert click is not None and 200 <= click <= cart["duration_ms"], cart
            assert steps[0]["timing"]["load_ms"] is not None
            if t.protocol != "h1s":  # one connection to the shop, reused by every step
                assert all(s["new_connections"].get(HOST, 0) == 0 for s in steps[1:]), steps
            assert t.id is not None
            rows = all_steps.get(t.id, [])  # the steps after the first, stored with the trial
            assert [r.name for r in rows] == NAMES[1:]
            assert [r.duration_ms for r in rows] == [s["duration_ms"] for s in steps[1:]]
            assert rows[NAMES.index("log in") - 1].load_ms is not None
            assert t.plt_ms is not None and t.journey_ms is not None
            assert t.journey_ms == round(t.plt_ms + sum(r.duration_ms for r in rows), 1)
            # every resource row names the step that began it: the product page's document
            # is the product step's, the shop's first document the measured load's
            began = {(r["step"], str(r["url"]).rsplit("/", 1)[-1]) for r in store.resources(t.id)}
            assert {step for step, _ in began} <= set(range(len(NAMES))), began
            assert (NAMES.index("product"), "1") in began and (0, "") in began, began
    finally:
        store.close()
    report = write_report(tmp_path).read_text()
    part = report.split('<section id="journeys">', 1)[1].split("</section>", 1)[0]
    assert "2. add to cart" in part and "whole journey (journey_ms)" in part
    assert "s = h2s/h1s [CI]" in part and "s = h3/h2s [CI]" in part
    falls = report.split('<section id="waterfalls">', 1)[1].split("</section>", 1)[0]
    assert "step 0: the measured load" in falls and "step 1: product" in falls


def test_a_journeys_repeat_view_starts_in_0rtt(tmp_path: Path) -> None:
    """The repeat view takes the whole journey first, then again measured: over h3 from a
    server that accepts early data, its first step's request goes in 0-RTT packets."""
    factors = {
        "protocol": ["h3"], "network": ["rtt=40ms"], "page": [f"journey:{SHOP}"],
        "server": ["origin:early_data=1"], "client": ["chromium"], "view": ["repeat"],
    }  # fmt: skip
    exp = Experiment(name="journey-repeat", factors=validate_factors("test", factors), seed=5)
    store = Store(tmp_path)
    try:
        run_trials(expand(exp), store, timeout_s=120)
        (t,) = store.trials()
        assert t.status == "ok", t.error
        print(f"0-RTT packets {t.early_data_packets}, journey {t.journey_ms} ms")
        assert (t.early_data_packets or 0) > 0
        assert t.id is not None and [s.name for s in store.all_steps().get(t.id, [])] == NAMES[1:]
    finally:
        store.close()


def test_a_journey_recorded_from_a_lab_server_replays_in_both_browsers(tmp_path: Path) -> None:
    """``h2lab record --journey``: the shop served by the origin, its journey taken in the
    recording browser; the recording keeps the POST's 303 and its cookie, and its journey
    replays in both browsers over h1s, h2s and h3 with the cookie carried."""
    shop = resolve_page("synthetic:shop")
    with Lab(shop.origins) as lab:
        ctx = ServeContext(
            lab.servers_ns, lab.origin_ips, lab.state_dir / "srv", lab.state_dir / "tls"
        )
        with (
            get_server("origin").serve(shop, ctx),
            lab.link(parse_network("rtt=2ms"), 1, TcpSettings()) as link,
        ):
            result = record_page(
                f"https://{HOST}/", name="recorded-shop", timeout_s=60, netns=link.client_ns,
                hosts=dict(lab.origin_ips), spki=LocalCA(ctx.tls_dir).spki_sha256(),
                root=tmp_path / "pages", journey=load_journey(SHOP),
            )  # fmt: skip
    page = result.page
    post = page.match("POST", f"https://{HOST}/login")
    assert post is not None and post.status == 303, [(r.method, r.path) for r in page.resources]
    assert dict(post.headers)["set-cookie"].startswith("shop_user=alice")
    assert {r.path for r in page.resources} >= {"/", "/product/1", "/login", "/account"}
    replay = tmp_path / "replay.toml"
    folder = tmp_path / "pages" / page.digest
    replay.write_text(SHOP.read_text().replace('"synthetic:shop"', f'"{folder}"'))
    factors = {
        "protocol": ["h1s", "h2s", "h3"], "network": ["rtt=20ms,rate=20Mbps"],
        "page": [f"journey:{replay}"], "server": ["origin"], "client": ["chromium", "firefox"],
    }  # fmt: skip
    exp = Experiment(name="replayed", factors=validate_factors("test", factors), seed=9)
    store = Store(tmp_path / "out")
    try:
        run_trials(expand(exp), store, timeout_s=120)
        trials, all_steps = store.trials(), store.all_steps()
        assert [t.error for t in trials if t.status != "ok"] == [] and len(trials) == 6
        for t in trials:
            assert t.id is not None
            rows = all_steps.get(t.id, [])
            login = rows[NAMES.index("log in") - 1]
            assert login.url is not None and login.url.endswith("/account")
            shown = json.loads((store.artifacts_dir(t.trial_key, t.attempt) / STEPS_FILE)
                               .read_text())["steps"][NAMES.index("log in")]["shown"]  # fmt: skip
            assert "Signed in as alice" in shown, (t.cell["client"], t.protocol, shown)
    finally:
        store.close()


def test_a_step_that_fails_fails_the_trial_naming_it(tmp_path: Path) -> None:
    """A click on a selector the page lacks: the trial fails naming the step, and none of the
    journey's steps is stored for it (nothing half-stored)."""
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'page = "synthetic:shop"\n[[step]]\nname = "land"\nnavigate = "/"\n'
        '[[step]]\nname = "nowhere"\nclick = "#no-such-button"\n'
    )
    factors = {
        "protocol": ["h2s"], "network": ["rtt=10ms"], "page": [f"journey:{bad}"],
        "server": ["origin"], "client": ["chromium"],
    }  # fmt: skip
    exp = Experiment(name="bad-step", factors=validate_factors("test", factors), seed=2)
    store = Store(tmp_path / "out")
    try:
        run_trials(expand(exp), store, timeout_s=60)
        (t,) = store.trials()
        assert t.status == "failed"
        assert "journey step 1 (nowhere): '#no-such-button' matches nothing" in (t.error or "")
        assert t.id is not None and store.all_steps().get(t.id, []) == [] and t.journey_ms is None
    finally:
        store.close()
