"""The loader's packing step, off the critical path: packages are written by a thread.

iCACHE's packer reads a package's members from the store (one request each) and
writes the package file (:class:`~hotset.data.package_writer.PackageWriter`).
Done inline, those reads stall the main process while it hands plans to the
workers -- the very I/O the cache is meant to hide. A policy defines a package
at least one batch before the batch that reads it (``plan.packs`` ahead of
``plan.unit_reads``), so the write can run in a background thread during the
batches in between; the plan that reads a package waits for its write only if it
has not finished yet (the first package of an epoch, which is defined and read
in one batch).

One thread, so writes happen in the order the policy defined them and the
writer's counters need no lock. The members of a package are copied in the
main process when it is submitted: the thread never reads the policy's package
set while the policy defines the next package. A failed write is raised in the
main process by the plan that reads the package, or by the next plan after it
fails, whichever comes first -- never dropped.

A dynamic package is read once, so its file is deleted as soon as the batch
that read it reaches the training loop (:meth:`PackingThread.consumed`):
without that a long run would leave about as many package bytes per epoch as
its L-samples weigh, in the data store. Static packages (``reusable``) are read
every epoch and stay until the loader closes.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor

from hotset.data.package_writer import PackageWriter
from hotset.engine.plan import BatchPlan
from hotset.systems.base import System


class PackingThread:
    """Writes the packages plans name, in the background (see the module docstring).

    A package a plan reads that was never submitted (a policy restored from a
    checkpoint defined it before the restart) is written inline, so a worker
    never looks for a file that is not there.
    """

    def __init__(self, system: System, writer: PackageWriter | None) -> None:
        self._system = system
        self.writer = writer
        self._pool: ThreadPoolExecutor | None = None
        self._futures: dict[int, Future[None]] = {}  # submitted, not yet known written
        self._written: set[int] = set()
        #: plans that had to wait for their package's write (a stall the thread did not hide)
        self.waits = 0
        self._reading: deque[list[int]] = deque()  # per plan handed out: packages it reads

    def write(self, plan: BatchPlan) -> None:
        """Submit ``plan``'s new packages; return once every package it reads is written."""
        if self.writer is None:
            return
        self._collect(wait=False)
        layout = self._system.policy.layout
        assert layout is not None
        for u in dict.fromkeys(plan.packs.tolist()):
            if u not in self._written and u not in self._futures:
                members = layout.members(int(u)).tolist()
                self._futures[u] = self._executor().submit(self.writer.write_unit, u, members)
        reads = list(dict.fromkeys(plan.unit_reads.tolist()))
        self._reading.append([] if getattr(layout, "reusable", False) else reads)
        for u in reads:
            if u in self._written:
                continue
            future = self._futures.pop(u, None)
            if future is None:
                self.writer.write(layout, [u])
            else:
                if not future.done():
                    self.waits += 1
                future.result()
            self._written.add(u)

    def restart(self) -> None:
        """A new pass over the plans begins: plans handed out and never consumed are
        forgotten (their packages stay until :meth:`remove`)."""
        self._reading.clear()

    def consumed(self) -> None:
        """The oldest plan handed out reached the training loop: delete what only it read."""
        if not self._reading:
            return
        units = self._reading.popleft()
        if units and self.writer is not None:
            for u in units:
                self.writer.delete(u)

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hotset-packer")
        return self._pool

    def _collect(self, *, wait: bool) -> None:
        """Note the finished writes -- every submitted one, waiting, with ``wait`` --
        raising the first failure (its own exception)."""
        for u, future in list(self._futures.items()):
            if wait or future.done():
                del self._futures[u]
                future.result()
                self._written.add(u)

    def drain(self) -> None:
        """Wait for every submitted write (raising the first failure)."""
        self._collect(wait=True)

    def remove(self) -> None:
        """Stop the thread (waiting for a write in progress), then delete the run's files."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._futures.clear()
        if self.writer is not None:
            self.writer.remove()
