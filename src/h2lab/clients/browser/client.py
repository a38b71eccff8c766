"""What every browser client is, whatever its engine: a client (:class:`~h2lab.clients.
ClientAdapter`) of the protocols a browser loads pages over, keeping its browsers in a
:class:`~h2lab.clients.browser.pool.BrowserPool`. How a browser is launched, spoken to and
measured is each engine's own (:mod:`h2lab.clients.browser.chromium.client`,
:mod:`h2lab.clients.browser.firefox.client`)."""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from collections.abc import Callable
from typing import Generic, TypeVar

from h2lab.clients import ClientAdapter, LoadContext, LoadResult
from h2lab.clients.browser.pool import B, BrowserPool
from h2lab.clients.cpu import CpuGroup
from h2lab.errors import H2LabError, TrialFailed
from h2lab.pages import Page

OptionsT = TypeVar("OptionsT")


class BrowserClient(ClientAdapter, Generic[B, OptionsT]):
    """A browser engine's client, named ``name`` in the registry, told its ``options``."""

    name: str
    protocols: frozenset[str]

    def __init__(self, options: OptionsT, stop: Callable[[B], None]) -> None:
        self.options = options
        self._browsers: BrowserPool[B] = BrowserPool(
            self.name, stop, getattr(options, "cores", None)
        )
        """the browsers kept between trials; ``stop`` closes one the engine's way"""
        self.protocol_note = (
            f"{self.name.capitalize()} has no HTTP/1.1 pipelining and no cleartext HTTP/2: "
            "use h1c, h1s, h2s, h3"
        )

    def check_protocol(self, protocol: str) -> None:
        """TrialFailed unless the browser can load a page over ``protocol``."""
        if protocol not in self.protocols:
            raise TrialFailed(f"{self.name} cannot run {protocol} ({self.protocol_note})")

    def browser_pid(self, protocol: str) -> int | None:
        """The browser's main process that ran ``protocol`` last (tests kill it)."""
        return self._browsers.browser_pid(protocol)

    def cpu_group(self) -> CpuGroup | None:
        """The CPU quota's group the browsers run in (option ``cores``), once made."""
        return self._browsers.cpu_group

    def close(self) -> None:
        self._browsers.close()

    def load(self, page: Page, protocol: str, ctx: LoadContext) -> LoadResult:
        """The engine's load (:meth:`measured_load`); with option ``cores``, in the CPU quota:
        the quota calibrated just before (``cpu_calibration_ms``, ``cpu_calibration_cores``),
        the time it throttled the browser during the load (``cpu_throttled_ms``), and the
        browser's process tree checked to be in the quota's group when the load ends (a process
        started in the group stays there unless moved: one outside fails the trial)."""
        group = self._browsers.quota()
        if group is None:
            return self.measured_load(page, protocol, ctx)
        calibration = group.calibrate()
        before = group.throttled_ms()
        result = self.measured_load(page, protocol, ctx)
        after = group.throttled_ms()
        pid = self._browsers.browser_pid(protocol)
        outside = group.outside(pid) if pid else []
        if outside:
            raise TrialFailed(
                f"{self.name}: {len(outside)} process(es) of the browser outside its CPU quota "
                f"({', '.join(map(str, outside[:5]))})"
            )
        throttled = None if before is None or after is None else round(after - before, 3)
        return dataclasses.replace(
            result, cpu_calibration_ms=calibration.ms, cpu_calibration_cores=calibration.cores,
            cpu_throttled_ms=throttled,
        )  # fmt: skip

    @abstractmethod
    def measured_load(self, page: Page, protocol: str, ctx: LoadContext) -> LoadResult:
        """One page load, the engine's way (each engine's client defines it)."""

    def _failure(self, browser: B, protocol: str, exc: BaseException, died: bool) -> H2LabError:
        """Why a load failed: a crashed browser (with its exit signal: its connection closing
        said it ``died``, or it is no longer alive) or the protocol's line."""
        return self._browsers.failure(browser, protocol, exc, died or not browser.alive())
