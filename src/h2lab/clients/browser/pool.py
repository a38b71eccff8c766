"""The browsers a browser client keeps (Chromium's and Firefox's alike): one per launch key (a
flag set, a preference set), each run by a small wrapper script that enters the client
namespace and stays the browser's parent to write its exit status; kept between trials while
the client namespace and its link stay the same and the browser lives, started again
otherwise; stopped (and, if it will not go, killed) when the client closes. How a browser is
launched and spoken to is each client's own.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from h2lab import procs
from h2lab.clients import LoadContext
from h2lab.clients.browser.connection import Connection
from h2lab.clients.browser.keylog import KeylogSlices
from h2lab.clients.cpu import CpuGroup
from h2lab.errors import TrialFailed

STOP_WAIT_S = 5.0
"""How long a browser asked to close may take to exit before it is killed."""

QUIET_CPU_SHARE = 0.1
"""A browser is quiet when all its processes together used less than this share of one core
over :data:`QUIET_POLL_S`, twice in a row: nothing of it still starting (a new context's
window, a renderer) or going (the last trial's context) may share the CPU with the load
(what each costs a load: ``chromium.tab.wait_quiet``, ``firefox.client._wait_quiet``)."""
QUIET_POLL_S = 0.05
QUIET_TIMEOUT_S = 5.0
"""Longest wait for quiet; a browser still busy then is used anyway (a slow machine must not
stop the run)."""


def wait_quiet(cpu_seconds: Callable[[], float]) -> None:
    """Until a browser is quiet (:data:`QUIET_CPU_SHARE`): ``cpu_seconds`` reads the CPU time
    all its processes have used so far."""
    last: float | None = None
    quiet_polls = 0
    deadline = time.monotonic() + QUIET_TIMEOUT_S
    while time.monotonic() < deadline:
        t = time.monotonic()
        cpu_s = cpu_seconds()
        if last is not None:
            quiet_polls = quiet_polls + 1 if cpu_s - last < QUIET_CPU_SHARE * QUIET_POLL_S else 0
            if quiet_polls >= 2:
                return
        last = cpu_s
        time.sleep(max(0.0, QUIET_POLL_S - (time.monotonic() - t)))


class Browser(Protocol):
    """What the pool needs of a running browser."""

    proc: subprocess.Popen[bytes]
    netns: str
    generation: int
    status_file: Path
    pid_file: Path

    def alive(self) -> bool: ...


B = TypeVar("B", bound=Browser)
C = TypeVar("C", bound=Connection)


@dataclass
class Running(Generic[C]):
    """A browser that runs (a :class:`Browser`): its wrapper's process, its control connection
    (alive while it is open), the client namespace and its link's generation it runs in, its
    wrapper's pid and exit-status files. Each engine adds what it keeps of its own."""

    proc: subprocess.Popen[bytes]
    connection: C
    netns: str
    generation: int
    status_file: Path
    pid_file: Path
    keys: KeylogSlices | None = field(default=None, kw_only=True)
    """its SSLKEYLOGFILE, when it logs keys, in the slices of its trials"""

    def alive(self) -> bool:
        return not self.connection.closed.is_set()

    def take_keys(self, keylog: Path | None) -> None:
        """The keys the browser logged during the trial, into the trial's ``keylog`` (if it
        wants them). By the load's end the browser has written them: it logs a connection's
        secrets during its handshake."""
        if keylog is not None and self.keys is not None:
            self.keys.take(keylog)


@dataclass(frozen=True)
class LaunchFiles:
    """The files of the ``n``-th browser a client starts, in its work folder."""

    n: int
    wrapper: Path
    pid_file: Path
    status_file: Path
    log: Path
    profile: Path


def wrapper_script(
    command: str, pid_file: Path, status_file: Path, before_wait: str = "", before_start: str = ""
) -> str:
    """A shell script that runs ``before_start`` (the CPU quota's :meth:`~h2lab.clients.cpu.
    CpuGroup.enter_line`), then ``command "$@"`` (which enters the namespace and starts the
    browser) in the background, writes its pid, runs ``before_wait``, waits for it and
    writes its exit status (how a crashed trial names the signal that killed it)."""
    return (
        "#!/bin/sh\n"
        f"{before_start}"
        f'{command} "$@" &\n'
        f"echo $! > {pid_file}\n"
        f"{before_wait}"
        "wait $!\n"
        "status=$?\n"
        f"echo $status > {status_file}\n"
        "exit $status\n"
    )


def stop_process(browser: Browser) -> None:
    """Wait for a browser asked to close; kill it (and its wrapper) if it does not exit."""
    try:
        browser.proc.wait(timeout=STOP_WAIT_S)
    except subprocess.TimeoutExpired:
        pid = procs.read_int_file(browser.pid_file)
        if pid and procs.pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
        procs.stop(browser.proc, grace_s=2)


class BrowserPool(Generic[B]):
    """A client's browsers by launch key; ``stop`` closes one (its protocol's own way)."""

    def __init__(self, name: str, stop: Callable[[B], None], cores: float | None = None) -> None:
        self.name = name
        self._stop = stop
        self._browsers: dict[Hashable, B] = {}
        self._last: dict[str, B] = {}
        self._dir: Path | None = None
        self.cores = cores
        self.cpu_group: CpuGroup | None = None
        """the CPU quota every browser of the pool starts in (option ``cores``), once made"""

    def workdir(self) -> Path:
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix=f"h2lab-{self.name}-"))
        return self._dir

    def runtime_env(self) -> dict[str, str]:
        """The browsers' runtime folder (``XDG_RUNTIME_DIR``: GLib's dconf writes
        ``dconf/user`` there) is the pool's own folder, removed with it: nothing of a browser
        stays in the user's runtime folder (rootless mode) or elsewhere."""
        return {"XDG_RUNTIME_DIR": str(self.workdir())}

    def launch_files(self, command: str, before_wait: str = "") -> LaunchFiles:
        """The next browser's files, its wrapper script written (see :func:`wrapper_script`)."""
        work = self.workdir()
        n = len(list(work.glob("browser-*.sh")))
        files = LaunchFiles(
            n,
            wrapper=work / f"browser-{n}.sh",
            pid_file=work / f"browser-{n}.pid",
            status_file=work / f"browser-{n}.status",
            log=work / f"browser-{n}.log",
            profile=work / f"profile-{n}",
        )
        group = self.quota()
        enter = "" if group is None else group.enter_line()
        files.wrapper.write_text(
            wrapper_script(command, files.pid_file, files.status_file, before_wait, enter)
        )
        files.wrapper.chmod(0o755)
        return files

    def quota(self) -> CpuGroup | None:
        """The CPU quota's group (made on first use), or None without option ``cores``."""
        if self.cores is not None and self.cpu_group is None:
            try:
                self.cpu_group = CpuGroup(self.cores)
            except OSError as exc:
                raise TrialFailed(
                    f"{self.name}: no CPU quota of {self.cores:g} cores: {exc}"
                ) from None
        return self.cpu_group

    def get(self, key: Hashable, ctx: LoadContext, launch: Callable[[], B]) -> B:
        """The browser for ``key``: the kept one if it still fits ``ctx`` and lives, else a
        new one from ``launch``."""
        current = self._browsers.get(key)
        if current is not None:
            if (
                current.netns == ctx.netns
                and current.generation == ctx.link_generation
                and current.alive()
            ):
                return current
            self._close_key(key)
        browser = launch()
        self._browsers[key] = browser
        return browser

    def used(self, protocol: str, browser: B) -> None:
        """``browser`` runs ``protocol``'s trial now (for :meth:`browser_pid`)."""
        self._last[protocol] = browser

    def browser_pid(self, protocol: str) -> int | None:
        """The main process of the browser that ran ``protocol`` last (tests kill it)."""
        browser = self._last.get(protocol)
        return None if browser is None else procs.read_int_file(browser.pid_file)

    def close_browser(self, browser: B) -> None:
        for key, b in list(self._browsers.items()):
            if b is browser:
                self._close_key(key)

    def close(self) -> None:
        """Stop every browser, remove the CPU quota's group and the work folder."""
        for key in list(self._browsers):
            self._close_key(key)
        if self.cpu_group is not None:
            self.cpu_group.remove()
            self.cpu_group = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def failure(self, browser: B, protocol: str, exc: BaseException, died: bool) -> TrialFailed:
        """Why a load failed: a crashed browser, with what ended it (its wrapper writes the
        status right after it exits: waited for when the connection said it ``died``), or the
        protocol's first line. The browser is closed either way."""
        status = procs.wrapper_exit_status(browser.status_file, wait_s=5 if died else 0)
        self.close_browser(browser)
        if status is not None:
            return TrialFailed(f"{self.name} ({protocol}) crashed: {procs.describe_exit(status)}")
        text = str(exc).strip().splitlines()
        return TrialFailed(
            f"{self.name} ({protocol}) failed: {text[0] if text else type(exc).__name__}"
        )

    def _close_key(self, key: Hashable) -> None:
        browser = self._browsers.pop(key, None)
        if browser is not None:
            self._stop(browser)
