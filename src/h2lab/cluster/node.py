"""The lab of one Ray node: :class:`LabActor`, created by the driver on every lab node (one
per node: it holds the node's :data:`~h2lab.cluster.nodes.LAB_RESOURCE`).

It keeps one :class:`h2lab.runner.session.LabSession` for its life, like a worker of ``--jobs``.
:meth:`LabActor.run` checks a block (:mod:`h2lab.cluster.checks`), installs the pages it
lacks from the driver's archives (by id, checked), runs the block and yields, per attempt, the
encoded :class:`~h2lab.runner.executor.TrialDone` with its artifacts as one archive (they are
written to a folder of its own, then removed), and at the end the block's number. A cancel
from the driver (``ray.cancel``) stops the block after the running trial; :meth:`close` tears
the lab down.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from h2lab.cluster import transfer
from h2lab.cluster.checks import check_job, h2lab_identity
from h2lab.errors import H2LabError
from h2lab.machine import machine_info
from h2lab.pages.manifest import Page
from h2lab.paths import cluster_root
from h2lab.runner import wire
from h2lab.runner.executor import BlockJob, TrialDone
from h2lab.store.sqlite import artifacts_dir

Item = tuple[str, Any, bytes]
"""What :meth:`LabActor.run` yields: ``("trial", encoded TrialDone, artifacts archive)``,
then ``("block", number, b"")``."""


class NodeFailed(Exception):
    """What a lab node could not do, as one line (h2lab's own errors carry fields that Ray
    cannot rebuild on the driver's side: this one is plain)."""


class LabActor:
    """A lab node's lab (the class Ray makes an actor of, in :mod:`h2lab.cluster.executor`)."""

    def __init__(self) -> None:
        import ray

        self.node_id = ray.get_runtime_context().get_node_id()
        self.machine = machine_info(self.node_id)
        # in the node's lab state folder, named by this process: `h2lab clean` removes it
        # once this actor is gone (a kill -9 leaves it), and so does the node when it stops
        cluster_root().mkdir(parents=True, exist_ok=True)
        self.work = Path(tempfile.mkdtemp(prefix=f"actor-{os.getpid()}-", dir=cluster_root()))
        self._pages: dict[str, Page] = {}
        self._session: Any = None

    def probe(self) -> dict[str, Any]:
        """This node: its machine, its process, its h2lab (version and commit: the driver
        refuses a node whose differ from its own) and why it may not run labs (or None)."""
        from h2lab.cluster.nodes import doctor_refusal

        return {
            "machine": self.machine,
            "pid": os.getpid(),
            "refused": doctor_refusal(),
            **h2lab_identity(),
        }

    def run(self, message: Any, archives: Mapping[str, Any]) -> Iterator[Item]:
        """Run one block (``message``: an encoded :class:`BlockJob`); ``archives``: the
        driver's page archive per page id (object refs, fetched only when missing here). An
        error ends it as :class:`NodeFailed` (its traceback goes to this worker's log)."""
        try:
            yield from self._run(message, archives)
        except Exception as exc:
            traceback.print_exc()
            line = exc.line() if isinstance(exc, H2LabError) else f"{type(exc).__name__}: {exc}"
            raise NodeFailed(line) from None

    def _run(self, message: Any, archives: Mapping[str, Any]) -> Iterator[Item]:
        import ray

        from h2lab.runner.session import LabSession

        job = wire.decode_message(message)
        if not isinstance(job, BlockJob):
            raise wire.WireError("message", "a lab node takes blocks")
        check_job(job)
        self._install_pages(job, archives)
        results = self.work / "results"
        job = dataclasses.replace(job, results_dir=results)
        if self._session is None:
            self._session = LabSession(self.machine, self._page)
        context = ray.get_runtime_context()
        for event in self._session.run(job):
            yield "trial", wire.encode_message(event), self._artifacts(results, event)
            if event.last and context.is_canceled():
                return
        yield "block", job.number, b""

    def close(self) -> None:
        """Tear the lab down and remove this actor's files."""
        try:
            if self._session is not None:
                self._session.close()
        finally:
            self._session = None
            shutil.rmtree(self.work, ignore_errors=True)

    def _page(self, spec: str, page_id: str | None) -> Page:
        if page_id is None or page_id not in self._pages:
            raise H2LabError(f"page {spec!r} ({page_id}) was not sent with the block")
        return self._pages[page_id]

    def _install_pages(self, job: BlockJob, archives: Mapping[str, Any]) -> None:
        import ray

        for page_id in dict.fromkeys(job.pages.values()):
            if page_id in self._pages:
                continue
            page = transfer.have_page(page_id)
            if page is None:
                page = transfer.install_page(page_id, ray.get(archives[page_id]))
            self._pages[page_id] = page

    @staticmethod
    def _artifacts(results: Path, event: TrialDone) -> bytes:
        folder = artifacts_dir(results, event.record.trial_key, event.record.attempt)
        if not folder.is_dir():
            return b""
        try:
            return transfer.pack(folder, transfer.MAX_ARTIFACTS_BYTES)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
