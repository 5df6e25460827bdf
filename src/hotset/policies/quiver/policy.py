"""Quiver (FAST'20 §4.7, §5.1, Algorithm 1): substitutable hits over double-buffered chunks.

The cache holds two striped chunks of the data set (:mod:`hotset.policies.quiver.chunks`):
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
unused planned ids, :mod:`hotset.policies.quiver.window`). How far each sample moved from its planned position is reported
(``summary()['displacement_mean']``).

A job alone gets a fresh order every epoch: its chunks are not fixed stripes but
dealt afresh a round at a time (one unit of every stretch of the data set to each
chunk, as a stripe takes them, which chunk drawn anew;
:class:`~hotset.policies.quiver.chunks.ChunkCycle`), a round being
dealt as an epoch's last chunk is consumed. Only what the cache holds then is
served first whatever the order -- the chunk consumed last in one epoch comes first
in the next -- and each unit is still read once an epoch. ``fresh_order=false``
keeps the paper's fixed stripes; jobs sharing a cache keep them too, since one cycle
of fixed chunks is what lets them share the loads.

Eviction is coordinated by chunk: a chunk is released once it has no unused
member left for this job and its successor is fully loaded; then the chunk
after is loaded. Several jobs on one shared cache follow the same chunk cycle
(it does not depend on the seed), each loading the units of a chunk from its own
place in one seeded order, so with pool lookups (``namespace=``) most units are
read from storage once across the jobs (§5.2), and a chunk leaves a shared cache
once every job has released it (:mod:`hotset.coordination.chunk_refs`). A job
started after the others joins the cycle at the chunk they load now (Algorithm
1's ``getCurrentChunk``): where it starts is an input, :meth:`Quiver.join_cycle`,
given by the loader from the namespace before the first epoch and saved with the
state (:mod:`hotset.coordination.shared_cycle`). The cycle carries on across
epochs: an epoch starts with whatever two chunks are in.

Benefit-aware placement (§5.3) is open loop by default: ``probe=N`` plans the
first N batches without the cache and nothing else follows. ``placement=True``
closes it (:mod:`hotset.policies.quiver.loop`): the loader times the probe's
windows, publishes the job's record on its namespace's board and, before each
later epoch, gives the policy every job's record (:meth:`Quiver.apply_board`, an
input saved with the state); a job that gains less than ``min_benefit`` then
plans every request as a read of the id asked for and holds nothing, and one
whose data set gets ``chunks`` is capped to two chunks.

The class composes one collaborator per job: :class:`~hotset.policies.quiver.holdings.Holdings`
(the ids held and their bytes), :class:`~hotset.policies.quiver.cycle.JobCycle`
(the chunk cycle and where it joined the shared one),
:class:`~hotset.policies.quiver.loading.ChunkLoading` (release and load after each
batch), :class:`~hotset.policies.quiver.serving.Serving` (each request),
:class:`~hotset.policies.quiver.masking.FailureMask` (§4.8) and
:class:`~hotset.policies.quiver.loop.PlacementLoop` (probes and §5.3's switch).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from hotset.engine.arrays import IntArray
from hotset.engine.budget import Budget
from hotset.engine.capabilities import Capabilities
from hotset.engine.outcome import Decision
from hotset.engine.packages import Background
from hotset.engine.policy import Policy
from hotset.engine.roles import EvictionGroups
from hotset.engine.state_ids import state_ids
from hotset.engine.units import UnitLayout
from hotset.errors import HotsetError
from hotset.policies.quiver.chunks import ChunkCycle, StripedChunks
from hotset.policies.quiver.cycle import JobCycle
from hotset.policies.quiver.epoch import EpochView
from hotset.policies.quiver.holdings import Holdings
from hotset.policies.quiver.loading import ChunkLoading
from hotset.policies.quiver.loop import (
    PlacementLoop,
    PlacementState,
    check_open_loop,
    data_set_space,
)
from hotset.policies.quiver.masking import FailureMask
from hotset.policies.quiver.placement import DataSetSpace
from hotset.policies.quiver.serving import Serving

#: what summary() and the state count, in this order: (the collaborator, its counter)
_COUNTERS = (
    ("loading", "loaded_units"),
    ("loading", "loaded_bytes"),
    ("loading", "released_chunks"),
    ("serving", "cooperative_reads"),
    ("serving", "displacement_sum"),
    ("serving", "displacement_max"),
    ("serving", "served_count"),
)


def _check_options(
    batch_size: int, probe: int, evict_after_s: float, lookahead: int | None, mask_failures: bool
) -> None:
    """Refuse a bad option, naming it and its value."""
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
        fresh_order: bool = True,
    ) -> None:
        #: what the job holds (before Policy's books, which are its books)
        self.holdings = Holdings(budget)
        super().__init__(budget, seed=seed)
        _check_options(batch_size, probe, evict_after_s, lookahead, mask_failures)
        self.batch_size = int(batch_size)
        #: §5.3 closed: the namespace's probe board decides this job's caching at each
        #: epoch's start (quiver.loop.PlacementState; None: open loop, as before)
        check_open_loop(placement, reprobe_epochs, probe_on=placement)
        state = (
            PlacementState(probe=probe, min_benefit=min_benefit, reprobe_epochs=reprobe_epochs)
            if placement
            else None
        )
        #: the job's first ``probe`` batches are planned as if the cache rejected every
        #: lookup (§5.3): each request read from storage, nothing cached, so a driver
        #: can time mini-batches without the cache and then with it
        self.probe = int(probe)
        self.placement = PlacementLoop(probe=self.probe, state=state)
        #: route around cache entries the driver reports lost (§4.8): see cache_lost()
        self.mask_failures = mask_failures
        self.mask = FailureMask(enabled=mask_failures)
        #: substitutes come from the next ``lookahead`` batches of unused planned ids
        #: (Algorithm 1 looks up 10 x a batch); None: from every pending id
        self.lookahead = lookahead
        #: in a cache shared by jobs, a released chunk is evicted at the latest this long
        #: after the first job released it, even if a slower job still uses it (§5.1)
        self.evict_after_s = float(evict_after_s)
        self.batches_done = 0
        #: the job's batch number at the current epoch's start
        self._epoch_first = 0
        if not isinstance(fresh_order, bool):
            raise HotsetError(f"quiver: fresh_order must be True or False, got {fresh_order!r}")
        #: a job alone deals the chunks' units afresh at each epoch's start (see begin_epoch)
        self.fresh_order = fresh_order
        self.cycle = JobCycle()  # sized at the first epoch (n known then)
        self.loading = ChunkLoading(self.holdings, batch_size=self.batch_size)
        self.serving = Serving(self.holdings, self.loading)

    # -- the books the engine reads are the holdings' ------------------------------------
    @property
    def used_bytes(self) -> int:
        return self.holdings.used_bytes

    @used_bytes.setter
    def used_bytes(self, value: int) -> None:
        self.holdings.used_bytes = value

    @property
    def used_items(self) -> int:
        return self.holdings.used_items

    @used_items.setter
    def used_items(self, value: int) -> None:
        self.holdings.used_items = value

    @property
    def joined(self) -> int | None:
        """The step of the shared chunk cycle this job joined at (None: never asked)."""
        return self.cycle.joined

    # -- sizing -------------------------------------------------------------------------
    def attach_layout(self, layout: UnitLayout | None) -> None:
        super().attach_layout(layout)
        self.cycle.forget()

    @property
    def chunks(self) -> StripedChunks | None:
        cycle = self.cycle.cycle
        return None if cycle is None else cycle.chunks

    def _cycle_for(self, planned: IntArray | None) -> ChunkCycle:
        budget = self.placement.cycle_budget(self.budget)
        return self.cycle.get(
            planned, layout=self.layout, budget=budget, seed=self.seed, fresh=self.fresh_order
        )

    def begin_epoch(self, epoch: int, planned: IntArray | None = None) -> None:
        super().begin_epoch(epoch, planned)
        self.mask.begin_epoch()
        self._epoch_first = self.batches_done
        if self.placement.state is not None:
            self.placement.state.begin_epoch(epoch, self.batches_done)
        cycle = self._cycle_for(planned)
        chunks = cycle.chunks
        window = None if self.lookahead is None else self.lookahead * self.batch_size
        view = EpochView(
            len(chunks.load_of),
            planned,
            chunk_of=chunks.chunk_of_id,
            k=chunks.k + 1,
            lookahead=window,
            also_on_time=cycle.fresh,
        )
        self.holdings.view = view
        view.add_residents(sorted(self.holdings.ids))
        if self.placement.caching_off:
            # nothing to load: the next epoch that caches joins the shared cycle afresh
            self.cycle.joined = None if not cycle.chunks_in else self.cycle.joined
            return
        if not cycle.chunks_in:
            cycle.start_next()

    # -- benefit-aware placement, closed (§5.3; hotset.policies.quiver.loop) ----------
    def wants_board(self) -> bool:
        """Whether a driver should publish this job's probe and give it the board."""
        return self.placement.state is not None

    def probe_window(self) -> tuple[str, int] | None:
        """The probe window the current epoch's first batches are: (``miss`` or ``hit``,
        how many batches); None: none (or no placement: the open loop's probe is timed
        by whoever reads ``batch_seconds``)."""
        return self.placement.window(self.epoch, self._epoch_first)

    def probe_record(
        self, job: str, dataset: str, batch_seconds: Sequence[float]
    ) -> dict[str, str | int | float] | None:
        """A board record from the times of the ``miss`` window then the ``hit`` one
        (``probe`` batches each); None when they are fewer."""
        return self.placement.record(job, dataset, batch_seconds, self._space)

    def _space(self) -> DataSetSpace:
        """The data set's bytes and its chunk's, as the job's budget cuts them."""
        n = len(self._cycle_for(None).chunks.chunk_of_id)
        return data_set_space(self.budget, self.layout, n)

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
        loop = self.placement.state
        if loop is None:
            raise HotsetError("quiver: apply_board() needs placement=true")
        if loop.apply(own, board, budget_bytes=budget_bytes, epoch=epoch):
            loop.drops += self.holdings.clear()
            self.cycle.forget()
            self.cycle.joined = None

    # -- the chunk cycle of a cache shared by jobs (Algorithm 1, getCurrentChunk) -------
    def awaits_join(self) -> bool:
        """True until the job has been told where the shared cycle is, and only before
        its cycle starts: a job joins once, as Algorithm 1 reads ``gChunkIndex`` once."""
        return self.cycle.awaits_join()

    def join_cycle(self, step: int | None) -> None:
        """Start the chunk cycle at ``step``, the step the other jobs of a shared cache
        load now (None: nothing is loaded, start at 0, as a job alone does).

        Steps count chunks from one origin for every job (chunk ``step mod K``), so a
        job that joins loads each chunk in the same seeded unit order as the jobs
        already there, from its own place in it, and finds their loads in the pool
        instead of reading the chunks they released before it started. The step is
        the policy's state from here on (saved with it): a resume does not ask again.
        """
        self.cycle.join(step)

    def cycle_step(self) -> int | None:
        """The step of the newest chunk this job loads (what a job joining now should
        join at); None before the cycle starts."""
        return self.cycle.step()

    # -- after each batch: release and load ---------------------------------------------
    def probing_next(self, ahead: int = 0) -> bool:
        """Whether batch ``batches_done + ahead`` of the job is a probe batch (no cache)."""
        return self.placement.probing(self.batches_done + ahead)

    def background(self) -> Background:
        """Release a consumed chunk whose successor is in; load the next chunk's share
        (:meth:`ChunkLoading.after_batch`), after what a reset or a loss dropped."""
        self.batches_done += 1
        cycle, view = self.cycle.cycle, self.holdings.view
        # what a placement reset dropped leaves the cache with the next plan, probing or not
        dropped = self.placement.take_drops()
        if cycle is None or view is None or self.probing_next() or self.placement.caching_off:
            return Background(evicted=tuple(dropped))
        # lost entries leave the cache's books too (a put of a reload is then not skipped)
        evicted = dropped + self.mask.take_lost(self.holdings)
        loads, released = self.loading.after_batch(cycle, view)
        return Background(loads=tuple(loads), evicted=tuple(evicted + released))

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
        self.mask.report(
            ids, unreachable=unreachable, cycle=self.cycle.cycle, holdings=self.holdings
        )

    # -- requests -----------------------------------------------------------------------
    def access(self, sid: int) -> Decision:
        uncached = self.probing_next() or self.placement.caching_off
        return self.serving.access(sid, self.cycle.cycle, uncached=uncached)

    # -- what it holds, says and saves --------------------------------------------------
    def __contains__(self, sid: object) -> bool:
        return sid in self.holdings

    def resident(self) -> frozenset[int]:
        return frozenset(self.holdings.ids)

    def eviction_groups(self) -> EvictionGroups | None:
        """Each id's chunk: jobs sharing a cache evict a chunk once all have released it."""
        chunks = self._cycle_for(None).chunks
        groups = np.asarray(chunks.chunk_of_id, dtype=np.int64)
        groups[groups == chunks.static] = -1  # the static set is never released
        return EvictionGroups(groups, self.evict_after_s)

    def summary(self) -> dict[str, Any]:
        chunks = self.chunks
        loading, serving = self.loading, self.serving
        return {
            "chunks": 0 if chunks is None else chunks.k,
            "chunk_bytes_max": 0 if chunks is None else max(chunks.chunk_bytes),
            "static_bytes": 0 if chunks is None else chunks.static_bytes,
            "loaded_units": loading.loaded_units,
            "loaded_bytes": loading.loaded_bytes,
            "cooperative_reads": serving.cooperative_reads,
            "released_chunks": loading.released_chunks,
            "displacement_mean": serving.displacement_sum / max(1, serving.served_count),
            "displacement_max": serving.displacement_max,
            "probe_batches": min(self.probe, self.batches_done),
            "joined_step": self.joined,
            "masked_losses": self.mask.masked_losses,
        } | self.placement.summary()

    def state_dict(self) -> dict[str, Any]:
        cycle = self.cycle.cycle
        state = {
            "resident": sorted(self.holdings.ids),
            "cycle": None if cycle is None else cycle.state(),
            "batches_done": self.batches_done,
            "counters": [getattr(getattr(self, o), c) for o, c in _COUNTERS],
            "joined": self.joined,
        }
        if self.placement.state is not None:  # the open loop's state stays as it was
            state["loop"] = self.placement.state.state()
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`. The plain fields are checked before anything
        changes: ``resident`` replaced by ``{}`` was taken for "nothing held" before, a
        float or negative id cut or wrapped to another id."""
        for key in ("resident", "cycle", "batches_done", "counters"):
            if key not in state:
                raise HotsetError(f"quiver state: missing {key!r}")
        sizes = self.budget.sizes
        resident = state_ids(
            state["resident"], None if sizes is None else len(sizes), "quiver state: resident"
        )
        counters = state["counters"]
        if not isinstance(counters, list | tuple | np.ndarray) or len(counters) != len(_COUNTERS):
            raise HotsetError(
                f"quiver state: counters must be a list of {len(_COUNTERS)} numbers, got "
                f"{counters!r:.60}"
            )
        named = [
            (f"counters[{i}] ({c})", v)
            for i, ((_, c), v) in enumerate(zip(_COUNTERS, counters, strict=True))
        ]
        for field, value in [("batches_done", state["batches_done"]), *named]:
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
                raise HotsetError(
                    f"quiver state: {field} must be a non-negative integer, got {value!r:.60}"
                )
        joined = state.get("joined", 0)  # a state saved before joining existed started at 0
        self.cycle.joined = None if joined is None else int(joined)
        loop = self.placement.state
        if loop is not None:  # before the cycle: its chunks are cut within the cap
            if "loop" not in state:
                raise HotsetError(
                    "quiver state: saved without placement=true, loaded with it: "
                    "resume with the options of the run that saved it"
                )
            loop.load_state(state["loop"])
            self.cycle.forget()
        self.holdings.restore(resident.tolist())
        if state["cycle"] is not None:
            self._cycle_for(None).load_state(state["cycle"])
        self.batches_done = int(state["batches_done"])
        for (owner, counter), value in zip(_COUNTERS, state["counters"], strict=True):
            setattr(getattr(self, owner), counter, int(value))
