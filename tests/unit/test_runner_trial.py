"""h2lab.runner.trial.run_one without root: one trial against a fake lab, link, server, client,
clock and CPU reader; the record's fields come from them (duration from the clock, CPU figures
from the reader, the link's counters, the outcome)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from h2lab.artifacts import DNS_LOOKUPS
from h2lab.clients import ClientAdapter, LoadContext
from h2lab.errors import H2LabError
from h2lab.metrics.counters import CpuTimes
from h2lab.net.dns import DNS_FOLDER, DNS_LOG
from h2lab.pages import Page
from h2lab.results import LoadResult, ResourceTiming
from h2lab.runner.matrix import TrialSpec, expand
from h2lab.runner.trial import Counters, TrialLink, run_one
from h2lab.servers import Serving
from h2lab.spec.experiment import Experiment, Factors
from h2lab.spec.network import NetworkProfile, parse_network
from h2lab.spec.tcp import TcpSettings
from h2lab.store.sqlite import row_of

RESOURCE = ResourceTiming(
    url="https://o1.h2lab.test/", origin="o1.h2lab.test", start_ms=0.0, ttfb_ms=40.0,
    end_ms=800.0, bytes=1000, protocol="h2", connection="1",
)  # fmt: skip
START = dt.datetime(2026, 11, 1, 12, 0, 0, 250_000, tzinfo=dt.UTC)


@dataclass(frozen=True)
class FakePage:
    digest: str = "feedfacefeedface"
    origins: tuple[str, ...] = ("o1.h2lab.test",)


@dataclass
class FakeLab:
    state_dir: Path
    servers_ns: str = "lab-servers"
    origin_ips: dict[str, str] = field(default_factory=lambda: {"o1.h2lab.test": "10.0.0.1"})
    resets: int = 0
    https: list[frozenset[str]] = field(default_factory=list)

    def reset_client_connections(self) -> None:
        self.resets += 1

    def publish_https(self, hosts: frozenset[str]) -> None:
        self.https.append(hosts)


@dataclass
class FakeLink:
    client_ns: str = "lab-client"

    def emulator_drops(self) -> int | None:
        return 3


@dataclass
class FakeLinks:
    link: FakeLink = field(default_factory=FakeLink)
    generation: int = 7
    asked: list[tuple[NetworkProfile, int, TcpSettings]] = field(default_factory=list)
    closed: int = 0
    diagnosed: list[Path] = field(default_factory=list)

    def get(self, profile: NetworkProfile, seed: int, tcp: TcpSettings) -> FakeLink:
        self.asked.append((profile, seed, tcp))
        return self.link

    def keep_diagnostics(self, artifacts: Path) -> None:
        self.diagnosed.append(artifacts)

    def close(self) -> None:
        self.closed += 1


@dataclass
class FakeServer:
    error: str | None = None
    serving: Serving | None = None


class DeadServing(Serving):
    """A server that died under the trial, with no logs to keep."""

    def exited(self) -> str | None:
        return "nginx exited with signal SIGSEGV"


class FakeClient(ClientAdapter):
    name = "fake"
    protocols = frozenset({"h2s"})

    def __init__(self, fail: Exception | None = None) -> None:
        self.fail = fail
        self.calls: list[str] = []
        self.ctx: LoadContext | None = None

    def version(self) -> str:
        return "1.0"

    def prepare(self, protocol: str, ctx: LoadContext) -> None:
        self.calls.append(f"prepare {protocol}")

    def load(self, page: Page, protocol: str, ctx: LoadContext) -> LoadResult:
        self.calls.append(f"load {protocol}")
        self.ctx = ctx
        if self.fail is not None:
            raise self.fail
        return LoadResult(
            pdt_ms=812.5,
            request_header_bytes=400,
            resources=(RESOURCE,),
        )

    def close(self) -> None:
        pass


class FakeClock:
    """The trial starts at START on the monotonic clock's 100 s and ends 2.5 s later."""

    def __init__(self) -> None:
        self._monotonic: Iterator[float] = iter([100.0, 102.5])

    def now(self) -> dt.datetime:
        return START

    def monotonic_s(self) -> float:
        return next(self._monotonic)


def fake_cpu() -> Iterator[CpuTimes]:
    """Before: 100 busy of 1000 ticks; after: 400 busy of 2000 (30% busy between)."""
    yield CpuTimes(busy_ticks=100, total_ticks=1000)
    yield CpuTimes(busy_ticks=400, total_ticks=2000)


def fake_counters() -> Iterator[Counters]:
    yield Counters(bytes_up=1000, bytes_down=5000, active_opens=2, retransmits=1, emulator_drops=3)
    yield Counters(
        bytes_up=3000, bytes_down=125_000, active_opens=3, retransmits=4, emulator_drops=5
    )


def trial() -> TrialSpec:
    exp = Experiment(
        name="one",
        factors=Factors.of(
            protocol=("h2s",), page=("synthetic:n=1",), network=(parse_network("cable"),)
        ),
        seed=3,
    )
    return expand(exp)[0]


def run(
    tmp_path: Path, client: FakeClient, server: FakeServer | None = None
) -> tuple[FakeLab, FakeLinks, dict[str, object], tuple[ResourceTiming, ...]]:
    lab, links = FakeLab(tmp_path / "lab"), FakeLinks()
    cpu, counters = fake_cpu(), fake_counters()

    def read_counters(link: TrialLink, servers_ns: str) -> Counters:
        assert (link.client_ns, servers_ns) == ("lab-client", "lab-servers")
        return next(counters)

    record, resources, _ = run_one(
        lab, links, client, FakePage(), trial(), 2, tmp_path / "artifacts",  # type: ignore[arg-type]
        30.0, {"h2lab": "x", "machine": "m1"}, server or FakeServer(),
        clock=FakeClock(), cpu=lambda: next(cpu), counters=read_counters,
    )  # fmt: skip
    return lab, links, row_of(record), resources


def test_an_ok_trial_is_timed_by_its_clock_and_measured_by_its_readers(tmp_path: Path) -> None:
    client = FakeClient()
    lab, links, row, resources = run(tmp_path, client)
    assert client.calls == ["prepare h2s", "load h2s"]  # prepared before the counters
    assert lab.resets == 1 and links.closed == 0
    assert lab.https == [frozenset()]  # no HTTPS record outside an https-rr cell
    t = trial()
    assert links.asked == [(t.network, t.seed, t.tcp)]
    assert client.ctx is not None
    assert (client.ctx.netns, client.ctx.link_generation) == ("lab-client", 7)
    assert client.ctx.hosts == {"o1.h2lab.test": "10.0.0.1"}
    assert row["status"] == "ok" and row["error"] is None
    assert row["started_at"] == "2026-11-01T12:00:00.250+00:00"
    assert row["duration_s"] == 2.5
    assert (row["cpu_busy_pct"], row["cpu_saturated"]) == (30.0, 0)
    assert row["pdt_ms"] == 812.5
    assert (row["bytes_up"], row["bytes_down"]) == (2000, 120_000)
    assert (row["tcp_connections"], row["retransmits"], row["emulator_drops"]) == (1, 3, 2)
    assert row["request_header_bytes"] == 400
    assert (row["attempt"], row["trial_key"], row["machine"]) == (2, t.key, "m1")
    assert json.loads(str(row["versions_json"])) == {"h2lab": "x", "machine": "m1"}
    assert resources == (RESOURCE,)
    assert (row["dns_lookups"], row["dns_nxdomain"]) == (None, None)  # this lab ran no resolver


LOGGED = "[1795911530] unbound[1:0] info: 10.1.1.1 {} A IN {} 0.000000 1 40\n"


class LookingClient(FakeClient):
    """Its load makes the lab's resolver answer three names, two of them NXDOMAIN."""

    def __init__(self, log: Path) -> None:
        super().__init__()
        self.log = log

    def load(self, page: Page, protocol: str, ctx: LoadContext) -> LoadResult:
        with self.log.open("a") as f:
            f.write(LOGGED.format("o1.h2lab.test.", "NOERROR"))
            f.write(LOGGED.format("a.missing.example.", "NXDOMAIN"))
            f.write(LOGGED.format("b.missing.example.", "NXDOMAIN"))
        return super().load(page, protocol, ctx)


def test_a_trial_counts_the_lookups_its_resolver_answered_during_it(tmp_path: Path) -> None:
    log = tmp_path / "lab" / DNS_FOLDER / DNS_LOG
    log.parent.mkdir(parents=True)
    log.write_text(LOGGED.format("earlier.example.", "NXDOMAIN") * 5)  # an earlier trial's
    _, _, row, _ = run(tmp_path, LookingClient(log))
    assert (row["dns_lookups"], row["dns_nxdomain"]) == (3, 2)
    kept = (tmp_path / "artifacts" / DNS_LOOKUPS).read_text().splitlines()
    assert kept == [
        "at_s\tname\ttype\tanswer",
        "1795911530\to1.h2lab.test.\tA\tNOERROR",
        "1795911530\ta.missing.example.\tA\tNXDOMAIN",
        "1795911530\tb.missing.example.\tA\tNXDOMAIN",
    ]


def test_a_failed_load_closes_its_link_and_is_still_timed(tmp_path: Path) -> None:
    _, links, row, resources = run(tmp_path, FakeClient(fail=H2LabError("h2load: timed out")))
    assert (row["status"], row["error"]) == ("failed", "h2load: timed out")
    assert (row["duration_s"], row["cpu_busy_pct"]) == (2.5, 30.0)
    assert row["pdt_ms"] is None and row["bytes_down"] is None
    assert links.closed == 1 and links.diagnosed == [tmp_path / "artifacts"]
    assert resources == ()


def test_an_unexpected_error_keeps_its_traceback(tmp_path: Path) -> None:
    _, _, row, _ = run(tmp_path, FakeClient(fail=ValueError("bad number")))
    assert (row["status"], row["error"]) == ("failed", "ValueError: bad number")
    assert "ValueError: bad number" in (tmp_path / "artifacts" / "traceback.txt").read_text()


def test_a_server_that_died_is_named_first(tmp_path: Path) -> None:
    server = FakeServer(serving=DeadServing())
    _, _, row, _ = run(tmp_path, FakeClient(fail=H2LabError("connection reset")), server)
    assert row["error"] == (
        "server nginx died during the trial (nginx exited with signal SIGSEGV); "
        "the client: connection reset"
    )


def test_a_server_that_did_not_start_fails_the_trial_before_the_client(tmp_path: Path) -> None:
    client = FakeClient()
    server = FakeServer(error="server nginx did not start: port in use")
    _, links, row, _ = run(tmp_path, client, server)
    assert (row["status"], row["error"]) == ("failed", "server nginx did not start: port in use")
    assert client.calls == [] and links.asked == []
    assert row["duration_s"] == 2.5
