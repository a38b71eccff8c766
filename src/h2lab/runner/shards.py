"""Blocks run by N worker processes on this machine, each with its own lab (``h2lab run
--jobs N``): :class:`LocalShardsExecutor`.

Labs are independent (own namespaces, Rattan, servers, addresses), so N of them run at once.
Each worker (:mod:`h2lab.runner.worker`) is fed one block at a time, as a JSON line on its
stdin, whenever it is idle, in the order submitted (``h2lab run --jobs``: longest estimated
first, :func:`h2lab.runner.executor.longest_first`), so the workers finish together however
uneven the blocks, and a block's protocols stay back to back in one lab. Workers answer with
JSON lines on stdout and never open the store: the driver stores what they stream back. A
worker's stderr goes to ``DIR/shard-K.log``; each trial it runs is marked ``"shard": "K/N"`` in
its configuration (not in its key).

Each worker gets SIGTERM when the driver dies (Linux's parent-death signal): a worker turns
SIGTERM into the teardown of Ctrl-C (:func:`h2lab.runner.run.signals_as_interrupt`), so after
a ``kill -9`` of the driver it stops its running trial at once and tears its lab down, rather
than finishing the trial for nobody.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from h2lab import procs
from h2lab.errors import H2LabError
from h2lab.runner import wire
from h2lab.runner.executor import BlockDone, BlockJob, Event

SHARD_STOP_S = 120.0
"""How long an interrupted worker may take to tear its lab down before it is killed."""
WORKER_ARGV = (sys.executable, "-m", "h2lab.runner.worker")
POLL_S = 0.5
"""How often the driver looks up from waiting (an interrupt check, a late worker)."""


class ShardFailed(H2LabError):
    """A worker exited badly (or in the middle of a block): what it had not finished is not
    stored, and a rerun resumes."""

    def __init__(self, shard: int, jobs: int, returncode: int, log: Path) -> None:
        self.shard, self.jobs, self.returncode, self.log = shard, jobs, returncode, log
        super().__init__(
            f"shard {shard}/{jobs} exited with {returncode} (see {log}); rerun the same "
            "command to resume"
        )


@dataclass
class _Worker:
    number: int
    """1-based: shard K of N"""
    proc: subprocess.Popen[str]
    log: Path
    job: BlockJob | None = None
    """the block it runs"""
    reading: bool = True
    """its stdout is still open (it has not exited)"""


class LocalShardsExecutor:
    """Up to ``jobs`` worker processes, started when the first events are asked for (no
    more than there are blocks), each taking the next queued block when idle."""

    def __init__(
        self,
        jobs: int,
        log_dir: Path,
        *,
        argv: Sequence[str] = WORKER_ARGV,
        stop_s: float = SHARD_STOP_S,
    ) -> None:
        self.jobs = jobs
        self.log_dir = log_dir
        self._argv = list(argv)
        self._stop_s = stop_s
        self._queue: deque[BlockJob] = deque()
        self._workers: list[_Worker] = []
        self._lines: queue.Queue[tuple[int, str | None]] = queue.Queue()
        self._failed: list[_Worker] = []
        self._stop_by: float | None = None
        """set by :meth:`cancel`: when a worker still running is killed"""

    def submit(self, job: BlockJob) -> None:
        self._queue.append(job)

    def events(self, check: Callable[[], None] = lambda: None) -> Iterator[Event]:
        if self._stop_by is None and self._queue and not self._running():
            self._start(min(self.jobs, len(self._queue)))
        while self._running():
            self._dispatch()
            self._kill_late()
            check()
            try:
                k, text = self._lines.get(timeout=POLL_S)
            except queue.Empty:
                continue
            worker = self._workers[k]
            if text is None:
                self._ended(worker)
                continue
            event = self._event(worker, text)
            if isinstance(event, BlockDone):
                worker.job = None
            yield event
        if self._failed and self._stop_by is None:
            w = self._failed[0]
            raise ShardFailed(w.number, self.jobs, w.proc.returncode, w.log)

    def cancel(self) -> None:
        self._queue.clear()
        if self._stop_by is None:
            self._stop_by = time.monotonic() + self._stop_s
        for w in self._workers:
            if w.job is None:
                self._end_input(w)  # idle or already tearing down: it exits on its own
            elif w.proc.poll() is None:
                os.kill(w.proc.pid, signal.SIGINT)  # its own session: it gets it once

    def close(self) -> None:
        if any(w.proc.poll() is None for w in self._workers):
            self.cancel()
            for w in self._workers:
                try:
                    w.proc.wait(timeout=max(0.0, (self._stop_by or 0) - time.monotonic()))
                except subprocess.TimeoutExpired:
                    w.proc.kill()
                    w.proc.wait()
        for w in self._workers:
            self._end_input(w)

    def _running(self) -> bool:
        return any(w.reading for w in self._workers)

    def _start(self, count: int) -> None:
        self._workers = []
        for k in range(count):
            log = self.log_dir / f"shard-{k + 1}.log"
            with log.open("w") as stderr:
                # own session: a Ctrl-C reaches the driver only, which stops each worker once;
                # started from the main thread (the death signal follows the forking thread)
                proc = subprocess.Popen(
                    self._argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=stderr,
                    text=True,
                    encoding="utf-8",
                    start_new_session=True,
                    preexec_fn=procs.death_signal_setup(signal.SIGTERM),
                )
            self._workers.append(_Worker(k + 1, proc, log))
            threading.Thread(target=self._pump, args=(k, proc), daemon=True).start()

    def _pump(self, k: int, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        with proc.stdout:
            for text in proc.stdout:
                self._lines.put((k, text))
        self._lines.put((k, None))

    def _dispatch(self) -> None:
        """The next queued block to every idle worker; no more blocks: end of its input."""
        for w in self._workers:
            stdin = w.proc.stdin
            if w.job is not None or not w.reading or stdin is None or stdin.closed:
                continue
            if not self._queue:
                self._end_input(w)
                continue
            job = self._queue.popleft()
            mark = f"{w.number}/{self.jobs}"
            marked = dataclasses.replace(
                job, trials=tuple(dataclasses.replace(t, shard=mark) for t in job.trials)
            )
            try:
                stdin.write(json.dumps(wire.encode_message(marked)) + "\n")
                stdin.flush()
            except OSError:  # it died: the block goes to another, its exit is counted
                self._queue.appendleft(job)
                self._end_input(w)
                continue
            w.job = job

    def _end_input(self, w: _Worker) -> None:
        """Close ``w``'s stdin: no more blocks (a closed pipe of a worker that is gone may
        fail to flush; nothing was waiting in it)."""
        if w.proc.stdin is not None and not w.proc.stdin.closed:
            with contextlib.suppress(OSError):
                w.proc.stdin.close()

    def _ended(self, w: _Worker) -> None:
        """``w`` closed its stdout: it exited (or is about to)."""
        w.reading = False
        code = w.proc.wait()
        if (code != 0 or w.job is not None) and self._stop_by is None:
            self._failed.append(w)
        self._end_input(w)

    def _kill_late(self) -> None:
        if self._stop_by is not None and time.monotonic() > self._stop_by:
            for w in self._workers:
                if w.proc.poll() is None:
                    w.proc.kill()

    def _event(self, w: _Worker, text: str) -> Event:
        try:
            event = wire.decode_message(json.loads(text))
        except ValueError as exc:
            raise H2LabError(f"shard {w.number}/{self.jobs} sent {text.strip()[:200]!r}") from exc
        if isinstance(event, BlockJob):
            raise wire.WireError(f"shard {w.number}/{self.jobs}", "a worker sends no blocks")
        return event
