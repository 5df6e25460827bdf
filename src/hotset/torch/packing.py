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

A package file that cannot be written (:class:`PackageWriteError`: the folder
is full, read-only or gone) does not stop training. The plan that reads it is
handed out with the package's members the batch puts in the cache read alone
instead (``reads``), exactly as the planner handles a load of single samples,
so the workers bring the same bytes and the policy's decisions stay as they
were. After the first failure no package is written any more (each attempt
would read its members for nothing): every later package is read this way too,
and dropped from its plan's ``packs`` so that ``pack_reads`` counts only reads
that happened. :meth:`PackingThread.summary` counts it all
(``package_write_errors``, ``packages_not_written``, ``package_fallback_reads``;
in ``loader.policy_summary()`` from the first failure on) and the first failure
is warned about once, with the file and the reason.
Other failures of the packer (its reads of the members) are raised as before.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from hotset.data.package_writer import PackageWriteError, PackageWriter
from hotset.engine.plan import BatchPlan
from hotset.engine.units import UnitLayout
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
        #: packages with no file: their write failed, or came after one that did
        self._failed: set[int] = set()
        #: the first write failure's message; None while writes succeed
        self.broken: str | None = None
        #: package writes that failed; member reads made instead of package reads;
        #: package files a consumed plan read that could not be deleted
        self.write_errors = self.fallback_reads = self.delete_errors = 0
        #: package files a worker found gone or unreadable when it read them (each then
        #: read member by member, those reads counted in fallback_reads too)
        self.lost = 0

    def write(self, plan: BatchPlan) -> BatchPlan:
        """Submit ``plan``'s new packages; return once every package it reads is
        written -- the plan to hand out: ``plan``, or, where a package has no
        file, ``plan`` reading its members alone (see the module docstring)."""
        if self.writer is None:
            return plan
        self._collect(wait=False)
        layout = self._system.policy.layout
        assert layout is not None
        plan = self._submit(plan, layout)
        reads = list(dict.fromkeys(plan.unit_reads.tolist()))
        self._reading.append([] if getattr(layout, "reusable", False) else reads)
        for u in reads:
            if u in self._written or u in self._failed:
                continue
            future = self._futures.pop(u, None)
            if future is None:
                if self.broken is not None:
                    self._failed.add(u)  # writes stopped: no file, like the others
                    continue
                future = self._write_inline(u, layout)
            elif not future.done():
                self.waits += 1
            self._settle(u, future)
        if not self._failed.isdisjoint(reads):
            plan = self._read_alone(plan, layout)
        return self._with_members(plan, layout)

    def _with_members(self, plan: BatchPlan, layout: UnitLayout) -> BatchPlan:
        """``plan`` carrying the members of every package it may read: a worker cannot
        know them (they were decided after it started), and needs them to read a package
        whose file is gone or unreadable member by member instead (hotset.torch.reads)."""
        units = set(plan.unit_reads.tolist()) | set(plan.units[plan.units >= 0].tolist())
        if not units:
            return plan
        members = {u: np.asarray(layout.members(u), dtype=np.int64) for u in sorted(units)}
        return dataclasses.replace(plan, unit_members=members)

    def _submit(self, plan: BatchPlan, layout: UnitLayout) -> BatchPlan:
        """Start writing ``plan``'s new packages; once writes fail, drop them from it."""
        dropped: list[int] = []
        for u in dict.fromkeys(plan.packs.tolist()):
            if u in self._written or u in self._futures or u in self._failed:
                continue
            if self.broken is not None:
                self._failed.add(u)
                dropped.append(u)
                continue
            members = layout.members(int(u)).tolist()
            assert self.writer is not None
            self._futures[u] = self._executor().submit(self.writer.write_unit, u, members)
        if not dropped:
            return plan
        assert self.writer is not None
        gone = [layout.members(u) for u in dropped]
        return dataclasses.replace(
            plan,
            packs=np.asarray([u for u in plan.packs.tolist() if u not in dropped], np.int64),
            pack_requests=plan.pack_requests - sum(len(m) for m in gone),
            pack_bytes=plan.pack_bytes - sum(int(self.writer.sizes[m].sum()) for m in gone),
        )

    def _write_inline(self, u: int, layout: UnitLayout) -> Future[None]:
        """Write package ``u`` in this thread; its outcome as a finished future."""
        assert self.writer is not None
        future: Future[None] = Future()
        try:
            self.writer.write(layout, [u])
        except PackageWriteError as exc:
            future.set_exception(exc)
        else:
            future.set_result(None)
        return future

    def _settle(self, u: int, future: Future[None]) -> None:
        """Note the outcome of package ``u``'s write (waiting for it): written, or failed
        (:class:`PackageWriteError`, warned about once); any other error is raised."""
        try:
            future.result()
        except PackageWriteError as exc:
            self._failed.add(u)
            self.write_errors += 1
            if self.broken is None:
                self.broken = str(exc)
                warnings.warn(
                    f"hotset: {exc}; packages are no longer written: the members of each "
                    "are read alone from the data store instead (counted in "
                    "loader.policy_summary()['package_fallback_reads']); free space there "
                    "or make it writable, or give package_dir= a writable local directory",
                    RuntimeWarning,
                    stacklevel=2,
                )
            return
        self._written.add(u)

    def _read_alone(self, plan: BatchPlan, layout: UnitLayout) -> BatchPlan:
        """``plan`` with each package that has no file replaced by single reads of the
        members the batch puts in the cache (the only bytes of a package a batch
        uses: no request is served from a package its own batch reads)."""
        units = plan.unit_reads.tolist()
        kept = [u for u in units if u not in self._failed]
        have = set(plan.reads.tolist())
        for u in kept:
            have.update(layout.members(u).tolist())
        puts = set(plan.puts.tolist())
        extra: list[int] = []
        for u in dict.fromkeys(u for u in units if u in self._failed):
            for m in layout.members(u).tolist():
                if m in puts and m not in have:
                    have.add(m)
                    extra.append(m)
        self.fallback_reads += len(extra)
        return dataclasses.replace(
            plan,
            reads=np.concatenate([plan.reads, np.asarray(extra, dtype=np.int64)]),
            unit_reads=np.asarray(kept, dtype=np.int64),
        )

    def restart(self) -> None:
        """A new pass over the plans begins: plans handed out and never consumed are
        forgotten (their packages stay until :meth:`remove`)."""
        self._reading.clear()

    def consumed(self) -> None:
        """The oldest plan handed out reached the training loop: delete what only it read.

        A file that cannot be deleted (the folder turned read-only) stays until
        :meth:`remove`, counted in ``delete_errors``; training goes on.
        """
        if not self._reading:
            return
        units = self._reading.popleft()
        if units and self.writer is not None:
            for u in units:
                if u in self._failed:
                    continue  # no file was written
                try:
                    self.writer.delete(u)
                except OSError:
                    self.delete_errors += 1

    def read_lost(self, packages: int, member_reads: int, why: str = "") -> None:
        """Workers found ``packages`` files gone or unreadable (the first: ``why``) and read
        their members alone instead (``member_reads`` reads): counted, warned about once."""
        if not packages:
            return
        if not self.lost:
            warnings.warn(
                f"hotset: a package file was gone or unreadable when read ({why}; deleted "
                "by another process?); its members were read alone from the data store "
                "instead, as will be those of any other (counted in "
                "loader.policy_summary()['packages_lost'] and ['package_fallback_reads'])",
                RuntimeWarning,
                stacklevel=4,
            )
        self.lost += packages
        self.fallback_reads += member_reads

    def summary(self) -> dict[str, Any]:
        """What became of the package files, merged into ``loader.policy_summary()``
        once one could not be written or deleted; empty until then (and always for a
        system that writes none), so that the summary stays the simulator's in a run
        where nothing failed."""
        if not (self._failed or self.delete_errors or self.lost):
            return {}
        return {
            "package_write_errors": self.write_errors,
            "packages_not_written": len(self._failed),
            "packages_lost": self.lost,
            "package_fallback_reads": self.fallback_reads,
            "package_delete_errors": self.delete_errors,
        }

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hotset-packer")
        return self._pool

    def _collect(self, *, wait: bool) -> None:
        """Note the finished writes -- every submitted one, waiting, with ``wait`` --
        raising the first failure other than a package write's (its own exception)."""
        for u, future in list(self._futures.items()):
            if wait or future.done():
                del self._futures[u]
                self._settle(u, future)

    def drain(self) -> None:
        """Wait for every submitted write (raising the first failure but a write's)."""
        self._collect(wait=True)

    def remove(self) -> None:
        """Stop the thread (waiting for a write in progress), then delete the run's files."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._futures.clear()
        if self.writer is not None:
            self.writer.remove()
