"""SIGINT and SIGTERM during a run: an interrupt is never lost, even where CPython drops it."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from h2lab.runner.run import signals_as_interrupt


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_raises_keyboard_interrupt(sig: signal.Signals) -> None:
    with signals_as_interrupt(), pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), sig)
        signal.sigtimedwait([], 0)  # give the handler a bytecode boundary to run at


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_swallowed_interrupt_is_raised_again_by_the_check(sig: signal.Signals) -> None:
    # what an at-fork hook does to the handler's exception: it is printed and ignored
    with signals_as_interrupt() as interrupted:
        try:
            os.kill(os.getpid(), sig)
            signal.sigtimedwait([], 0)
        except KeyboardInterrupt:
            pass
        with pytest.raises(KeyboardInterrupt):
            interrupted()


def test_no_signal_no_interrupt_and_handlers_are_restored() -> None:
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with signals_as_interrupt() as interrupted:
        interrupted()
        assert signal.getsignal(signal.SIGTERM) is not before[0]
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


_SIGNAL_IN_FORK: list[signal.Signals] = []
"""The signal the at-fork hook below sends itself (none: the hook does nothing)."""


def _signal_in_an_at_fork_hook() -> None:
    if _SIGNAL_IN_FORK:
        os.kill(os.getpid(), _SIGNAL_IN_FORK.pop())
        sum(range(100))  # bytecodes: the handler runs here, and its exception is dropped


os.register_at_fork(after_in_parent=_signal_in_an_at_fork_hook)


def _work_after_a_signal_dropped_in_a_fork(sig: signal.Signals) -> float:
    """Fork (the at-fork hook sends ``sig``, whose exception is dropped), then 5 s of work
    unless interrupted; the seconds from the fork to the KeyboardInterrupt. The redelivered
    signal may land anywhere after the fork (on a machine busy with other work the fork itself
    took longer than its 50 ms), so the child is reaped whatever was interrupted."""
    child = None
    t0 = time.monotonic()
    try:
        with signals_as_interrupt(), pytest.raises(KeyboardInterrupt):
            _SIGNAL_IN_FORK.append(sig)
            child = os.fork()  # the hooks run
            if child == 0:
                os._exit(0)
            assert not _SIGNAL_IN_FORK
            while time.monotonic() - t0 < 5:  # 5 s of work, unless interrupted
                time.sleep(0.01)
        return time.monotonic() - t0
    finally:
        _reap(child)


def _reap(child: int | None) -> None:
    """Wait for the forked child (any child, when the interrupt came before its pid did)."""
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(child or -1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid:
            return
        time.sleep(0.01)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_dropped_by_an_at_fork_hook_is_delivered_again(sig: signal.Signals) -> None:
    # the signal arrives while subprocess forks: CPython drops the handler's exception, and
    # without a second delivery the work goes on to its end (a trial finished for nobody)
    assert _work_after_a_signal_dropped_in_a_fork(sig) < 1  # delivered again, 0.05 s later


class _SignalledWhileStarting(threading.Timer):
    """A timer whose start is interrupted by a signal, as the redelivery's was in CI: the
    handler then runs inside ``sys.unraisablehook``, where its exception is dropped too."""

    pending: signal.Signals | None = None

    def start(self) -> None:
        if _SignalledWhileStarting.pending is not None:
            os.kill(os.getpid(), _SignalledWhileStarting.pending)
            _SignalledWhileStarting.pending = None
            sum(range(100))  # the handler runs here, inside the hook
        super().start()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_inside_the_redelivery_hook_is_still_delivered(
    sig: signal.Signals, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(threading, "Timer", _SignalledWhileStarting)
    _SignalledWhileStarting.pending = sig
    assert _work_after_a_signal_dropped_in_a_fork(sig) < 1  # delivered again, 0.05 s later
    assert _SignalledWhileStarting.pending is None  # the hook did start a timer
