"""Epoch-wide read-ahead of planned misses, in the main process.

Why it exists: a DataLoader looks only ``num_workers * prefetch_factor`` batches
ahead, so a batch's misses are read at most that far before the loop needs
them. Orders that bunch their misses together (SHADE's PADS schedules the
cached samples first and every miss after them) then alternate a compute-bound
stretch with an I/O-bound one, and the two never overlap. But the order of the
whole epoch is known when it starts, so the ids that are not cached at that
moment are read ahead, in order, by a bounded pool of threads into a staging
area bounded in bytes (outside the cache's budget), and handed to the plan
that needs them; workers read only what read-ahead has not.

It moves bytes and decides nothing: plans are made by the planner exactly as
before (the planner does not know read-ahead exists), so the loader and the
simulator still make the same decisions. An id is never read twice by it and
the plan that needs an id being read waits for that read rather than starting
another. A guess that proves wrong -- an id that was not cached when the epoch
started but is a hit where the plan meets it, or staged bytes left over when an
epoch stops early -- costs a storage read nothing uses; those are counted as
``wasted``, never hidden.

It only runs for an epoch whose uncached share is at most ``max_miss_share``
(default one half). When most of an epoch misses -- no cache, or LRU's few hits
on a random order -- the misses are spread evenly, the DataLoader's own window
already keeps the store busy, and reading in the main process would only take
CPU from the training loop and make it wait on reads at the frontier (measured:
on 2 cores at 0.5 ms per request an all-miss loader fell from ~2,300 to ~1,900
samples/s with it on).

Threads here never run while DataLoader workers are forked: the loader starts
read-ahead after ``iter(DataLoader)`` and stops (joins) it before the next one.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

import numpy as np

from hotset.engine.arrays import IntArray


@dataclass
class ReadAheadCounts:
    """Cumulative counts since the object was made (the loader takes differences)."""

    reads: int = 0  # storage reads made by read-ahead
    bytes: int = 0
    used: int = 0  # staged reads handed to a plan
    wasted: int = 0  # reads nothing used (a hit where planned, or left at stop)
    wasted_bytes: int = 0


class ReadAhead:
    """Reads an epoch's not-yet-cached ids ahead of the planner; see the module docstring."""

    def __init__(
        self,
        read: Callable[[int], bytes],
        sizes: IntArray,
        *,
        budget_bytes: int,
        threads: int,
        max_miss_share: float = 0.5,
    ) -> None:
        if budget_bytes < 0:
            raise ValueError(f"budget_bytes must be >= 0, got {budget_bytes!r}")
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads!r}")
        if not 0.0 <= max_miss_share <= 1.0:
            raise ValueError(f"max_miss_share must be in [0, 1], got {max_miss_share!r}")
        self._read = read
        self._sizes = sizes
        self.budget_bytes = int(budget_bytes)
        self.threads = int(threads)
        self.max_miss_share = float(max_miss_share)
        self.active = False  # reading ahead in the current epoch
        self.counts = ReadAheadCounts()
        self.max_held_bytes = 0  # the most bytes staged or in flight at once (for tests)
        self._cond = threading.Condition()
        self._workers: list[threading.Thread] = []
        self._reset(np.zeros(0, dtype=np.int64), 0, ())

    @property
    def enabled(self) -> bool:
        return self.budget_bytes > 0

    @staticmethod
    def miss_share(order: IntArray, begin: int, skip: Collection[int]) -> float:
        """The share of ``order[begin:]`` whose id is in neither ``skip`` nor ``order[:begin]``."""
        rest = np.asarray(order[begin:], dtype=np.int64)
        if not len(rest):
            return 0.0
        known = np.fromiter(skip, dtype=np.int64, count=len(skip))
        known = np.concatenate([known, np.asarray(order[:begin], dtype=np.int64)])
        return float((~np.isin(rest, known)).mean())

    def _reset(self, order: IntArray, begin: int, skip: Iterable[int]) -> None:
        self._order = order.tolist()
        self._cursor = begin  # next order position to consider
        self._frontier = begin  # positions below it are planned already
        self._seen: set[int] = set(skip)  # never read these ahead
        self._staged: dict[int, bytes] = {}
        self._inflight: set[int] = set()
        self._doomed: set[int] = set()  # in flight, but their position was planned past
        self._claims: collections.deque[tuple[int, int]] = collections.deque()  # (pos, id)
        self._held = 0  # bytes staged or in flight
        self._stopping = False

    # -- life cycle ---------------------------------------------------------------
    def start(self, order: IntArray, *, begin: int, skip: Collection[int]) -> None:
        """Read ahead ``order[begin:]``, leaving out ``skip`` (cached now, or already planned)."""
        self.stop()
        if not self.enabled or self.miss_share(order, begin, skip) > self.max_miss_share:
            return
        self.active = True
        with self._cond:
            self._reset(np.asarray(order, dtype=np.int64), int(begin), skip)
            self._seen.update(self._order[: int(begin)])
        self._workers = [
            threading.Thread(target=self._work, name=f"hotset-readahead-{i}", daemon=True)
            for i in range(self.threads)
        ]
        for t in self._workers:
            t.start()

    def stop(self) -> None:
        """Stop reading; wait for reads in flight; count what was never used as wasted."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        for t in self._workers:
            t.join()
        self._workers = []
        self.active = False
        with self._cond:
            for data in self._staged.values():
                self._waste(len(data))
            self._staged.clear()
            self._held = 0

    # -- the planner's side ---------------------------------------------------------
    def take(self, ids: Iterable[int], *, frontier: int) -> dict[int, bytes]:
        """Staged bytes of ``ids`` (a plan's misses) and the plan's end position in the order.

        An id being read is waited for; an id not reached yet is left to the
        worker and never read ahead after this.
        """
        out: dict[int, bytes] = {}
        if not self.active:
            return out
        with self._cond:
            for sid in ids:
                while sid in self._inflight and not self._stopping:
                    self._cond.wait()
                data = self._staged.pop(sid, None)
                if data is not None:
                    out[sid] = data
                    self._held -= int(self._sizes[sid])
                    self.counts.used += 1
                else:
                    self._seen.add(sid)
            self._frontier = max(self._frontier, int(frontier))
            claims = self._claims
            while claims and claims[0][0] < self._frontier:
                _, sid = claims.popleft()
                data = self._staged.pop(sid, None)
                if data is not None:  # staged for a position planned as a hit
                    self._held -= int(self._sizes[sid])
                    self._waste(len(data))
                elif sid in self._inflight:
                    self._doomed.add(sid)
            self._cond.notify_all()
        return out

    # -- the reading threads ----------------------------------------------------------
    def _waste(self, nbytes: int) -> None:
        self.counts.wasted += 1
        self.counts.wasted_bytes += nbytes

    def _claim(self) -> int | None:
        """The next id to read (holding the lock), waiting for room; None to stop."""
        order, sizes = self._order, self._sizes
        while not self._stopping:
            self._cursor = max(self._cursor, self._frontier)
            while self._cursor < len(order) and order[self._cursor] in self._seen:
                self._cursor += 1
            if self._cursor >= len(order):
                return None
            sid = order[self._cursor]
            size = int(sizes[sid])
            if self._held and self._held + size > self.budget_bytes:
                self._cond.wait()  # a take or a finished read changes things; look again
                continue
            self._seen.add(sid)
            self._inflight.add(sid)
            self._claims.append((self._cursor, sid))
            self._held += size
            self.max_held_bytes = max(self.max_held_bytes, self._held)
            self._cursor += 1
            return sid
        return None

    def _work(self) -> None:
        while True:
            with self._cond:
                sid = self._claim()
            if sid is None:
                return
            try:
                data: bytes | None = self._read(sid)
            except BaseException:
                # The worker reads it again and reports the error there. Any exception:
                # an id left in flight would hang the plan that waits for it.
                data = None
            with self._cond:
                self._inflight.discard(sid)
                if data is None:  # not read: the plan finds it unstaged, its worker reads it
                    self._held -= int(self._sizes[sid])
                else:
                    self.counts.reads += 1
                    self.counts.bytes += len(data)
                    if self._stopping or sid in self._doomed:
                        self._doomed.discard(sid)
                        self._held -= int(self._sizes[sid])
                        self._waste(len(data))
                    else:
                        self._staged[sid] = data
                self._cond.notify_all()
