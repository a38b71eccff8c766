"""SIGINT and SIGTERM during a run: an interrupt is never lost, even where CPython drops it."""

from __future__ import annotations

import os
import signal

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
