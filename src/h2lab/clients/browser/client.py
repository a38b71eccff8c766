"""What every browser client is, whatever its engine: a client (:class:`~h2lab.clients.
ClientAdapter`) of the protocols a browser loads pages over, keeping its browsers in a
:class:`~h2lab.clients.browser.pool.BrowserPool`. How a browser is launched, spoken to and
measured is each engine's own (:mod:`h2lab.clients.browser.chromium.client`,
:mod:`h2lab.clients.browser.firefox.client`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from h2lab.clients import ClientAdapter
from h2lab.clients.browser.pool import B, BrowserPool
from h2lab.errors import H2LabError, TrialFailed

OptionsT = TypeVar("OptionsT")


class BrowserClient(ClientAdapter, Generic[B, OptionsT]):
    """A browser engine's client, named ``name`` in the registry, told its ``options``."""

    name: str
    protocols: frozenset[str]

    def __init__(self, options: OptionsT, stop: Callable[[B], None]) -> None:
        self.options = options
        self._browsers: BrowserPool[B] = BrowserPool(self.name, stop)
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

    def close(self) -> None:
        self._browsers.close()

    def _failure(self, browser: B, protocol: str, exc: BaseException, died: bool) -> H2LabError:
        """Why a load failed: a crashed browser (with its exit signal: its connection closing
        said it ``died``, or it is no longer alive) or the protocol's line."""
        return self._browsers.failure(browser, protocol, exc, died or not browser.alive())
