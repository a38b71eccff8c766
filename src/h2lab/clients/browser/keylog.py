"""A kept browser's TLS keys, trial by trial.

A browser writes the keys of every TLS connection it opens to the file named by
``SSLKEYLOGFILE`` when it starts (Chromium's BoringSSL, Firefox's NSS: one line per secret,
``LABEL <client random> <secret>``, written as the handshake makes it). The browser is kept
between trials, so its file holds every trial's keys since it started; a trial with a packet
capture needs the keys of its own connections beside its pcap
(:attr:`h2lab.clients.LoadContext.keylog`). :class:`KeylogSlices` hands each trial the lines
added since the previous trial took its own: a TLS connection of one trial is never used by
another (each trial has its own browser context, with its own sockets and TLS sessions).
"""

from __future__ import annotations

from pathlib import Path


class KeylogSlices:
    """The SSLKEYLOGFILE at ``path`` (which a browser appends to), taken in slices."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._taken_bytes = 0

    def take(self, into: Path) -> int:
        """Append the whole lines written since the last take to ``into`` (created only when
        there is one); how many. A line still being written waits for the next take."""
        try:
            with self.path.open("rb") as f:
                f.seek(self._taken_bytes)
                data = f.read()
        except FileNotFoundError:
            return 0
        whole = data[: data.rfind(b"\n") + 1]
        if not whole:
            return 0
        into.parent.mkdir(parents=True, exist_ok=True)
        with into.open("ab") as out:
            out.write(whole)
        self._taken_bytes += len(whole)
        return whole.count(b"\n")
