"""Quiver (FAST'20 §4.7, §5.1, Algorithm 1): substitutable hits over double-buffered chunks.

The cache holds two striped chunks of the data set (:mod:`hotset.policies.quiver_chunks`):
the one the job consumes and the next, loaded in the background after each batch
at the pace the consumption needs. A request is served by

1. the requested id itself if it is cached and not yet used this epoch (HIT);
2. else the cached, unused id planned earliest in the oldest chunk that has one
   (SUBSTITUTION: the order changes, the requested id stays *pending* and comes
   back in a later pass, when its chunk is in); consuming the older chunk first
   lets it be released as soon as the next one is in (Algorithm 1's current
   chunk);
3. else, nothing cached is unused (the co-operative miss of Algorithm 1): a unit
   of the chunk being loaded is read now and admitted, and its earliest-planned
   unused member is served (MISS); with no chunk loading, the requested id (or,
   if it was used already, the earliest pending one) is read alone (a packed
   data set keeps its per-sample files).

Every request serves an id not used yet this epoch, and there are as many
requests as ids in the planned order, so each sample is trained exactly once per
epoch, whatever the cache holds. The paper looks up 10x a batch of unused
indices because a lookup is a remote call; here the policy knows what it holds,
so the lookahead is the whole pending list at no cost (more hits, same order
guarantee). How far each sample moved from its planned position is reported
(``summary()['displacement_mean']``).

Eviction is coordinated by chunk: a chunk is released once it has no unused
member left for this job and its successor is fully loaded; then the chunk
after is loaded. Several jobs on one shared cache follow the same chunk cycle
(it does not depend on the seed), each loading the units of a chunk in its own
seeded random order, so with pool lookups (``namespace=``) each unit is read
from storage about once across the jobs (§5.2). The cycle carries on across
epochs: an epoch starts with whatever two chunks are in.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from hotset.engine.capabilities import Capabilities
from hotset.engine.packages import Background, Load
from hotset.engine.units import UnitLayout
from hotset.errors import HotsetError
from hotset.policies.base import Budget, Decision, EvictionGroups, IntArray, Outcome, Policy
from hotset.policies.quiver_chunks import StripedChunks

_SALT = 0x9017


class Quiver(Policy):
    """Substitutable hits over two striped chunks at a time; see the module docstring."""

    name: ClassVar[str] = "quiver"
    capabilities: ClassVar[Capabilities] = Capabilities(
        substitutes=True, loads=True, evicts_in_concert=True
    )

    def __init__(
        self,
        budget: Budget,
        *,
        seed: int = 0,
        batch_size: int = 128,
        probe: int = 0,
        evict_after_s: float = 30.0,
    ) -> None:
        super().__init__(budget, seed=seed)
        if batch_size < 1:
            raise HotsetError(f"quiver: batch_size must be >= 1, got {batch_size}")
        if isinstance(probe, bool) or not isinstance(probe, int) or probe < 0:
            raise HotsetError(f"quiver: probe must be a number of batches >= 0, got {probe!r}")
        if isinstance(evict_after_s, bool) or not isinstance(evict_after_s, int | float):
            raise HotsetError(f"quiver: evict_after_s must be seconds > 0, got {evict_after_s!r}")
        if not evict_after_s > 0:
            raise HotsetError(f"quiver: evict_after_s must be seconds > 0, got {evict_after_s!r}")
        self.batch_size = int(batch_size)
        #: in a cache shared by jobs, a released chunk is evicted at the latest this long
        #: after the first job released it, even if a slower job still uses it (§5.1)
        self.evict_after_s = float(evict_after_s)
        #: the job's first ``probe`` batches are planned as if the cache rejected every
        #: lookup (§5.3): each request read from storage, nothing cached, so a driver
        #: can time mini-batches without the cache and then with it
        self.probe = int(probe)
        self.batches_done = 0
        self.chunks: StripedChunks | None = None
        self._resident: set[int] = set()
        #: chunks in the cache, oldest first: [chunk, cycle number] (at most two)
        self._cycle: list[int] = []  # chunk of each cycle step in the cache
        self._steps: list[int] = []  # their cycle numbers (seed the load order)
        self._queue: list[int] = []  # load units of the newest chunk not yet read
        self._next_step = 0
        # the epoch: planned position of each id, used flags, unused residents by position
        self._pos: IntArray = np.zeros(0, dtype=np.int64)
        self._used = bytearray()
        #: per chunk, its unused residents by planned position (lazy: stale entries skipped)
        self._heaps: dict[int, list[tuple[int, int]]] = {}
        self._order: list[int] = []
        self._head = 0
        self._at = 0
        self._planned = False
        #: per chunk, its resident members planned and unused this epoch
        self._unused: list[int] = []
        # what the report says
        self.loaded_units = 0
        self.loaded_bytes = 0
        self.released_chunks = 0
        self.cooperative_reads = 0
        self.displacement_sum = 0
        self.displacement_max = 0
        self.served_count = 0

    # -- layout and epochs ------------------------------------------------------------
    def attach_layout(self, layout: UnitLayout | None) -> None:
        super().attach_layout(layout)
        self.chunks = None  # sized lazily: the number of ids is known at the first epoch

    def _chunks(self, n: int) -> StripedChunks:
        if self.chunks is None:
            self.chunks = StripedChunks(self.budget, self.layout, n)
        return self.chunks

    def _n(self, planned: IntArray | None) -> int:
        if self.layout is not None:
            return len(self.layout.chunk_of)
        if self.budget.sizes is not None:
            return len(self.budget.sizes)
        if planned is None or not len(planned):
            raise HotsetError("quiver: needs sizes, a layout or a planned order to size its chunks")
        return int(np.max(planned)) + 1

    def begin_epoch(self, epoch: int, planned: IntArray | None = None) -> None:
        super().begin_epoch(epoch, planned)
        n = self._n(planned)
        chunks = self._chunks(n)
        self._pos = np.full(n, -1, dtype=np.int64)
        self._used = bytearray(n)
        self._at = 0
        self._head = 0
        self._planned = planned is not None
        self._order = [] if planned is None else np.asarray(planned, dtype=np.int64).tolist()
        if planned is not None and len(planned):
            arr = np.asarray(planned, dtype=np.int64)
            # an id planned twice keeps its first position (each use serves one id)
            first = np.unique(arr, return_index=True)
            self._pos[first[0]] = first[1]
        pos = self._pos
        self._heaps = {}
        self._unused = [0] * chunks.k
        for s in sorted(self._resident):
            if pos[s] >= 0:
                c = self._chunk_of(s)
                self._heaps.setdefault(c, []).append((int(pos[s]), s))
                self._unused[c] += 1
        for heap in self._heaps.values():
            heapq.heapify(heap)
        if not self._cycle:
            self._start_next(chunks)

    # -- the chunk cycle ----------------------------------------------------------------
    def _start_next(self, chunks: StripedChunks) -> None:
        """Begin loading the next chunk of the cycle, its units in this job's seeded order."""
        step = self._next_step
        self._next_step += 1
        chunk = step % chunks.k
        units = chunks.units_of[chunk]
        order = np.random.default_rng([self.seed, _SALT, step]).permutation(len(units))
        self._cycle.append(chunk)
        self._steps.append(step)
        self._queue = [units[i] for i in order.tolist()]

    def _chunk_of(self, sid: int) -> int:
        assert self.chunks is not None
        return int(self.chunks.chunk_of_unit[self.chunks.load_of[sid]])

    def _counts(self, sid: int) -> bool:
        """Whether ``sid`` is planned this epoch and not used yet (a resident one can serve)."""
        return len(self._pos) > sid and self._pos[sid] >= 0 and not self._used[sid]

    def background(self) -> Background:
        """Release a consumed chunk whose successor is in; load the next chunk's share.

        The share keeps the next chunk on pace to be in before the consumed one
        runs out (its unused members over the batch size, in batches), and keeps
        at least two batches of unused samples cached at any time.
        """
        chunks = self.chunks
        self.batches_done += 1
        if chunks is None or self.probing_next(0):
            return Background()
        evicted: list[int] = []
        loads: list[Load] = []
        ahead = 2 * self.batch_size
        for _ in range(2):  # a chunk consumed while its successor loaded goes at once
            evicted += self._advance(chunks)
            pace = 0
            if len(self._cycle) == 2 and self._queue:
                batches_left = max(1, self._unused[self._cycle[0]] // self.batch_size)
                pace = math.ceil(len(self._queue) / batches_left)
            done = len(loads)
            while self._queue and (len(loads) - done < pace or sum(self._unused) < ahead):
                load = self._load(chunks, self._queue[0])
                if load is None:
                    break
                self._queue.pop(0)
                loads.append(load)
            if sum(self._unused) >= ahead or self._unused[self._cycle[0]] or self._queue:
                break
            if self._at >= len(self._order):
                break  # the epoch is over: the next begins with what is in, no churn now
        return Background(loads=tuple(loads), evicted=tuple(evicted))

    def probing_next(self, ahead: int = 0) -> bool:
        """Whether batch ``batches_done + ahead`` of the job is a probe batch (no cache)."""
        return self.batches_done + ahead < self.probe

    def _advance(self, chunks: StripedChunks) -> list[int]:
        """Release the older chunk once consumed (if its successor is in or cannot load
        beside it), and start loading the next one once only one is left; the evicted ids.
        """
        evicted: list[int] = []
        consumed = len(self._cycle) == 2 and not self._unused[self._cycle[0]]
        if consumed and (not self._queue or not self._fits(chunks, self._queue[0])):
            evicted = self._release(chunks, self._cycle[0])
        if len(self._cycle) == 1 and not self._queue and chunks.k > 1:
            self._start_next(chunks)
        return evicted

    def _fits(self, chunks: StripedChunks, u: int) -> bool:
        fresh = [s for s in chunks.members[u] if s not in self._resident]
        add_b = sum(self.budget.size_of(s) for s in fresh)
        return self.budget.fits(self.used_bytes + add_b, self.used_items + len(fresh))

    def _release(self, chunks: StripedChunks, chunk: int) -> list[int]:
        gone = [s for u in chunks.units_of[chunk] for s in chunks.members[u] if s in self._resident]
        for s in gone:
            self._evict(s)
        self._cycle.pop(0)
        self._steps.pop(0)
        self.released_chunks += 1
        return gone

    def _load(self, chunks: StripedChunks, u: int) -> Load | None:
        """Admit load unit ``u``'s members if they fit; None (nothing done) if not."""
        if not self._fits(chunks, u):
            return None
        fresh = [s for s in chunks.members[u] if s not in self._resident]
        for s in fresh:
            self._admit(s)
        self.loaded_units += 1
        self.loaded_bytes += chunks.unit_bytes[u]
        return Load(unit=chunks.read_unit(u), admitted=tuple(fresh))

    def _admit(self, sid: int) -> None:
        self._resident.add(sid)
        self.used_bytes += self.budget.size_of(sid)
        self.used_items += 1
        if self._counts(sid):
            c = self._chunk_of(sid)
            heapq.heappush(self._heaps.setdefault(c, []), (int(self._pos[sid]), sid))
            self._unused[c] += 1

    def _evict(self, sid: int) -> None:
        self._resident.discard(sid)
        self.used_bytes -= self.budget.size_of(sid)
        self.used_items -= 1
        if self._counts(sid):
            self._unused[self._chunk_of(sid)] -= 1

    # -- requests -----------------------------------------------------------------------
    def access(self, sid: int) -> Decision:
        sid = int(sid)
        if sid < 0 or sid >= len(self._pos):
            raise HotsetError(f"quiver: sample id {sid} outside 0..{len(self._pos) - 1}")
        at = self._at
        self._at += 1
        if not self._planned:
            return self._unplanned(sid)
        if self.probing_next():
            target = sid if not self._used[sid] else self._earliest_unused()
            target = sid if target is None else target
            return self._serve(sid, Outcome.MISS, target, at)  # read alone, as without hotset
        if not self._used[sid] and sid in self._resident:
            return self._serve(sid, Outcome.HIT, sid, at)
        used, resident = self._used, self._resident
        for c in self._cycle:  # the oldest chunk first, so that it is consumed and released
            heap = self._heaps.get(c)
            while heap and (used[heap[0][1]] or heap[0][1] not in resident):
                heapq.heappop(heap)
            if heap:
                return self._serve(sid, Outcome.SUBSTITUTION, heap[0][1], at)
        return self._cooperative_miss(sid, at)

    def _unplanned(self, sid: int) -> Decision:
        """No planned order (a replayed trace): no substitution, hits where cached."""
        outcome = Outcome.HIT if sid in self._resident else Outcome.MISS
        return Decision(sid, outcome, sid)

    def _serve(self, requested: int, outcome: Outcome, served: int, at: int, **kw: Any) -> Decision:
        if served in self._resident and self._counts(served):
            self._unused[self._chunk_of(served)] -= 1
        self._used[served] = 1
        pos = int(self._pos[served])
        if pos >= 0:
            moved = abs(pos - at)
            self.displacement_sum += moved
            self.displacement_max = max(self.displacement_max, moved)
        self.served_count += 1
        return Decision(requested, outcome, served, **kw)

    def _earliest_unused(self) -> int | None:
        order, used = self._order, self._used
        while self._head < len(order) and used[order[self._head]]:
            self._head += 1
        return order[self._head] if self._head < len(order) else None

    def _cooperative_miss(self, sid: int, at: int) -> Decision:
        """Nothing cached is unused: read a unit of the loading chunk, or the id itself.

        A consumed chunk is released first (as after a batch), so the miss reads
        from the chunk the cycle loads next instead of a unit nobody will reuse.
        """
        chunks = self.chunks
        assert chunks is not None
        gone = tuple(self._advance(chunks))
        pos, used = self._pos, self._used
        for i, u in enumerate(self._queue):
            mine = [s for s in chunks.members[u] if pos[s] >= 0 and not used[s]]
            if not mine:
                continue
            if not self._fits(chunks, u):
                break
            fresh = [s for s in chunks.members[u] if s not in self._resident]
            self._queue.pop(i)
            served = min(mine, key=lambda s: int(pos[s]))
            for s in fresh:
                self._admit(s)
            self.loaded_units += 1
            self.loaded_bytes += chunks.unit_bytes[u]
            self.cooperative_reads += 1
            return self._serve(
                sid,
                Outcome.MISS,
                served,
                at,
                admitted=served in fresh,
                evicted=gone,
                unit=chunks.read_unit(u),
                also_admitted=tuple(s for s in fresh if s != served),
            )
        target = sid if not used[sid] else self._earliest_unused()
        if target is None:  # every planned id used (an id planned twice): serve it again
            target = sid
        # read alone: its unit's other members would not be admitted (their chunk is not due)
        return self._serve(sid, Outcome.MISS, target, at, evicted=gone)

    # -- state --------------------------------------------------------------------------
    def __contains__(self, sid: object) -> bool:
        return sid in self._resident

    def resident(self) -> frozenset[int]:
        return frozenset(self._resident)

    def eviction_groups(self) -> EvictionGroups | None:
        """Each id's chunk: jobs sharing a cache evict a chunk once all have released it."""
        chunks = self._chunks(self._n(None))
        groups = chunks.chunk_of_unit[chunks.load_of]
        return EvictionGroups(np.asarray(groups, dtype=np.int64), self.evict_after_s)

    def summary(self) -> dict[str, Any]:
        chunks = self.chunks
        return {
            "chunks": 0 if chunks is None else chunks.k,
            "chunk_bytes_max": 0 if chunks is None else max(chunks.chunk_bytes),
            "loaded_units": self.loaded_units,
            "loaded_bytes": self.loaded_bytes,
            "cooperative_reads": self.cooperative_reads,
            "released_chunks": self.released_chunks,
            "displacement_mean": self.displacement_sum / max(1, self.served_count),
            "displacement_max": self.displacement_max,
            "probe_batches": min(self.probe, self.batches_done),
        }

    def state_dict(self) -> dict[str, Any]:
        return {
            "resident": sorted(self._resident),
            "cycle": list(self._cycle),
            "steps": list(self._steps),
            "queue": list(self._queue),
            "next_step": self._next_step,
            "batches_done": self.batches_done,
            "counters": [
                self.loaded_units,
                self.loaded_bytes,
                self.released_chunks,
                self.cooperative_reads,
                self.displacement_sum,
                self.displacement_max,
                self.served_count,
            ],
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        for key in ("resident", "cycle", "steps", "queue", "next_step", "counters"):
            if key not in state:
                raise HotsetError(f"quiver state: missing {key!r}")
        self._resident = set()
        self.used_bytes = self.used_items = 0
        for s in state["resident"]:
            self._resident.add(int(s))
            self.used_bytes += self.budget.size_of(int(s))
            self.used_items += 1
        self._cycle = [int(c) for c in state["cycle"]]
        self._steps = [int(c) for c in state["steps"]]
        self._queue = [int(u) for u in state["queue"]]
        self._next_step = int(state["next_step"])
        self.batches_done = int(state.get("batches_done", 0))
        (
            self.loaded_units,
            self.loaded_bytes,
            self.released_chunks,
            self.cooperative_reads,
            self.displacement_sum,
            self.displacement_max,
            self.served_count,
        ) = (int(v) for v in state["counters"])
