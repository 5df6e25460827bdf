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
so by default the lookahead is the whole pending list at no cost (more hits, same
order guarantee); ``lookahead=10`` is the paper's window (10 batches of the next
unused planned ids, :mod:`hotset.policies.quiver_window`). How far each sample moved from its planned position is reported
(``summary()['displacement_mean']``).

Eviction is coordinated by chunk: a chunk is released once it has no unused
member left for this job and its successor is fully loaded; then the chunk
after is loaded. Several jobs on one shared cache follow the same chunk cycle
(it does not depend on the seed), each loading the units of a chunk from its own
place in one seeded order, so with pool lookups (``namespace=``) most units are
read from storage once across the jobs (§5.2), and a chunk leaves a shared cache
once every job has released it (:mod:`hotset.cachestore.chunk_refs`). A job
started after the others joins the cycle at the chunk they load now (Algorithm
1's ``getCurrentChunk``): where it starts is an input, :meth:`Quiver.join_cycle`,
given by the loader from the namespace before the first epoch and saved with the
state (:mod:`hotset.cachestore.shared_cycle`). The cycle carries on across
epochs: an epoch starts with whatever two chunks are in.

Benefit-aware placement (§5.3) is open loop by default: ``probe=N`` plans the
first N batches without the cache and nothing else follows. ``placement=True``
closes it (:mod:`hotset.policies.quiver_loop`): the loader times the probe's
windows, publishes the job's record on its namespace's board and, before each
later epoch, gives the policy every job's record (:meth:`Quiver.apply_board`, an
input saved with the state); a job that gains less than ``min_benefit`` then
plans every request as a read of the id asked for and holds nothing, and one
whose data set gets ``chunks`` is capped to two chunks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np

from hotset.engine.arrays import IntArray
from hotset.engine.budget import Budget
from hotset.engine.capabilities import Capabilities
from hotset.engine.outcome import Decision, Outcome
from hotset.engine.packages import Background, Load
from hotset.engine.policy import EvictionGroups, Policy
from hotset.engine.units import UnitLayout
from hotset.errors import HotsetError
from hotset.policies.quiver_chunks import ChunkCycle, StripedChunks
from hotset.policies.quiver_epoch import EpochView
from hotset.policies.quiver_loop import PlacementState, check_open_loop
from hotset.policies.quiver_placement import DataSetSpace, probe_result, record_of

#: what summary() and the state count, in this order
_COUNTERS = (
    "loaded_units",
    "loaded_bytes",
    "released_chunks",
    "cooperative_reads",
    "displacement_sum",
    "displacement_max",
    "served_count",
)


class Quiver(Policy):
    """Substitutable hits over two striped chunks at a time; see the module docstring."""

    name: ClassVar[str] = "quiver"
    capabilities: ClassVar[Capabilities] = Capabilities(
        substitutes=True, loads=True, evicts_in_concert=True, joins_cycle=True
    )

    def __init__(
        self,
        budget: Budget,
        *,
        seed: int = 0,
        batch_size: int = 128,
        probe: int = 0,
        evict_after_s: float = 30.0,
        lookahead: int | None = None,
        mask_failures: bool = False,
        placement: bool = False,
        min_benefit: float = 1.1,
        reprobe_epochs: int = 0,
    ) -> None:
        super().__init__(budget, seed=seed)
        if batch_size < 1:
            raise HotsetError(f"quiver: batch_size must be >= 1, got {batch_size}")
        if isinstance(probe, bool) or not isinstance(probe, int) or probe < 0:
            raise HotsetError(f"quiver: probe must be a number of batches >= 0, got {probe!r}")
        bad_time = isinstance(evict_after_s, bool) or not isinstance(evict_after_s, int | float)
        if bad_time or not evict_after_s > 0:
            raise HotsetError(f"quiver: evict_after_s must be seconds > 0, got {evict_after_s!r}")
        bad_look = isinstance(lookahead, bool) or not isinstance(lookahead, int | None)
        if bad_look or (lookahead is not None and lookahead < 1):
            raise HotsetError(
                f"quiver: lookahead must be a number of batches >= 1 (the paper's: 10) or "
                f"None (every pending id), got {lookahead!r}"
            )
        if not isinstance(mask_failures, bool):
            raise HotsetError(f"quiver: mask_failures must be True or False, got {mask_failures!r}")
        self.batch_size = int(batch_size)
        #: §5.3 closed: the namespace's probe board decides this job's caching at each
        #: epoch's start (quiver_loop.PlacementState; None: open loop, as before)
        check_open_loop(placement, reprobe_epochs, probe_on=placement)
        self.loop = (
            PlacementState(probe=probe, min_benefit=min_benefit, reprobe_epochs=reprobe_epochs)
            if placement
            else None
        )
        #: route around cache entries the driver reports lost (§4.8): see cache_lost()
        self.mask_failures = mask_failures
        #: ids dropped as lost, whose cache deletes the next background() plans
        self._lost: list[int] = []
        #: units read back this epoch after a loss: one lost again (a put refused in a
        #: full shared namespace) is not read back again, so a loss costs one unit read
        self._reloaded: set[int] = set()
        #: substitutes come from the next ``lookahead`` batches of unused planned ids
        #: (Algorithm 1 looks up 10 x a batch); None: from every pending id
        self.lookahead = lookahead
        #: the job's first ``probe`` batches are planned as if the cache rejected every
        #: lookup (§5.3): each request read from storage, nothing cached, so a driver
        #: can time mini-batches without the cache and then with it
        self.probe = int(probe)
        #: in a cache shared by jobs, a released chunk is evicted at the latest this long
        #: after the first job released it, even if a slower job still uses it (§5.1)
        self.evict_after_s = float(evict_after_s)
        self.batches_done = 0
        #: the job's batch number at the current epoch's start
        self._epoch_first = 0
        self._resident: set[int] = set()
        self._cycle: ChunkCycle | None = None  # sized at the first epoch (n known then)
        #: the step of the shared chunk cycle this job joined at (Algorithm 1's
        #: getCurrentChunk, read by the driver from a shared cache); None: never asked
        self.joined: int | None = None
        self._view: EpochView | None = None
        # what the report says (the names in _COUNTERS)
        self.loaded_units = self.loaded_bytes = self.released_chunks = 0
        self.cooperative_reads = self.served_count = 0
        self.masked_losses = 0
        self.displacement_sum = self.displacement_max = 0

    # -- sizing -------------------------------------------------------------------------
    def attach_layout(self, layout: UnitLayout | None) -> None:
        super().attach_layout(layout)
        self._cycle = None

    @property
    def chunks(self) -> StripedChunks | None:
        return None if self._cycle is None else self._cycle.chunks

    def _cycle_for(self, planned: IntArray | None) -> ChunkCycle:
        if self._cycle is None:
            if self.layout is not None:
                n = len(self.layout.chunk_of)
            elif self.budget.sizes is not None:
                n = len(self.budget.sizes)
            elif planned is not None and len(planned):
                n = int(np.max(planned)) + 1
            else:
                raise HotsetError("quiver: needs sizes, a layout or a planned order")
            chunks = StripedChunks(self._cycle_budget(), self.layout, n)
            self._cycle = ChunkCycle(chunks, seed=self.seed)
            self._cycle.next_step = self.joined or 0
        return self._cycle

    def begin_epoch(self, epoch: int, planned: IntArray | None = None) -> None:
        super().begin_epoch(epoch, planned)
        self._reloaded = set()
        self._epoch_first = self.batches_done
        if self.loop is not None:
            self.loop.begin_epoch(epoch, self.batches_done)
        cycle = self._cycle_for(planned)
        chunks = cycle.chunks
        window = None if self.lookahead is None else self.lookahead * self.batch_size
        self._view = EpochView(
            len(chunks.load_of),
            planned,
            chunk_of=chunks.chunk_of_id,
            k=chunks.k + 1,
            lookahead=window,
        )
        self._view.add_residents(sorted(self._resident))
        if self._caching_off():
            # nothing to load: the next epoch that caches joins the shared cycle afresh
            self.joined = None if not cycle.chunks_in else self.joined
            return
        if not cycle.chunks_in:
            cycle.start_next()

    # -- benefit-aware placement, closed (§5.3; hotset.policies.quiver_loop) ----------
    def _cycle_budget(self) -> Budget:
        """The budget chunks are cut in: the job's own, or two chunks' worth when the
        namespace's board gave its data set ``chunks`` (no static set beyond them)."""
        cap = None if self.loop is None else self.loop.cap_bytes
        if cap is None:
            return self.budget
        own = self.budget.capacity_bytes
        return replace(self.budget, capacity_bytes=cap if own is None else min(own, cap))

    def wants_board(self) -> bool:
        """Whether a driver should publish this job's probe and give it the board."""
        return self.loop is not None

    def probe_window(self) -> tuple[str, int] | None:
        """The probe window the current epoch's first batches are: (``miss`` or ``hit``,
        how many batches); None: none (or no placement: the open loop's probe is timed
        by whoever reads ``batch_seconds``)."""
        loop = self.loop
        if loop is None:
            return None
        which = loop.window(self.epoch, self._epoch_first)
        return None if which is None else (which, loop.probe)

    def probe_record(
        self, job: str, dataset: str, batch_seconds: Sequence[float]
    ) -> dict[str, str | int | float] | None:
        """A board record from the times of the ``miss`` window then the ``hit`` one
        (``probe`` batches each); None when they are fewer."""
        if self.loop is None or len(batch_seconds) < 2 * self.loop.probe:
            return None
        n = self.loop.probe
        probe = probe_result(job, dataset, batch_seconds[: 2 * n], probe=n)
        return record_of(probe, self._space())

    def _space(self) -> DataSetSpace:
        """The data set's bytes and its chunk's (§5.3: "a fixed size chunk ... or 10% of the
        data set"), as the job's budget cuts them, short of the whole data set: a job whose
        budget holds it all cycles one chunk, which is no price for two chunks."""
        n = len(self._cycle_for(None).chunks.chunk_of_id)
        sizes = self.budget.sizes
        total = n if sizes is None else int(np.asarray(sizes[:n]).sum())
        own = self.budget.capacity_bytes
        short = max(1, total - 1) if own is None else min(own, max(1, total - 1))
        chunks = StripedChunks(replace(self.budget, capacity_bytes=short), self.layout, n)
        return DataSetSpace(total, max(chunks.chunk_bytes))

    def apply_board(
        self,
        own: Mapping[str, object] | None,
        board: Sequence[Mapping[str, object]],
        *,
        budget_bytes: int,
        epoch: int,
    ) -> None:
        """Apply the namespace's probe board before ``epoch`` begins (an input, recorded;
        ``own`` None: the job's record as last applied, as after a resume).

        Where the job's caching changes (turned off or on, or capped to two chunks),
        it starts its cache afresh: what it holds is evicted with the next plan, and
        its chunk cycle joins the shared one again when it next caches.
        """
        if self.loop is None:
            raise HotsetError("quiver: apply_board() needs placement=true")
        if self.loop.apply(own, board, budget_bytes=budget_bytes, epoch=epoch):
            self._restart_cache()

    def _restart_cache(self) -> None:
        assert self.loop is not None
        self.loop.drops += sorted(self._resident)
        self._resident = set()
        self.used_bytes = self.used_items = 0
        self._cycle, self._view, self.joined = None, None, None

    # -- the chunk cycle of a cache shared by jobs (Algorithm 1, getCurrentChunk) -------
    def awaits_join(self) -> bool:
        """True until the job has been told where the shared cycle is, and only before
        its cycle starts: a job joins once, as Algorithm 1 reads ``gChunkIndex`` once."""
        return self.joined is None and (self._cycle is None or not self._cycle.chunks_in)

    def join_cycle(self, step: int | None) -> None:
        """Start the chunk cycle at ``step``, the step the other jobs of a shared cache
        load now (None: nothing is loaded, start at 0, as a job alone does).

        Steps count chunks from one origin for every job (chunk ``step mod K``), so a
        job that joins loads each chunk in the same seeded unit order as the jobs
        already there, from its own place in it, and finds their loads in the pool
        instead of reading the chunks they released before it started. The step is
        the policy's state from here on (saved with it): a resume does not ask again.
        """
        if step is not None and (isinstance(step, bool) or not isinstance(step, int) or step < 0):
            raise HotsetError(f"quiver: a chunk cycle step must be an int >= 0, got {step!r}")
        if self._cycle is not None and self._cycle.chunks_in:
            raise HotsetError("quiver: join_cycle() after the chunk cycle started")
        self.joined = 0 if step is None else int(step)
        if self._cycle is not None:
            self._cycle.next_step = self.joined

    def cycle_step(self) -> int | None:
        """The step of the newest chunk this job loads (what a job joining now should
        join at); None before the cycle starts."""
        cycle = self._cycle
        return None if cycle is None or not cycle.chunks_in else cycle.next_step - 1

    # -- after each batch: release and load ---------------------------------------------
    def probing_next(self, ahead: int = 0) -> bool:
        """Whether batch ``batches_done + ahead`` of the job is a probe batch (no cache)."""
        if self.loop is not None:
            return self.loop.probing(self.batches_done + ahead)
        return self.batches_done + ahead < self.probe

    def _caching_off(self) -> bool:
        """The closed loop turned this job's caching off (§5.3): it admits nothing."""
        return self.loop is not None and self.loop.caching_off

    def background(self) -> Background:
        """Release a consumed chunk whose successor is in; load the next chunk's share.

        The share keeps the next chunk on pace to be in before the consumed one
        runs out (its unused members over the batch size, in batches), and keeps
        at least two batches of unused samples cached at any time.
        """
        self.batches_done += 1
        cycle, view = self._cycle, self._view
        # what a placement reset dropped leaves the cache with the next plan, probing or not
        dropped = self.loop.take_drops() if self.loop is not None else []
        if cycle is None or view is None or self.probing_next() or self._caching_off():
            return Background(evicted=tuple(dropped))
        # lost entries leave the cache's books too (a put of a reload is then not skipped)
        evicted: list[int] = dropped + [s for s in self._lost if s not in self._resident]
        self._lost = []
        loads: list[Load] = []
        ahead = 2 * self.batch_size
        for _ in range(2):  # a chunk consumed while its successor loaded goes at once
            evicted += self._advance(cycle, view)
            pace = 0
            if len(cycle.chunks_in) == 2 and cycle.queue:
                batches_left = max(1, view.unused[cycle.front] // self.batch_size)
                pace = math.ceil(len(cycle.queue) / batches_left)
            done = len(loads)
            while cycle.queue and (len(loads) - done < pace or sum(view.unused) < ahead):
                load = self._load(cycle.queue[0])
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
                load = self._load(cycle.static_queue[0])
                if load is None:
                    break
                cycle.static_queue.pop(0)
                loads.append(load)
        return Background(loads=tuple(loads), evicted=tuple(evicted))

    def _advance(self, cycle: ChunkCycle, view: EpochView) -> list[int]:
        """Release the older chunk once consumed (if its successor is in or cannot load
        beside it), and start loading the next one once only one is left; the evicted ids.
        """
        evicted: list[int] = []
        consumed = len(cycle.chunks_in) == 2 and not view.unused[cycle.front]
        if consumed and (not cycle.queue or self._fitting(cycle.queue[0]) is None):
            evicted = [s for s in cycle.drop_front() if s in self._resident]
            for s in evicted:
                self._evict(s)
            self.released_chunks += 1
        if len(cycle.chunks_in) == 1 and not cycle.queue and cycle.chunks.k > 1:
            cycle.start_next()
        return evicted

    def _fitting(self, u: int) -> list[int] | None:
        """Load unit ``u``'s members not cached yet, if they fit beside what is; else None."""
        assert self.chunks is not None
        fresh = [s for s in self.chunks.members[u] if s not in self._resident]
        add_b = sum(self.budget.size_of(s) for s in fresh)
        fits = self.budget.fits(self.used_bytes + add_b, self.used_items + len(fresh))
        return fresh if fits else None

    def _load(self, u: int) -> Load | None:
        """Admit load unit ``u``'s members if they fit; None (nothing done) if not."""
        assert self.chunks is not None
        fresh = self._take(u)
        return None if fresh is None else Load(self.chunks.read_unit(u), tuple(fresh))

    def _take(self, u: int) -> list[int] | None:
        """Admit load unit ``u``'s members not cached yet, if they fit; those ids, or None."""
        assert self.chunks is not None
        fresh = self._fitting(u)
        if fresh is None:
            return None
        self._admit(fresh)
        self.loaded_units += 1
        self.loaded_bytes += self.chunks.unit_bytes[u]
        return fresh

    def _admit(self, sids: list[int]) -> None:
        for sid in sids:
            self._resident.add(sid)
            self.used_bytes += self.budget.size_of(sid)
            self.used_items += 1
        assert self._view is not None
        self._view.add_residents(sids)

    def _evict(self, sid: int) -> None:
        self._resident.discard(sid)
        self.used_bytes -= self.budget.size_of(sid)
        self.used_items -= 1
        assert self._view is not None
        self._view.drop_resident(sid)

    # -- failure masking (§4.8) ----------------------------------------------------------
    def cache_lost(self, ids: Sequence[int], *, unreachable: bool = False) -> None:
        """Mask lost cache entries as the paper does: serve substitutes from what is left,
        re-populate in the background.

        Each lost id this job holds leaves the resident set (so no later request is
        planned as a hit on it: it is substituted by a cached id still there) and stays
        pending, with the other members of its load unit (written together, lost
        together), and a unit with a member still pending goes to the front of the
        loading queue (once an epoch), so the
        chunk cycle reads it back as a background load rather than one read per
        request on the critical path; until then a request for it is a co-operative
        miss on that unit. Without ``mask_failures`` the report is ignored and the
        driver serves each failed read from storage, in the batch.

        ``unreachable`` (the cache call itself failed: one server, down) is ignored:
        nothing is left to substitute from and nothing can be loaded back, and the
        driver's read of just the sample needed is the cheapest way to serve it.
        Dropping what the job holds there was measured to cost more: its pending ids
        then become co-operative misses, a whole unit read for each
        (``benchmarks/results/quiver-mask.json``).
        """
        cycle = self._cycle
        if not self.mask_failures or unreachable or cycle is None or self._view is None:
            return
        chunks = cycle.chunks
        # a unit's members are written together and go together (a flush, a lost node)
        units = {int(chunks.load_of[int(s)]) for s in ids}
        lost = sorted(s for u in units for s in chunks.members[u] if s in self._resident)
        requeue: dict[int, None] = {}  # the units this epoch still needs a member of
        for sid in lost:
            self._evict(sid)
            self._lost.append(sid)
            u = int(chunks.load_of[sid])
            if self._view.pending(sid) and u not in self._reloaded:
                requeue[u] = None
        self._reloaded.update(requeue)
        self.masked_losses += len(lost)
        static = [u for u in requeue if int(chunks.chunk_of_unit[u]) == chunks.static]
        loading = [u for u in requeue if int(chunks.chunk_of_unit[u]) in cycle.chunks_in]
        cycle.static_queue[:0] = [u for u in static if u not in cycle.static_queue]
        cycle.queue[:0] = [u for u in loading if u not in cycle.queue]

    # -- requests -----------------------------------------------------------------------
    def access(self, sid: int) -> Decision:
        view, cycle = self._view, self._cycle
        if view is None or cycle is None:
            raise HotsetError("quiver: begin_epoch() must come before the first access")
        sid = int(sid)
        if sid < 0 or sid >= len(view.pos):
            raise HotsetError(f"quiver: sample id {sid} outside 0..{len(view.pos) - 1}")
        view.at += 1
        if not view.planned:  # a replayed trace: no substitution, hits where cached
            return Decision(sid, Outcome.HIT if sid in self._resident else Outcome.MISS, sid)
        if self.probing_next() or self._caching_off():  # read alone, as without hotset
            target = sid if not view.used[sid] else view.earliest_pending()
            return self._serve(sid, Outcome.MISS, sid if target is None else target)
        if view.pending(sid) and sid in self._resident:
            return self._serve(sid, Outcome.HIT, sid)
        substitute = view.substitute(cycle.chunks_in, self._resident, also=cycle.chunks.static)
        if substitute is not None:  # the oldest chunk first: it is consumed and released
            return self._serve(sid, Outcome.SUBSTITUTION, substitute)
        return self._cooperative_miss(sid, cycle, view)

    def _serve(self, requested: int, outcome: Outcome, served: int, **kw: Any) -> Decision:
        assert self._view is not None
        moved = self._view.use(served, resident=served in self._resident)
        self.displacement_sum += moved
        self.displacement_max = max(self.displacement_max, moved)
        self.served_count += 1
        return Decision(requested, outcome, served, **kw)

    def _cooperative_miss(self, sid: int, cycle: ChunkCycle, view: EpochView) -> Decision:
        """Nothing cached is unused: read a unit of the loading chunk, or the id itself.

        A consumed chunk is released first (as after a batch), so the miss reads
        from the chunk the cycle loads next instead of a unit nobody will reuse.
        """
        chunks = cycle.chunks
        gone = tuple(self._advance(cycle, view))
        for queue in (cycle.queue, cycle.static_queue):
            for i, u in enumerate(queue):
                mine = [s for s in chunks.members[u] if view.pending(s)]
                if not mine:
                    continue
                fresh = self._take(u)
                if fresh is None:
                    break
                queue.pop(i)
                served = min(mine, key=lambda s: int(view.pos[s]))
                self.cooperative_reads += 1
                return self._serve(
                    sid,
                    Outcome.MISS,
                    served,
                    admitted=served in fresh,
                    evicted=gone,
                    unit=chunks.read_unit(u),
                    also_admitted=tuple(s for s in fresh if s != served),
                )
        target = sid if not view.used[sid] else view.earliest_pending()
        if target is None:  # every planned id used (an id planned twice): serve it again
            target = sid
        # read alone: its unit's other members would not be admitted (their chunk is not due)
        return self._serve(sid, Outcome.MISS, target, evicted=gone)

    # -- what it holds, says and saves --------------------------------------------------
    def __contains__(self, sid: object) -> bool:
        return sid in self._resident

    def resident(self) -> frozenset[int]:
        return frozenset(self._resident)

    def eviction_groups(self) -> EvictionGroups | None:
        """Each id's chunk: jobs sharing a cache evict a chunk once all have released it."""
        chunks = self._cycle_for(None).chunks
        groups = np.asarray(chunks.chunk_of_id, dtype=np.int64)
        groups[groups == chunks.static] = -1  # the static set is never released
        return EvictionGroups(groups, self.evict_after_s)

    def summary(self) -> dict[str, Any]:
        chunks = self.chunks
        return {
            "chunks": 0 if chunks is None else chunks.k,
            "chunk_bytes_max": 0 if chunks is None else max(chunks.chunk_bytes),
            "static_bytes": 0 if chunks is None else chunks.static_bytes,
            "loaded_units": self.loaded_units,
            "loaded_bytes": self.loaded_bytes,
            "cooperative_reads": self.cooperative_reads,
            "released_chunks": self.released_chunks,
            "displacement_mean": self.displacement_sum / max(1, self.served_count),
            "displacement_max": self.displacement_max,
            "probe_batches": min(self.probe, self.batches_done),
            "joined_step": self.joined,
            "masked_losses": self.masked_losses,
        } | ({} if self.loop is None else self.loop.summary())

    def state_dict(self) -> dict[str, Any]:
        state = {
            "resident": sorted(self._resident),
            "cycle": None if self._cycle is None else self._cycle.state(),
            "batches_done": self.batches_done,
            "counters": [getattr(self, c) for c in _COUNTERS],
            "joined": self.joined,
        }
        if self.loop is not None:  # the open loop's state stays as it was
            state["loop"] = self.loop.state()
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        for key in ("resident", "cycle", "batches_done", "counters"):
            if key not in state:
                raise HotsetError(f"quiver state: missing {key!r}")
        joined = state.get("joined", 0)  # a state saved before joining existed started at 0
        self.joined = None if joined is None else int(joined)
        if self.loop is not None:  # before the cycle: its chunks are cut within the cap
            if "loop" not in state:
                raise HotsetError(
                    "quiver state: saved without placement=true, loaded with it: "
                    "resume with the options of the run that saved it"
                )
            self.loop.load_state(state["loop"])
            self._cycle = None
        self._resident = {int(s) for s in state["resident"]}
        self.used_bytes = sum(self.budget.size_of(s) for s in self._resident)
        self.used_items = len(self._resident)
        if state["cycle"] is not None:
            self._cycle_for(None).load_state(state["cycle"])
        self.batches_done = int(state["batches_done"])
        for counter, value in zip(_COUNTERS, state["counters"], strict=True):
            setattr(self, counter, int(value))
