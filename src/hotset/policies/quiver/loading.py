"""Quiver's double buffering (FAST'20 §5.1): release a consumed chunk, load the next at pace.

After each batch the job releases the older of its two chunks once it has no
unused member left and its successor is in (or cannot load beside it), and loads
a share of the next chunk's units: enough to have it in before the consumed one
runs out (its unused members over the batch size, in batches), and always at
least two batches of unused samples cached. The static set (the stripes a large
budget keeps for good) comes in over the first epoch. A co-operative miss reads
a unit of the loading chunk through the same :meth:`ChunkLoading.take`.
"""

from __future__ import annotations

import math

from hotset.engine.packages import Load
from hotset.policies.quiver.chunks import ChunkCycle, StripedChunks
from hotset.policies.quiver.epoch import EpochView
from hotset.policies.quiver.holdings import Holdings


class ChunkLoading:
    """Loads chunks' units into :class:`Holdings` and releases consumed chunks; counts both."""

    def __init__(self, holdings: Holdings, *, batch_size: int) -> None:
        self.holdings = holdings
        self.batch_size = batch_size
        self.loaded_units = 0
        self.loaded_bytes = 0
        self.released_chunks = 0

    def after_batch(self, cycle: ChunkCycle, view: EpochView) -> tuple[list[Load], list[int]]:
        """Release a consumed chunk whose successor is in; load the next chunk's share and
        the static set's: (the loads, the ids released)."""
        loads: list[Load] = []
        evicted: list[int] = []
        ahead = 2 * self.batch_size
        for _ in range(2):  # a chunk consumed while its successor loaded goes at once
            evicted += self.advance(cycle, view)
            pace = 0
            if len(cycle.chunks_in) == 2 and cycle.queue:
                batches_left = max(1, view.unused[cycle.front] // self.batch_size)
                pace = math.ceil(len(cycle.queue) / batches_left)
            done = len(loads)
            while cycle.queue and (len(loads) - done < pace or sum(view.unused) < ahead):
                load = self._load(cycle.chunks, cycle.queue[0])
                if load is None:
                    break
                cycle.queue.pop(0)
                loads.append(load)
            if sum(view.unused) >= ahead or view.unused[cycle.front] or cycle.queue:
                break
            if view.over:
                break  # the epoch is over: the next begins with what is in, no churn now
        if cycle.static_queue:  # the static set comes in over the first epoch
            batches_left = max(1, (len(view.order) - view.at) // self.batch_size)
            for _ in range(math.ceil(len(cycle.static_queue) / batches_left)):
                load = self._load(cycle.chunks, cycle.static_queue[0])
                if load is None:
                    break
                cycle.static_queue.pop(0)
                loads.append(load)
        return loads, evicted

    def advance(self, cycle: ChunkCycle, view: EpochView) -> list[int]:
        """Release the older chunk once consumed (if its successor is in or cannot load
        beside it), and start loading the next one once only one is left; the evicted ids.
        """
        evicted: list[int] = []
        consumed = len(cycle.chunks_in) == 2 and not view.unused[cycle.front]
        if consumed and (not cycle.queue or self._fitting(cycle.chunks, cycle.queue[0]) is None):
            evicted = [s for s in cycle.drop_front() if s in self.holdings]
            for s in evicted:
                self.holdings.evict(s)
            self.released_chunks += 1
        if len(cycle.chunks_in) == 1 and not cycle.queue and cycle.chunks.k > 1:
            cycle.start_next()
        return evicted

    def _fitting(self, chunks: StripedChunks, u: int) -> list[int] | None:
        """Load unit ``u``'s members not cached yet, if they fit beside what is; else None."""
        return self.holdings.fitting(chunks.members[u])

    def _load(self, chunks: StripedChunks, u: int) -> Load | None:
        """Admit load unit ``u``'s members if they fit; None (nothing done) if not."""
        fresh = self.take(chunks, u)
        return None if fresh is None else Load(chunks.read_unit(u), tuple(fresh))

    def take(self, chunks: StripedChunks, u: int) -> list[int] | None:
        """Admit load unit ``u``'s members not cached yet, if they fit; those ids, or None."""
        fresh = self._fitting(chunks, u)
        if fresh is None:
            return None
        self.holdings.admit(fresh)
        self.loaded_units += 1
        self.loaded_bytes += chunks.unit_bytes[u]
        return fresh
