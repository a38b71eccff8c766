"""One worker of ``h2lab run --jobs N`` (:class:`h2lab.runner.shards.LocalShardsExecutor`):
``python -m h2lab.runner.worker``, its own lab for its life.

It reads blocks, one JSON line each (:func:`h2lab.runner.wire.encode_message` of a
:class:`BlockJob`), from stdin, runs each in its lab (:class:`h2lab.runner.session.LabSession`)
and answers on stdout with one JSON line per attempt (:class:`TrialDone`) and one when the
block is done (:class:`BlockDone`). It never opens the store. End of stdin: it tears its lab
down and exits 0. SIGINT or SIGTERM: the running trial is interrupted, the lab torn down, exit
130. Everything else it or its children print goes to stderr (the shard's log).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable
from typing import TextIO

from h2lab.errors import H2LabError
from h2lab.runner import wire
from h2lab.runner.executor import BlockDone, BlockJob, TrialDone
from h2lab.runner.run import signals_as_interrupt
from h2lab.runner.session import LabSession


def serve(
    lines: Iterable[str],
    send: Callable[[TrialDone | BlockDone], None],
    check: Callable[[], None],
) -> None:
    """Run every block of ``lines`` in one lab, in order, sending each event as it happens;
    ``check`` raises between attempts when an interrupt came."""
    session = LabSession()
    try:
        for line in lines:
            job = wire.decode_message(json.loads(line))
            if not isinstance(job, BlockJob):
                raise wire.WireError("message", f"a worker takes blocks, not {type(job).__name__}")
            for event in session.run(job):
                send(event)
                check()
            send(BlockDone(job.number))
    finally:
        session.close()


def _protocol_streams() -> tuple[TextIO, TextIO]:
    """The driver's pipes, moved off fds 0 and 1 so that no child (server, client, Rattan)
    reads a block or writes into the answers: fd 0 becomes /dev/null and fd 1 the log."""
    blocks = os.fdopen(os.dup(0), "r", encoding="utf-8")
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return blocks, answers


def main() -> int:
    blocks, answers = _protocol_streams()

    def send(event: TrialDone | BlockDone) -> None:
        answers.write(json.dumps(wire.encode_message(event)) + "\n")
        answers.flush()

    try:
        with signals_as_interrupt() as interrupted:
            serve(blocks, send, interrupted)
            interrupted()
    except KeyboardInterrupt:
        print("interrupted: the lab is torn down", file=sys.stderr, flush=True)
        return 130
    except H2LabError as exc:
        print(f"h2lab worker: {exc.line()}", file=sys.stderr, flush=True)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
